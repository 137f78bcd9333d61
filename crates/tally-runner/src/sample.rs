//! One sample, end to end: the [`SampleRunner`] trait the engine takes, the request and result
//! types, the retry rule, and [`WorktreeRunner`], the real implementation.
//!
//! An attempt is: check out the revision in a fresh worktree ([`Checkout`]), run the evaluate
//! command there in its own process group ([`crate::group`]), read the units file, keep the
//! evidence file next to the logs, classify ([`crate::outcome`]), remove the checkout, and
//! account the evidence ([`crate::evidence`]) when the attempt succeeded. A *sample* is one
//! attempt, or two when the first was killed by a signal from outside (`docs/campaign.md#one-sample`);
//! [`SampleRunner::run_sample`] applies that rule for every implementation, fakes included, and
//! hands each attempt to a callback the moment it ends so the engine can commit it before the
//! retry starts.
//!
//! Deliberately absent: the store, the verdict, pairing candidate and bar samples (the engine
//! decides what to run and records what comes back); the API is synchronous and blocking.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::RunnerError;
use crate::cancel::CancelToken;
use crate::evidence::{self, EVIDENCE_VAR, Evidence};
use crate::git::{CommitId, Git};
use crate::group::{End, GroupCommand, run_in_group};
use crate::outcome::{Failure, Finished, Outcome, classify};
use crate::units::Units;
use crate::worktree::{Checkout, UNITS_VAR, marker, prepare_worktree_root};

/// Which side of a paired evaluation a sample is for (`TALLY_SIDE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// The revision being judged.
    Candidate,
    /// The revision it is judged against.
    Bar,
}

impl Side {
    /// `candidate` or `bar`, as `TALLY_SIDE` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Candidate => "candidate",
            Self::Bar => "bar",
        }
    }
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
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
    pub units: Option<Units>,
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

/// Runs samples. The engine takes one of these; tests pass a
/// [`ScriptedRunner`](crate::ScriptedRunner).
pub trait SampleRunner {
    /// Runs one attempt. Never fails as a call: every problem (checkout, spawn, timeout, ...) is
    /// an [`Attempt`] with a [`Failure`].
    fn run_attempt(&self, request: &SampleRequest, attempt: u32, cancel: &CancelToken) -> Attempt;

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
}

/// The real runner: git worktrees under a campaign-owned root, process groups, timeouts.
#[derive(Debug, Clone)]
pub struct WorktreeRunner {
    git: Git,
    worktree_root: PathBuf,
}

impl WorktreeRunner {
    /// A runner for the repository `git`, making checkouts under `worktree_root` (created if
    /// missing; it must be outside the working tree, and owned by one campaign — see
    /// [`default_worktree_root`](crate::default_worktree_root)).
    pub fn new(git: Git, worktree_root: &Path) -> Result<Self, RunnerError> {
        let worktree_root = prepare_worktree_root(&git, worktree_root)?;
        Ok(Self { git, worktree_root })
    }

    /// The canonical worktree root.
    pub fn worktree_root(&self) -> &Path {
        &self.worktree_root
    }

    /// The repository.
    pub fn git(&self) -> &Git {
        &self.git
    }
}

impl SampleRunner for WorktreeRunner {
    fn run_attempt(&self, request: &SampleRequest, attempt: u32, cancel: &CancelToken) -> Attempt {
        let mut result = Attempt {
            attempt,
            outcome: Outcome::Cancelled,
            wall: Duration::ZERO,
            metrics: BTreeMap::new(),
            units: None,
            failure: None,
            logs: None,
            retried: false,
            stray_pids: Vec::new(),
            evidence: None,
        };
        let command = &request.command;
        let finish =
            |mut result: Attempt, stderr: &str, units_file: Option<Result<String, String>>| {
                let done = Finished {
                    outcome: &result.outcome,
                    timeout: command.timeout,
                    stderr,
                    metrics: &result.metrics,
                    required: &request.required_metrics,
                    units_file,
                };
                match classify(done) {
                    Ok(units) => result.units = units,
                    Err(failure) => result.failure = Some(failure),
                }
                result
            };
        if cancel.is_cancelled() {
            return finish(result, "", None);
        }
        let label = format!("{}-{}-a{attempt}", request.side, request.sample);
        let checkout = match Checkout::create(
            &self.git,
            &self.worktree_root,
            &label,
            &request.revision,
            &command.links,
        ) {
            Ok(checkout) => checkout,
            Err(why) => {
                result.outcome = Outcome::CheckoutFailed(why);
                return finish(result, "", None);
            }
        };
        let units_path = checkout.units_file();
        let evidence_path = checkout.evidence_file();
        let logs = LogFiles {
            stdout: request.log_dir.join(format!("{label}.stdout.log")),
            stderr: request.log_dir.join(format!("{label}.stderr.log")),
        };
        let env: Vec<(OsString, OsString)> = vec![
            (UNITS_VAR.into(), units_path.clone().into_os_string()),
            (EVIDENCE_VAR.into(), evidence_path.clone().into_os_string()),
            ("TALLY_CANDIDATE".into(), request.candidate.clone().into()),
            ("TALLY_SIDE".into(), request.side.as_str().into()),
            ("TALLY_SAMPLE".into(), request.sample.to_string().into()),
        ];
        let group = GroupCommand {
            argv: &command.argv,
            dir: checkout.worktree(),
            env,
            marker: marker(&units_path),
            stdout_log: &logs.stdout,
            stderr_log: &logs.stderr,
            timeout: command.timeout,
        };
        let run = match run_in_group(&group, cancel) {
            Ok(run) => run,
            Err(why) => {
                result.outcome = Outcome::SpawnFailed(why);
                return finish(result, "", None);
            }
        };
        result.logs = Some(logs);
        result.wall = run.wall;
        result.metrics = run.metrics;
        result.stray_pids = run.strays;
        result.outcome = match run.end {
            End::Exited(code) => Outcome::Exited(code),
            End::Signalled(signal) => Outcome::Signalled(signal),
            End::TimedOut => Outcome::TimedOut,
            End::Cancelled => Outcome::Cancelled,
        };
        let units_file = match fs_err::read_to_string(&units_path) {
            Ok(text) => Some(Ok(text)),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
            Err(err) => Some(Err(err.to_string())),
        };
        let kept_evidence = request.log_dir.join(format!("{label}.evidence.jsonl"));
        let evidence = evidence::keep(&evidence_path, &kept_evidence);
        // Removal failures are not the sample's fault; the drop guard and the next prune retry.
        drop(checkout);
        let mut result = finish(result, &run.stderr_tail, units_file);
        // Evidence is checked last, and only read when nothing else failed (`docs/evaluate-protocol.md` §4b).
        let succeeded = result.failure.is_none();
        match evidence {
            Ok(false) => {}
            Ok(true) => {
                let accounted = succeeded
                    .then(|| evidence::account(&kept_evidence))
                    .transpose()
                    .unwrap_or_else(|why| {
                        result.failure = Some(Failure::BadEvidence { why });
                        None
                    });
                result.evidence = Some(EvidenceFile {
                    artifact: kept_evidence,
                    accounted,
                });
            }
            Err(why) if succeeded => {
                result.failure = Some(Failure::BadEvidence {
                    why: format!("it could not be kept ({why})"),
                });
            }
            Err(_) => {}
        }
        result
    }
}
