//! [`SlurmRunner`], the [`SampleRunner`] of `[executor] kind = "slurm"`: one attempt is one
//! Slurm batch job (`docs/team.md#executor`). The checkout is made as the local runner makes it,
//! under a `workdir` every node sees; the job is submitted held (`sbatch --parsable --hold`), its
//! id is written next to the logs (`<side>-<sample>-a<attempt>.slurm-job`), and only then is it
//! released (`scontrol release`), so a job never runs without tally knowing its id. tally polls
//! `scontrol show job -o`; `evaluate_timeout` counts from when the job is seen running; on the
//! timeout or Ctrl-C it `scancel`s the job and waits until Slurm reports it over (with
//! `proctrack/cgroup`, every process of the job is then gone). The outcome comes from files the
//! job writes (`slurm::job`): the exit status file, stdout (METRIC lines) and stderr, the units and
//! evidence files; a job Slurm ended first (its time limit, a node failure) is a failed sample
//! with Slurm's state and reason. A job outlives a `tally run` killed outright: the next run
//! adopts it (`slurm::adopt`): asked for the same attempt, `run_attempt` watches the recorded job
//! instead of submitting another, and jobs nothing wants any more are `scancel`led.
//!
//! Deliberately absent: running several jobs at once (one evaluation at a time, as locally).

mod adopt;
mod cli;
mod held;
mod job;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tally_contract::{
    Attempt, CancelToken, CheckOutcome, CheckRequest, EvidenceAccountant, LogFiles, Outcome,
    SampleRequest, SampleRunner,
};

pub use adopt::Settled;
pub use job::SlurmOptions;

use crate::RunnerError;
use crate::evidence::EVIDENCE_VAR;
use crate::git::Git;
use crate::metric::MetricScanner;
use crate::outcome::relative_to_checkout;
use crate::sample::{Ended, STDERR_TAIL_BYTES, classified, conclude};
use crate::worktree::{Checkout, UNITS_VAR, prepare_worktree_root};
use cli::{JobInfo, job_info, parse_submitted, slurm};
use job::{JobFiles, option_args, read_ended, sbatch_args, script};

/// How often the job's state is asked for.
const POLL: Duration = Duration::from_millis(250);
/// How long after `scancel` tally waits for Slurm to report the job over (Slurm's `KillWait`
/// between SIGTERM and SIGKILL is 30 s by default).
const CANCEL_WAIT: Duration = Duration::from_secs(120);
/// How long the `ended` file of a job whose script ended on its own is waited for.
const ENDED_FILE_WAIT: Duration = Duration::from_secs(10);
/// Failed `scontrol` calls in a row after which tally gives the job up (cancelling it).
const MAX_QUERY_FAILURES: u32 = 40;

/// The Slurm executor: checkouts under a shared directory, one batch job per attempt.
#[derive(Clone)]
pub struct SlurmRunner {
    git: Git,
    worktree_root: PathBuf,
    accountant: Arc<dyn EvidenceAccountant>,
    options: SlurmOptions,
}

impl fmt::Debug for SlurmRunner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SlurmRunner")
            .field("worktree_root", &self.worktree_root)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl SlurmRunner {
    /// A runner for the repository `git`, making checkouts under `worktree_root` (on a
    /// filesystem every node of the cluster sees; outside the working tree, owned by one
    /// campaign) and submitting jobs with `options`.
    pub fn new(
        git: Git,
        worktree_root: &Path,
        accountant: Arc<dyn EvidenceAccountant>,
        options: SlurmOptions,
    ) -> Result<Self, RunnerError> {
        let worktree_root = prepare_worktree_root(&git, worktree_root)?;
        Ok(Self {
            git,
            worktree_root,
            accountant,
            options,
        })
    }

    /// The canonical worktree root.
    pub fn worktree_root(&self) -> &Path {
        &self.worktree_root
    }
}

/// How watching a released job ended.
enum Watched {
    /// Slurm reports it over (`None`: it no longer knows the job).
    Over(Option<JobInfo>),
    /// tally cancelled it at `evaluate_timeout`.
    TimedOut,
    /// tally cancelled it for the token.
    Cancelled,
    /// Slurm could not be asked about it; tally cancelled it.
    Lost(String),
}

impl SampleRunner for SlurmRunner {
    /// The `[checks]` run on this machine, in a checkout under the same root as the jobs':
    /// they gate the paid samples and need no allocation (`docs/team.md#executor`).
    fn run_checks(&self, request: &CheckRequest, cancel: &CancelToken) -> CheckOutcome {
        crate::checks::run_checks(&self.git, &self.worktree_root, request, cancel)
    }

    /// A job outlives a killed `tally run`; the next one adopts it (`docs/team.md#adopting`).
    fn adopts_attempts(&self) -> bool {
        true
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
        if cancel.is_cancelled() {
            return classified(request, result, "", None);
        }
        let label = format!("{}-{}-a{attempt}", request.side, request.sample);
        let job_id_file = request.log_dir.join(format!("{label}.slurm-job"));
        // A job a killed `tally run` submitted for this very attempt is adopted, not run again.
        let adopted = adopt::recorded(&job_id_file, &self.worktree_root);
        let checkout = match &adopted {
            Some(job) => Checkout::adopt(&self.git, &job.dir),
            None => match Checkout::create(
                &self.git,
                &self.worktree_root,
                &label,
                &request.revision,
                &request.command.links,
            ) {
                Ok(checkout) => checkout,
                Err(why) => {
                    result.outcome = Outcome::CheckoutFailed(why);
                    return classified(request, result, "", None);
                }
            },
        };
        let units_path = checkout.units_file();
        let evidence_path = checkout.evidence_file();
        let files = JobFiles::in_dir(checkout.dir());
        let env: Vec<(OsString, OsString)> = vec![
            (UNITS_VAR.into(), units_path.clone().into_os_string()),
            (EVIDENCE_VAR.into(), evidence_path.clone().into_os_string()),
            ("TALLY_CANDIDATE".into(), request.candidate.clone().into()),
            ("TALLY_SIDE".into(), request.side.as_str().into()),
            ("TALLY_SAMPLE".into(), request.sample.to_string().into()),
        ];
        let submitted = match adopted {
            Some(job) => {
                adopt::release_if_held(&job.id);
                Ok(job.id)
            }
            None => self.submit(
                &files,
                checkout.worktree(),
                &request.command.argv,
                &env,
                &label,
                &job_id_file,
            ),
        };
        let id = match submitted {
            Ok(id) => id,
            Err(why) => {
                result.outcome = Outcome::SpawnFailed(why);
                return classified(request, result, "", None);
            }
        };
        let (watched, wall) = watch(&id, request.command.timeout, cancel);
        let logs = LogFiles {
            stdout: request.log_dir.join(format!("{label}.stdout.log")),
            stderr: request.log_dir.join(format!("{label}.stderr.log")),
        };
        let log_problem = copy_log(&files.stdout, &logs.stdout)
            .and_then(|()| copy_log(&files.stderr, &logs.stderr))
            .err();
        result.metrics = scan_metrics(&logs.stdout);
        let stderr_tail =
            relative_to_checkout(&tail(&logs.stderr, STDERR_TAIL_BYTES), checkout.worktree());
        result.logs = Some(logs);
        result.wall = wall;
        result.outcome = match watched {
            Watched::TimedOut => Outcome::TimedOut,
            Watched::Cancelled => Outcome::Cancelled,
            Watched::Lost(why) => Outcome::JobEnded(format!("Slurm job {id}: {why}")),
            Watched::Over(info) => match ended_file(&files.ended, info.as_ref()) {
                Some((status, wall)) => {
                    result.wall = wall;
                    // bash reports a command killed by signal N as 128 + N.
                    if (129..=128 + 64).contains(&status) {
                        Outcome::Signalled(status - 128)
                    } else {
                        Outcome::Exited(status)
                    }
                }
                None => Outcome::JobEnded(ended_by_slurm(&id, info.as_ref())),
            },
        };
        result.held = Some(held::ask_slurm(
            &id,
            self.options.gres.as_deref(),
            result.wall,
        ));
        let ended = Ended {
            units_path: &units_path,
            evidence_path: &evidence_path,
            kept_evidence: request.log_dir.join(format!("{label}.evidence.jsonl")),
            stderr_tail: &stderr_tail,
            log_problem,
        };
        conclude(request, &*self.accountant, result, ended, checkout)
    }
}

impl SlurmRunner {
    /// Writes the script, records the attempt directory next to `job_id_file`, submits the
    /// script held, records the id in `job_id_file`, releases it.
    fn submit(
        &self,
        files: &JobFiles,
        worktree: &Path,
        argv: &[String],
        env: &[(OsString, OsString)],
        label: &str,
        job_id_file: &Path,
    ) -> Result<String, String> {
        let text = script(files, worktree, argv, env);
        std::fs::write(&files.script, text)
            .and_then(|()| {
                std::fs::set_permissions(&files.script, std::fs::Permissions::from_mode(0o755))
            })
            .map_err(|err| {
                format!(
                    "could not write the job script {}: {err}",
                    files.script.display()
                )
            })?;
        let dir = request_dir(&files.script);
        let recorded_dir = std::fs::create_dir_all(request_dir(job_id_file)).and_then(|()| {
            std::fs::write(adopt::dir_file(job_id_file), format!("{}\n", dir.display()))
        });
        if let Err(err) = recorded_dir {
            return Err(format!(
                "could not record the attempt directory in {}: {err}",
                adopt::dir_file(job_id_file).display()
            ));
        }
        let name = format!("tally-{label}");
        let comment = adopt::comment(&self.worktree_root, &dir);
        let args = sbatch_args(&self.options, &name, &comment, files, worktree);
        let answer = slurm("sbatch", &args).map_err(|why| {
            // An sbatch that did not answer may still have queued the (held) job.
            let cancelled = if why.contains("did not answer within") {
                adopt::cancel_unrecorded(&name, &comment)
            } else {
                Vec::new()
            };
            let cancelled = match cancelled.as_slice() {
                [] => String::new(),
                ids => format!(" (the job it queued, {}, was cancelled)", ids.join(", ")),
            };
            format!(
                "could not submit the job ({}): {why}{cancelled}",
                shown_options(&self.options)
            )
        })?;
        let id = parse_submitted(&answer).ok_or_else(|| {
            format!(
                "sbatch --parsable answered {:?}, not a job id",
                answer.trim()
            )
        })?;
        let recorded = std::fs::write(job_id_file, format!("{id}\n"));
        if let Err(err) = recorded {
            cancel_job(&id);
            return Err(format!(
                "could not record Slurm job {id} in {} (the held job was cancelled): {err}",
                job_id_file.display()
            ));
        }
        if let Err(why) = slurm("scontrol", &["release".into(), id.clone()]) {
            cancel_job(&id);
            return Err(format!(
                "could not release Slurm job {id} (it was cancelled): {why}"
            ));
        }
        Ok(id)
    }
}

/// The `[executor]` options as the sbatch flags they became, for messages.
fn shown_options(options: &SlurmOptions) -> String {
    let flags = option_args(options);
    if flags.is_empty() {
        "sbatch with Slurm's defaults".to_owned()
    } else {
        format!("sbatch {}", flags.join(" "))
    }
}

fn request_dir(file: &Path) -> PathBuf {
    file.parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Polls the job until Slurm reports it over, cancelling it at the timeout (counted from when
/// it is first seen running) or when the token fires. Returns how it ended and the time it was
/// seen running.
fn watch(id: &str, timeout: Duration, cancel: &CancelToken) -> (Watched, Duration) {
    let mut running_since: Option<Instant> = None;
    let mut failures = 0;
    let ran = |since: Option<Instant>| since.map_or(Duration::ZERO, |t| t.elapsed());
    loop {
        if cancel.is_cancelled() {
            let wall = ran(running_since);
            cancel_job(id);
            return (Watched::Cancelled, wall);
        }
        if running_since.is_some_and(|t| t.elapsed() >= timeout) {
            let wall = ran(running_since);
            cancel_job(id);
            return (Watched::TimedOut, wall);
        }
        match job_info(id) {
            Ok(Some(info)) if info.is_over() => {
                return (Watched::Over(Some(info)), ran(running_since));
            }
            Ok(Some(info)) => {
                failures = 0;
                if info.is_running() && running_since.is_none() {
                    running_since = Some(Instant::now());
                }
            }
            Ok(None) => return (Watched::Over(None), ran(running_since)),
            Err(why) => {
                failures += 1;
                if failures >= MAX_QUERY_FAILURES {
                    cancel_job(id);
                    return (
                        Watched::Lost(format!(
                            "tally could not ask Slurm about it ({why}); it was cancelled"
                        )),
                        ran(running_since),
                    );
                }
            }
        }
        std::thread::sleep(POLL);
    }
}

/// `scancel`s the job and waits (bounded) until Slurm reports it over: with `proctrack/cgroup`
/// every process of the job is gone by then.
fn cancel_job(id: &str) {
    let _ = slurm("scancel", &[id.to_owned()]);
    let started = Instant::now();
    while started.elapsed() < CANCEL_WAIT {
        match job_info(id) {
            Ok(Some(info)) if !info.is_over() => {}
            Ok(_) => return,
            Err(_) => {}
        }
        std::thread::sleep(POLL);
    }
}

/// The `ended` file of a job Slurm reports over. When the job script ended on its own
/// (`COMPLETED`, `FAILED`) the file was written on the node: on a shared filesystem with
/// attribute caching (NFS) it may take a moment to be seen here, so it is waited for, briefly.
fn ended_file(path: &Path, info: Option<&JobInfo>) -> Option<(i32, Duration)> {
    let script_ended = info.is_some_and(|i| i.state == "COMPLETED" || i.state == "FAILED");
    let deadline = Instant::now() + ENDED_FILE_WAIT;
    loop {
        let ended = read_ended(path);
        if ended.is_some() || !script_ended || Instant::now() >= deadline {
            return ended;
        }
        std::thread::sleep(POLL);
    }
}

/// The sentence for a job that ended before its command did.
fn ended_by_slurm(id: &str, info: Option<&JobInfo>) -> String {
    match info {
        Some(info) => {
            let why = match (info.state.as_str(), info.reason.as_str()) {
                ("TIMEOUT", _) => {
                    " (it ran past the job's time limit, [executor] time_limit)".to_owned()
                }
                (_, "None" | "") => String::new(),
                (_, reason) => format!(" (reason {reason})"),
            };
            format!(
                "Slurm job {id} ended {}{why} with exit code {} before the command did",
                info.state, info.exit_code
            )
        }
        None => format!(
            "Slurm job {id} is no longer known to Slurm and the command left no exit status"
        ),
    }
}

/// Copies the job's output file into the log directory (an empty log when the job wrote none).
fn copy_log(from: &Path, to: &Path) -> Result<(), String> {
    let copied = match std::fs::copy(from, to) {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => std::fs::write(to, b""),
        other => other.map(drop),
    };
    copied.map_err(|err| format!("copying {} to {}: {err}", from.display(), to.display()))
}

/// The metrics printed in a stdout log.
fn scan_metrics(path: &Path) -> BTreeMap<String, f64> {
    let mut scanner = MetricScanner::new();
    if let Ok(mut file) = std::fs::File::open(path) {
        let mut chunk = vec![0; 64 * 1024];
        while let Ok(n) = file.read(&mut chunk) {
            if n == 0 {
                break;
            }
            scanner.feed(&chunk[..n]);
        }
    }
    scanner.metrics()
}

/// The last `max` bytes of a file, as text.
fn tail(path: &Path, max: usize) -> String {
    let Ok(mut file) = std::fs::File::open(path) else {
        return String::new();
    };
    let len = file.metadata().map_or(0, |m| m.len());
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(max as u64)));
    let mut bytes = Vec::new();
    let _ = file.take(max as u64).read_to_end(&mut bytes);
    String::from_utf8_lossy(&bytes).into_owned()
}
