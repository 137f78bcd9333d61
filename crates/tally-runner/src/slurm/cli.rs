//! Slurm's command-line clients as tally calls them (`sbatch`, `scontrol`, `scancel`), each with a
//! bounded wait, and the one text form tally reads back: `scontrol show job -o` (the JSON forms
//! of Slurm 22.05 ignore job filters; the one-line text form is stable across versions).

use std::collections::BTreeMap;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The longest a Slurm client may take before tally gives up on that call (a controller that
/// does not answer; the clients retry on their own for a while).
pub(crate) const CLIENT_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs a Slurm client and returns its stdout; `Err` says which call failed and why (its stderr,
/// on one line). Messages name the call as `program` and its first argument; the rest (paths of
/// the attempt directory) would only bury Slurm's reason.
pub(crate) fn slurm(program: &str, args: &[String]) -> Result<String, String> {
    let shown = || match args.first() {
        Some(first) if args.len() > 1 => format!("`{program} {first} …`"),
        Some(first) => format!("`{program} {first}`"),
        None => format!("`{program}`"),
    };
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|err| format!("could not run {}: {err}", shown()))?;
    // The output of these calls is a few lines: it fits the pipes while we wait.
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < CLIENT_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "{} did not answer within {} s",
                    shown(),
                    CLIENT_TIMEOUT.as_secs()
                ));
            }
            Err(err) => return Err(format!("waiting for {}: {err}", shown())),
        }
    };
    let mut stdout = String::new();
    let mut stderr = String::new();
    if let Some(mut out) = child.stdout.take() {
        let _ = out.read_to_string(&mut stdout);
    }
    if let Some(mut err) = child.stderr.take() {
        let _ = err.read_to_string(&mut stderr);
    }
    if status.success() {
        Ok(stdout)
    } else {
        let said: Vec<&str> = stderr
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        Err(format!(
            "{} failed ({status}): {}",
            shown(),
            said.join("; ")
        ))
    }
}

/// A job as `scontrol show job -o` shows it: the fields tally reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JobInfo {
    /// `JobState` (`PENDING`, `RUNNING`, `COMPLETED`, `TIMEOUT`, ...).
    pub state: String,
    /// `Reason` (`None`, `JobHeldUser`, `TimeLimit`, `NonZeroExitCode`, ...).
    pub reason: String,
    /// `ExitCode` (`0:0`, `4:0`, `0:15`: exit status and signal).
    pub exit_code: String,
}

impl JobInfo {
    /// Whether the job is over: no process of it runs any more (`COMPLETING` is not over: the
    /// node is still killing its processes).
    pub fn is_over(&self) -> bool {
        !matches!(
            self.state.as_str(),
            "PENDING"
                | "RUNNING"
                | "SUSPENDED"
                | "COMPLETING"
                | "CONFIGURING"
                | "REQUEUED"
                | "RESIZING"
                | "SIGNALING"
                | "STAGE_OUT"
                | "STOPPED"
        )
    }

    /// Whether the job is running (its time counts against `evaluate_timeout`).
    pub fn is_running(&self) -> bool {
        self.state == "RUNNING" || self.state == "COMPLETING"
    }
}

/// Parses the one-line form of `scontrol show job -o ID` (space-separated `Key=Value` pairs; a
/// value with spaces, such as `Command`, only at the end of a pair list tally does not read).
pub(crate) fn parse_job(line: &str) -> Option<JobInfo> {
    let fields: BTreeMap<&str, &str> = line
        .split_whitespace()
        .filter_map(|pair| pair.split_once('='))
        .collect();
    Some(JobInfo {
        state: fields.get("JobState")?.to_string(),
        reason: fields.get("Reason").unwrap_or(&"None").to_string(),
        exit_code: fields.get("ExitCode").unwrap_or(&"").to_string(),
    })
}

/// The job's state; `Ok(None)` when Slurm no longer knows it (purged `MinJobAge` after its end).
pub(crate) fn job_info(id: &str) -> Result<Option<JobInfo>, String> {
    match slurm(
        "scontrol",
        &["show".into(), "job".into(), "-o".into(), id.into()],
    ) {
        Ok(text) => Ok(text.lines().find_map(parse_job)),
        Err(why) if why.contains("Invalid job id") => Ok(None),
        Err(why) => Err(why),
    }
}

/// The job id in `sbatch --parsable`'s answer (`ID` or `ID;CLUSTER`).
pub(crate) fn parse_submitted(text: &str) -> Option<String> {
    let id = text.trim().split(';').next()?.trim();
    (!id.is_empty() && id.bytes().all(|b| b.is_ascii_digit())).then(|| id.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scontrol_lines_give_state_reason_and_exit_code() {
        let line = "JobId=29 JobName=wrap UserId=root(0) Priority=1 JobState=FAILED \
                    Reason=NonZeroExitCode Dependency=(null) ExitCode=4:0 RunTime=00:00:01";
        let job = parse_job(line).unwrap();
        assert_eq!(job.state, "FAILED");
        assert_eq!(job.reason, "NonZeroExitCode");
        assert_eq!(job.exit_code, "4:0");
        assert!(job.is_over());
        assert!(!parse_job("JobId=1 JobState=COMPLETING").unwrap().is_over());
        assert!(parse_job("JobId=1 JobState=RUNNING").unwrap().is_running());
        assert_eq!(parse_job("slurm_load_jobs error"), None);
    }

    #[test]
    fn sbatch_parsable_answers_give_the_id() {
        assert_eq!(parse_submitted("42\n").as_deref(), Some("42"));
        assert_eq!(parse_submitted("42;cluster\n").as_deref(), Some("42"));
        assert_eq!(parse_submitted("Submitted batch job 42"), None);
        assert_eq!(parse_submitted(""), None);
    }
}
