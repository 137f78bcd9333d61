//! One sample, as the engine asks for it and gets it back: the [`SampleRunner`] trait, the
//! request ([`SampleRequest`], [`EvaluateCommand`], [`CommitId`]) and the result ([`Attempt`],
//! [`LogFiles`], [`EvidenceFile`]), and the retry rule every runner shares.
//!
//! A *sample* is one attempt, or two when the first was killed by a signal from outside
//! (`docs/campaign.md#one-sample`); [`SampleRunner::run_sample`] applies that rule for every
//! implementation, fakes included, and hands each attempt to a callback the moment it ends so
//! the engine can commit it before the retry starts.
//!
//! Deliberately absent: how an attempt is made (git worktrees and process groups are
//! `tally-runner`'s; a cluster executor would submit a job), the store, the verdict, and pairing
//! candidate and bar samples (the engine decides what to run and records what comes back). The
//! API is synchronous and blocking.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use tally_model::{Held, Side, UnitValues};

use crate::cancel::CancelToken;
use crate::checks::{CheckOutcome, CheckRequest};
use crate::evidence::Evidence;
use crate::outcome::{Failure, Outcome};

/// A full commit id (lowercase hex: 40 digits for SHA-1 repositories, 64 for SHA-256 ones), as
/// printed by `git rev-parse`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CommitId(String);

impl CommitId {
    /// Accepts a full hex commit id (40 or 64 lowercase hex digits); `None` otherwise. It does not
    /// check that the commit exists (`tally_runner::Git::resolve_commit` does).
    pub fn parse(text: &str) -> Option<Self> {
        let hex = text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        (hex && (text.len() == 40 || text.len() == 64)).then(|| Self(text.to_owned()))
    }
    /// The hex text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for CommitId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The evaluate command of the campaign's current config.
#[derive(Debug, Clone, PartialEq)]
pub struct EvaluateCommand {
    /// The argv, run without a shell; must not be empty.
    pub argv: Vec<String>,
    /// `evaluate_timeout`: the wall-clock limit of one attempt.
    pub timeout: Duration,
    /// `link` entries: repo-relative, git-ignored paths offered in every checkout.
    pub links: Vec<PathBuf>,
}

/// What to measure.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleRequest {
    /// The evaluate command to run.
    pub command: EvaluateCommand,
    /// The revision to check out.
    pub revision: CommitId,
    /// The candidate's id, passed as `TALLY_CANDIDATE`.
    pub candidate: String,
    /// Which side this sample is for, passed as `TALLY_SIDE`.
    pub side: Side,
    /// The sample's index, passed as `TALLY_SAMPLE`.
    pub sample: u32,
    /// Metrics the sample must print to succeed (primary and guardrails; not watch metrics).
    pub required_metrics: Vec<String>,
    /// A directory unique to this evaluation where the logs go (created if missing); files are
    /// named `<side>-<sample>-a<attempt>.stdout.log` and `.stderr.log`.
    pub log_dir: PathBuf,
}

/// Where an attempt's output was captured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogFiles {
    /// Everything the command wrote on stdout.
    pub stdout: PathBuf,
    /// Everything it wrote on stderr.
    pub stderr: PathBuf,
}

/// One run of the evaluate command (a sample is one attempt, or two after an outside kill).
#[derive(Debug, Clone, PartialEq)]
pub struct Attempt {
    /// 1 for the first attempt, 2 for the retry.
    pub attempt: u32,
    /// How the process ended.
    pub outcome: Outcome,
    /// Wall time of the process, from spawn to the exit of its leader; zero when nothing ran.
    pub wall: Duration,
    /// Every metric printed (the last value of each name), kept even when the attempt failed.
    pub metrics: BTreeMap<String, f64>,
    /// Per-unit contributions from the units file, when it was written and checked out.
    pub units: Option<UnitValues>,
    /// Why the attempt failed; `None` on success.
    pub failure: Option<Failure>,
    /// The captured output; `None` when no process ran (a checkout failure) or for fakes.
    pub logs: Option<LogFiles>,
    /// True when this attempt was killed from outside and another attempt followed it.
    pub retried: bool,
    /// Processes of the attempt still alive after the kill-and-reap grace period (normally
    /// empty; non-empty means something is stuck, e.g. in the GPU driver).
    pub stray_pids: Vec<i32>,
    /// The evidence artifact the command wrote at `TALLY_EVIDENCE_FILE`, kept next to the logs:
    /// its path, and what it accounts for when the attempt succeeded (`None` when it wrote none).
    pub evidence: Option<EvidenceFile>,
    /// What the Slurm job of the attempt held (`docs/campaign.md#gpu-hours`); `None` for a
    /// local process.
    pub held: Option<Held>,
}

/// An evidence artifact an attempt handed over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvidenceFile {
    /// Where tally kept it.
    pub artifact: PathBuf,
    /// What it accounts for; `None` when the attempt failed (the file is kept, not read).
    pub accounted: Option<Evidence>,
}

impl Attempt {
    /// Whether it succeeded (its metrics may enter means).
    pub fn is_success(&self) -> bool {
        self.failure.is_none()
    }
    /// The one-sentence `error` the store records; `None` on success.
    pub fn error(&self) -> Option<String> {
        self.failure.as_ref().map(Failure::to_string)
    }
}

/// Runs samples. The engine takes one of these; tests pass a `tally_runner::ScriptedRunner`.
pub trait SampleRunner {
    /// Runs one attempt. Never fails as a call: every problem (checkout, spawn, timeout, ...) is
    /// an [`Attempt`] with a [`Failure`].
    fn run_attempt(&self, request: &SampleRequest, attempt: u32, cancel: &CancelToken) -> Attempt;

    /// Whether an attempt this runner started outlives a `tally run` killed outright and is
    /// adopted by the next one (`docs/team.md#adopting`): asked again for the same request and
    /// attempt (the same `log_dir`, side, sample and attempt number), the runner waits for
    /// what is already under way, or reads what already ended, instead of starting it again.
    /// Then the engine resumes the evaluation such a run left instead of abandoning it. The
    /// local runner's processes die with their checkout when the next run starts: `false`.
    fn adopts_attempts(&self) -> bool {
        false
    }

    /// Runs a sample: one attempt, and a second when the first was killed from outside
    /// ([`Outcome::killed_from_outside`]) and the token is not cancelled. `on_attempt` sees each
    /// attempt as soon as it ends (the first with `retried` already set when a retry follows).
    /// Returns every attempt, in order.
    fn run_sample(
        &self,
        request: &SampleRequest,
        cancel: &CancelToken,
        on_attempt: &mut dyn FnMut(&Attempt),
    ) -> Vec<Attempt> {
        let mut first = self.run_attempt(request, 1, cancel);
        if !first.outcome.killed_from_outside() || cancel.is_cancelled() {
            on_attempt(&first);
            return vec![first];
        }
        first.retried = true;
        on_attempt(&first);
        let second = self.run_attempt(request, 2, cancel);
        on_attempt(&second);
        vec![first, second]
    }

    /// Runs the `[checks]` commands in a checkout of the request's revision, in order, stopping
    /// at the first failure (`docs/campaign.md#checks`). A runner that cannot run commands fails
    /// them: a check is never passed by default.
    fn run_checks(&self, request: &CheckRequest, _cancel: &CancelToken) -> CheckOutcome {
        CheckOutcome::Failed {
            name: request
                .commands
                .first()
                .map_or_else(String::new, |c| c.name.clone()),
            why: "this runner cannot run check commands".into(),
        }
    }
}
