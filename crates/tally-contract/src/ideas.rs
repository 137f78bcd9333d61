//! Ideas (`docs/implementers.md#ideas`): what an implementer is asked to try, queued by a person
//! with `tally idea add`; and runs (`docs/implementers.md#runs`), one per launch of an
//! implementer on an idea. The [`IdeaStore`] trait is separate from [`crate::Store`] so that a
//! backend gains ideas without the campaign contract changing; the same rules hold (one
//! transaction per write, instants from the caller, `Ok(None)` for a missing lookup, writes
//! naming a missing campaign fail with `NoSuchCampaign`).

use tally_model::{CampaignId, CandidateId, UnixMillis};

use crate::error::StoreError;

/// Where an idea stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdeaState {
    /// Waiting for an implementer.
    Ready,
    /// Set aside (by hand, or after it failed to start twice); never launched.
    Parked,
    /// Its attempts are used up.
    Done,
}

impl IdeaState {
    /// The stored and printed name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ready => "ready",
            Self::Parked => "parked",
            Self::Done => "done",
        }
    }

    /// The state with this name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "ready" => Some(Self::Ready),
            "parked" => Some(Self::Parked),
            "done" => Some(Self::Done),
            _ => None,
        }
    }
}

/// A stored idea.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Idea {
    /// The campaign.
    pub campaign: CampaignId,
    /// Its number within the campaign, from 1.
    pub number: u32,
    /// One line.
    pub title: String,
    /// What to try, in the person's words (may be empty).
    pub text: String,
    /// Attempts allowed; `None`: the `[implementer] attempts` in force.
    pub attempts: Option<u32>,
    /// The candidate to start from; `None`: the head at launch.
    pub base: Option<CandidateId>,
    /// Where it stands.
    pub state: IdeaState,
    /// Why it is in that state (set when parked).
    pub reason: Option<String>,
    /// Who queued it.
    pub added_by: String,
    /// When it was queued.
    pub created: UnixMillis,
    /// When its state last changed.
    pub state_since: UnixMillis,
}

/// An idea to queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewIdea {
    /// One line, non-empty.
    pub title: String,
    /// What to try.
    pub text: String,
    /// Attempts allowed (≥ 1), or the configured default.
    pub attempts: Option<u32>,
    /// The candidate to start from (must exist), or the head at launch.
    pub base: Option<CandidateId>,
    /// Who queues it.
    pub added_by: String,
    /// Now.
    pub created: UnixMillis,
}

/// How an implementer run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunEnd {
    /// Exit 0 with at least one commit of its own.
    Finished,
    /// A non-zero exit or a signal, or HEAD left the base.
    Failed,
    /// Killed at the timeout.
    TimedOut,
    /// No commit and no unsaved work.
    NoCommits,
    /// Only unsaved work, captured as a recovered commit.
    Interrupted,
    /// The agent could not be started.
    NotStarted,
    /// Stopped by the user (Ctrl-C).
    Cancelled,
    /// Cut by the campaign's stop: the wrap-up file at once, SIGTERM `stop_grace` later.
    Stopped,
}

impl RunEnd {
    /// The stored and printed name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Finished => "finished",
            Self::Failed => "failed",
            Self::TimedOut => "timed_out",
            Self::NoCommits => "no_commits",
            Self::Interrupted => "interrupted",
            Self::NotStarted => "not_started",
            Self::Cancelled => "cancelled",
            Self::Stopped => "stopped",
        }
    }

    /// The end with this name.
    pub fn parse(s: &str) -> Option<Self> {
        [
            Self::Finished,
            Self::Failed,
            Self::TimedOut,
            Self::NoCommits,
            Self::Interrupted,
            Self::NotStarted,
            Self::Cancelled,
            Self::Stopped,
        ]
        .into_iter()
        .find(|e| e.as_str() == s)
    }

    /// Whether the run used one of its idea's attempts: not when no agent ran, nor when the
    /// user or the campaign's stop cut it (not the idea's fault).
    pub fn counts_as_attempt(self) -> bool {
        !matches!(self, Self::NotStarted | Self::Cancelled | Self::Stopped)
    }
}

/// One commit a run left, oldest first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunCommit {
    /// The full commit id.
    pub revision: String,
    /// The candidate it was queued as, if it was.
    pub candidate: Option<CandidateId>,
    /// What became of it (`queued`, `recovered: not measured`, ...).
    pub note: String,
}

/// A run to record as started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewRun {
    /// The idea it works on (must exist).
    pub idea: u32,
    /// The candidate its worktree starts at (must exist).
    pub base: CandidateId,
    /// The unique tag in its processes' environment.
    pub tag: String,
    /// Its directory (brief, logs, worktree).
    pub run_dir: String,
    /// Now.
    pub started: UnixMillis,
    /// When it is killed.
    pub deadline: UnixMillis,
}

/// How a run is settled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunSettlement {
    /// How it ended.
    pub end: RunEnd,
    /// The agent's exit code, when it exited.
    pub exit_code: Option<i32>,
    /// What went wrong (the stderr tail, "HEAD left the base", ...).
    pub error: Option<String>,
    /// Its commits, oldest first.
    pub commits: Vec<RunCommit>,
    /// Now.
    pub ended: UnixMillis,
}

/// A stored run.
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    /// The campaign.
    pub campaign: CampaignId,
    /// Its number within the campaign, from 1.
    pub number: u32,
    /// What was recorded when it started.
    pub started: NewRun,
    /// How it was settled; `None` while it runs.
    pub settled: Option<RunSettlement>,
    /// What it cost, once read (`None`: not read yet, or nothing was reported).
    pub usage: Option<RunUsage>,
}

/// The tokens and cost of one run (`docs/implementers.md#usage`). A `None` count or cost is
/// unknown, never zero.
#[derive(Clone, Debug, PartialEq)]
pub struct RunUsage {
    /// Input tokens not read from a cache.
    pub input: Option<u64>,
    /// Output tokens (reasoning included).
    pub output: Option<u64>,
    /// Input tokens read from a cache.
    pub cached: Option<u64>,
    /// USD; `None` when unknown.
    pub usd: Option<f64>,
    /// Where the numbers come from: a harness format (`claude`, `codex`, `gemini`, `aider`,
    /// `pi`), `file` (`$TALLY_USAGE_FILE`) or `manual` (`tally implementer usage`).
    pub source: String,
    /// How the USD was found: `reported` by the harness, `priced` from tokens and
    /// `[implementer.prices]`, `file`, `manual`; `None` when unknown.
    pub usd_source: Option<String>,
}

impl RunUsage {
    /// Input, output and cached tokens together, when any is known.
    pub fn tokens(&self) -> Option<u64> {
        match (self.input, self.output, self.cached) {
            (None, None, None) => None,
            (i, o, c) => Some(i.unwrap_or(0) + o.unwrap_or(0) + c.unwrap_or(0)),
        }
    }
}

/// A campaign store that also keeps ideas and implementer runs: what the implementer commands
/// work on. Any backend that implements both traits is one; [`crate::Store::with_ideas`] finds it
/// behind a `dyn Store`.
pub trait ImplementerStore: crate::Store + IdeaStore {}

impl<T: crate::Store + IdeaStore> ImplementerStore for T {}

/// Durable storage of ideas and implementer runs.
pub trait IdeaStore: Send + Sync {
    /// Queues an idea, `ready`, numbered after the campaign's last one.
    fn add_idea(&self, campaign: CampaignId, new: &NewIdea) -> Result<Idea, StoreError>;

    /// One idea.
    fn idea(&self, campaign: CampaignId, number: u32) -> Result<Option<Idea>, StoreError>;

    /// Every idea of a campaign, by number.
    fn list_ideas(&self, campaign: CampaignId) -> Result<Vec<Idea>, StoreError>;

    /// Sets an idea's state and reason, stamping `state_since = at`. `Ok(None)` when there is
    /// no such idea.
    fn set_idea_state(
        &self,
        campaign: CampaignId,
        number: u32,
        state: IdeaState,
        reason: Option<&str>,
        at: UnixMillis,
    ) -> Result<Option<Idea>, StoreError>;

    /// Records a run as started, numbered after the campaign's last one.
    fn start_run(&self, campaign: CampaignId, new: &NewRun) -> Result<Run, StoreError>;

    /// Settles a running run (`InvalidValue` when it is settled already or missing).
    fn settle_run(
        &self,
        campaign: CampaignId,
        number: u32,
        settlement: &RunSettlement,
    ) -> Result<Run, StoreError>;

    /// Appends `commits` to a settled run's commits (a merge queued after a later keep moved
    /// the head: `docs/implementers.md#head-moved`). `InvalidValue` when the run is missing or
    /// still running.
    fn append_run_commits(
        &self,
        campaign: CampaignId,
        number: u32,
        commits: &[RunCommit],
    ) -> Result<Run, StoreError>;

    /// Every run of a campaign, by number.
    fn list_runs(&self, campaign: CampaignId) -> Result<Vec<Run>, StoreError>;

    /// Records (or replaces) a run's usage. `Ok(None)` when there is no such run.
    fn set_run_usage(
        &self,
        campaign: CampaignId,
        number: u32,
        usage: &RunUsage,
    ) -> Result<Option<Run>, StoreError>;
}
