//! [`WorktreeRunner`], the real [`SampleRunner`]: one attempt is to check out the revision in a
//! fresh worktree ([`Checkout`]), run the evaluate command there in its own process group
//! (`tally_process::run_in_group`, its stdout through the METRIC scanner), read the units file, keep the evidence file next to the logs, classify
//! ([`crate::outcome`]), remove the checkout, and have the evidence accounted through the
//! runner's [`EvidenceAccountant`] when the attempt succeeded. The trait, its request and result
//! types and the retry rule are `tally-contract`'s.
//!
//! Deliberately absent: the store, the verdict, pairing candidate and bar samples (the engine
//! decides what to run and records what comes back); the API is synchronous and blocking.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tally_contract::{
    Attempt, CancelToken, CheckOutcome, CheckRequest, EvidenceAccountant, EvidenceFile, LogFiles,
    SampleRequest, SampleRunner,
};
use tally_process::{Command, End, Keep, Sink, SpawnError, run_in_group};

use crate::RunnerError;
use crate::evidence::{self, EVIDENCE_VAR};
use crate::git::Git;
use crate::handover;
use crate::metric::MetricScanner;
use crate::outcome::{Failure, Finished, Outcome, classify, relative_to_checkout};
use crate::worktree::{Checkout, UNITS_VAR, marker, prepare_worktree_root};

/// Bytes of stderr kept in memory for the failure sentence (its last meaningful line); the whole
/// stderr goes to the log file.
pub(crate) const STDERR_TAIL_BYTES: usize = 16 * 1024;

/// Makes this process a "child subreaper" (Linux `PR_SET_CHILD_SUBREAPER`): descendants of the
/// evaluate command whose parent dies are re-parented to this process instead of init, so the
/// runner reaps every process of a sample itself. Process-wide; call once at start-up.
pub fn become_child_subreaper() -> Result<(), RunnerError> {
    tally_process::become_child_subreaper().map_err(|errno| RunnerError::System {
        call: "prctl(PR_SET_CHILD_SUBREAPER)",
        errno,
    })
}

/// The real runner: git worktrees under a campaign-owned root, process groups, timeouts.
#[derive(Clone)]
pub struct WorktreeRunner {
    git: Git,
    worktree_root: PathBuf,
    accountant: Arc<dyn EvidenceAccountant>,
}

impl fmt::Debug for WorktreeRunner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorktreeRunner")
            .field("git", &self.git)
            .field("worktree_root", &self.worktree_root)
            .finish_non_exhaustive()
    }
}

impl WorktreeRunner {
    /// A runner for the repository `git`, making checkouts under `worktree_root` (created if
    /// missing; it must be outside the working tree, and owned by one campaign — see
    /// [`default_worktree_root`](crate::default_worktree_root)), and having the evidence files
    /// of successful attempts accounted by `accountant`.
    pub fn new(
        git: Git,
        worktree_root: &Path,
        accountant: Arc<dyn EvidenceAccountant>,
    ) -> Result<Self, RunnerError> {
        let worktree_root = prepare_worktree_root(&git, worktree_root)?;
        Ok(Self {
            git,
            worktree_root,
            accountant,
        })
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
    fn run_checks(&self, request: &CheckRequest, cancel: &CancelToken) -> CheckOutcome {
        crate::checks::run_checks(&self.git, &self.worktree_root, request, cancel)
    }

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
            held: None,
            evidence: None,
        };
        let command = &request.command;
        let finish = |result: Attempt, stderr: &str, units_file: Option<Result<String, String>>| {
            classified(request, result, stderr, units_file)
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
        let scanner = Arc::new(Mutex::new(MetricScanner::new()));
        let scanning = scanner.clone();
        let group = Command {
            argv: &command.argv,
            dir: Some(checkout.worktree()),
            env,
            stdin: None,
            stdout: Sink {
                log: Some(&logs.stdout),
                feed: Some(Box::new(move |chunk| {
                    scanning
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .feed(chunk);
                })),
                keep: Keep::Nothing,
            },
            stderr: Sink {
                log: Some(&logs.stderr),
                feed: None,
                keep: Keep::Tail(STDERR_TAIL_BYTES),
            },
        };
        let run = match run_in_group(group, &marker(&units_path), command.timeout, cancel) {
            Ok(run) => run,
            Err(why) => {
                result.outcome = Outcome::SpawnFailed(spawn_failure(&why, checkout.worktree()));
                return finish(result, "", None);
            }
        };
        let stderr_tail =
            relative_to_checkout(&String::from_utf8_lossy(&run.stderr), checkout.worktree());
        let log_problem = run.log_problem.clone();
        result.logs = Some(logs);
        result.wall = run.wall;
        result.metrics = scanner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .metrics();
        result.stray_pids = run.strays;
        result.outcome = match run.end {
            End::Exited(code) => Outcome::Exited(code),
            End::Signalled(signal) => Outcome::Signalled(signal),
            End::TimedOut => Outcome::TimedOut,
            End::Cancelled => Outcome::Cancelled,
        };
        let kept_evidence = request.log_dir.join(format!("{label}.evidence.jsonl"));
        let ended = Ended {
            units_path: &units_path,
            evidence_path: &evidence_path,
            kept_evidence,
            stderr_tail: &stderr_tail,
            log_problem,
        };
        conclude(request, &*self.accountant, result, ended, checkout)
    }
}

/// What an attempt left behind when its command ended, for [`conclude`].
pub(crate) struct Ended<'a> {
    /// `TALLY_UNITS_FILE`.
    pub units_path: &'a Path,
    /// `TALLY_EVIDENCE_FILE`.
    pub evidence_path: &'a Path,
    /// Where the evidence file is kept, next to the logs.
    pub kept_evidence: PathBuf,
    /// The end of stderr, paths inside the checkout made relative.
    pub stderr_tail: &'a str,
    /// Why the output was not kept whole, if it was not.
    pub log_problem: Option<String>,
}

/// The common end of an attempt, whichever executor ran it: reads the units file, keeps the
/// evidence file, removes the checkout, classifies, and has the evidence accounted when nothing
/// else failed (`docs/evaluate-protocol.md` §4b).
pub(crate) fn conclude(
    request: &SampleRequest,
    accountant: &dyn EvidenceAccountant,
    result: Attempt,
    ended: Ended<'_>,
    checkout: Checkout,
) -> Attempt {
    let units_file = read_units(ended.units_path);
    let kept_evidence = ended.kept_evidence;
    let evidence = evidence::keep(ended.evidence_path, &kept_evidence);
    // Removal failures are not the sample's fault; the drop guard and the next prune retry.
    drop(checkout);
    let mut result = classified(request, result, ended.stderr_tail, units_file);
    // A sample whose output was not kept whole is not trusted, whatever it printed.
    if let Some(why) = ended.log_problem
        && result.failure.is_none()
    {
        result.failure = Some(Failure::Log { why });
    }
    let succeeded = result.failure.is_none();
    match evidence {
        Ok(false) => {}
        Ok(true) => {
            let accounted = succeeded
                .then(|| accountant.account(&kept_evidence))
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
            result.failure = Some(Failure::BadEvidence { why });
        }
        Err(_) => {}
    }
    result
}

/// `result` with its failure (or units) set from its outcome, metrics and units file.
pub(crate) fn classified(
    request: &SampleRequest,
    mut result: Attempt,
    stderr: &str,
    units_file: Option<Result<String, String>>,
) -> Attempt {
    let done = Finished {
        outcome: &result.outcome,
        timeout: request.command.timeout,
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
}

/// The units file the command left at `path`, taken by the hand-over rules
/// (`docs/evaluate-protocol.md` §4c): `None` when there is none, `Some(Err(why))` when it is not
/// a regular file, is too large or is not text.
pub(crate) fn read_units(path: &Path) -> Option<Result<String, String>> {
    let (file, meta) = match handover::open_regular(path) {
        Ok(None) => return None,
        Ok(Some(opened)) => opened,
        Err(why) => return Some(Err(why)),
    };
    const WHAT: &str = "a units file";
    if meta.len() > handover::MAX_UNITS_BYTES {
        return Some(Err(handover::too_large(handover::MAX_UNITS_BYTES, WHAT)));
    }
    let text = handover::read_bounded(&file, handover::MAX_UNITS_BYTES, WHAT).and_then(|bytes| {
        String::from_utf8(bytes).map_err(|err| {
            format!(
                "it is not UTF-8 text (invalid byte at offset {})",
                err.utf8_error().valid_up_to()
            )
        })
    });
    Some(text)
}

/// The sentence for an evaluate command that could not be started in `dir`.
fn spawn_failure(why: &SpawnError, dir: &Path) -> String {
    match why {
        SpawnError::EmptyCommand => "the evaluate command is empty".to_owned(),
        SpawnError::Log(err) => format!("could not create the log file: {err}"),
        SpawnError::Start { program, source } => {
            format!("could not start `{program}` in {}: {source}", dir.display())
        }
    }
}
