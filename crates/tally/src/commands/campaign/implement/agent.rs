//! Starting one implementer and seeing it end (`docs/implementers.md#runs`): the argv with its
//! placeholders filled, run through `env -u` so the inherited store location and harness
//! session variables are gone, in its own process group with the run's tag in its environment,
//! output straight to log files (no pipe: it may outlive a killed `tally run`); the wrap-up file created `wrap_up` seconds before the timeout; at exit,
//! `timeout` the group gets SIGTERM and [`TERM_GRACE`] to exit; then, or at exit or Ctrl-C, the
//! group and every process carrying the tag are killed and reaped
//! (`tally_process::run_in_group_stoppable`). A stop of the campaign while it works brings the
//! timeout forward to `stop_grace` from then ([`StopRequest`], `docs/implementers.md#stop-grace`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use tally_config::{ImplementerSettings, StdinMode};
use tally_process::{CancelToken, End, Keep, Sink};

/// How long an agent has between the SIGTERM at `timeout` and the SIGKILL
/// (`docs/implementers.md#runs`).
pub const TERM_GRACE: Duration = Duration::from_secs(10);

/// Bytes of `stderr.log` read for the error of a failed run.
const STDERR_TAIL_BYTES: u64 = 4096;

/// Inherited variables every agent loses: the store's location and a virtualenv of the caller.
const ALWAYS_CLEARED: &[&str] = &["TALLY_DATABASE_URL", "VIRTUAL_ENV"];

/// What one launch needs.
pub struct Launch<'a> {
    /// The run's number.
    pub run: u32,
    /// `[implementer]`.
    pub settings: &'a ImplementerSettings,
    /// The run's directory (brief, logs, wrap-up file); `{log_dir}`.
    pub run_dir: &'a Path,
    /// The agent's working directory.
    pub worktree: &'a Path,
    /// The brief file.
    pub brief_file: &'a Path,
    /// The brief's text (piped when `stdin = "brief"`).
    pub brief: &'a str,
    /// The unique tag (`TALLY_RUN_TAG`).
    pub tag: &'a str,
    /// Minted for `{session_id}`.
    pub session_id: &'a str,
    /// The base commit (`TALLY_BASE`).
    pub base: &'a str,
    /// Unix seconds of the deadline.
    pub deadline_s: i64,
    /// Set the git identity (none is configured).
    pub identity: bool,
}

/// How the agent ended.
pub struct Ended {
    /// How the process ended, or why it did not start.
    pub end: Result<End, String>,
    /// The last lines of its stderr.
    pub stderr_tail: String,
    /// The campaign's stop reached it while it worked ([`StopRequest::stop`]).
    pub stopped: bool,
}

/// How the driver asks a working agent to stop (`docs/implementers.md#stop-grace`): its
/// wrap-up file at once, then SIGTERM `stop_grace` later unless it exits first. Cheap to clone:
/// the driver keeps one, the agent's thread the other.
#[derive(Clone, Default)]
pub struct StopRequest {
    token: CancelToken,
}

impl StopRequest {
    /// Writes the wrap-up file of `run_dir`, saying why, then fires the stop; once only.
    pub fn stop(&self, run_dir: &Path, why: &str, grace_s: f64) {
        if self.token.is_cancelled() {
            return;
        }
        let _ = std::fs::write(
            wrap_up_file(run_dir),
            format!(
                "wrap up: the campaign stopped ({why}); commit your work and exit within {grace_s} s\n"
            ),
        );
        self.token.cancel();
    }
}

/// The wrap-up file of a run directory.
pub fn wrap_up_file(run_dir: &Path) -> PathBuf {
    run_dir.join("wrap-up")
}

/// The finding file of a run directory (`$TALLY_FINDING_FILE`): the agent's few lines on what
/// it tried and what moved, read by the `runs` section and later briefs.
pub fn finding_file(run_dir: &Path) -> PathBuf {
    run_dir.join("finding.md")
}

fn fill(arg: &str, l: &Launch<'_>, prompt: &str) -> String {
    let model = l.settings.model.clone().unwrap_or_default();
    [
        ("{prompt}", prompt.to_string()),
        ("{brief_file}", l.brief_file.display().to_string()),
        ("{model}", model),
        ("{worktree}", l.worktree.display().to_string()),
        ("{run}", l.run.to_string()),
        ("{session_id}", l.session_id.to_string()),
        ("{deadline}", l.deadline_s.to_string()),
        ("{log_dir}", l.run_dir.display().to_string()),
    ]
    .iter()
    .fold(arg.to_string(), |acc, (from, to)| acc.replace(from, to))
}

/// The names of inherited variables to remove: the fixed ones and the preset's (`NAME*` is a
/// prefix).
fn cleared(settings: &ImplementerSettings) -> Vec<String> {
    let mut names: Vec<String> = ALWAYS_CLEARED.iter().map(|s| (*s).to_string()).collect();
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy().into_owned();
        let wanted = settings
            .clear_env
            .iter()
            .any(|pattern| match pattern.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => name == *pattern,
            });
        if wanted && !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// Runs the agent to its end; `stop` may cut it short.
pub fn run(l: &Launch<'_>, cancel: &CancelToken, stop: &StopRequest) -> Ended {
    let prompt = format!(
        "Read the brief in {} and follow it.",
        l.brief_file.display()
    );
    let mut argv = vec!["env".to_string()];
    for name in cleared(l.settings) {
        argv.push("-u".into());
        argv.push(name);
    }
    argv.extend(l.settings.command.iter().map(|a| fill(a, l, &prompt)));

    let mut env: Vec<(OsString, OsString)> = vec![
        ("TALLY_RUN".into(), l.run.to_string().into()),
        (
            "TALLY_ACTOR".into(),
            format!("implementer#{}", l.run).into(),
        ),
        ("TALLY_RUN_TAG".into(), l.tag.into()),
        ("TALLY_BASE".into(), l.base.into()),
        ("TALLY_BRIEF".into(), l.brief_file.into()),
        ("TALLY_DEADLINE".into(), l.deadline_s.to_string().into()),
        ("TALLY_WRAP_UP".into(), wrap_up_file(l.run_dir).into()),
        ("TALLY_FINDING_FILE".into(), finding_file(l.run_dir).into()),
        (
            "TALLY_USAGE_FILE".into(),
            super::usage::usage_file(l.run_dir).into(),
        ),
    ];
    if l.identity {
        let email = format!("run-{}@tally.invalid", l.run);
        for (k, v) in [
            ("GIT_AUTHOR_NAME", "tally implementer"),
            ("GIT_COMMITTER_NAME", "tally implementer"),
            ("GIT_AUTHOR_EMAIL", email.as_str()),
            ("GIT_COMMITTER_EMAIL", email.as_str()),
        ] {
            env.push((k.into(), v.into()));
        }
    }
    env.extend(
        l.settings
            .env
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v))),
    );
    let stdout_log = l.run_dir.join("stdout.log");
    let stderr_log = l.run_dir.join("stderr.log");
    let command = tally_process::Command {
        argv: &argv,
        dir: Some(l.worktree),
        env,
        stdin: (l.settings.stdin == StdinMode::Brief).then(|| l.brief.as_bytes().to_vec()),
        // Straight to the files, no pipe: an agent adopted after `tally run` was killed must
        // not die of SIGPIPE when it prints (`docs/implementers.md#crash-safety`).
        stdout: Sink {
            log: Some(&stdout_log),
            feed: None,
            keep: Keep::FileOnly,
        },
        stderr: Sink {
            log: Some(&stderr_log),
            feed: None,
            keep: Keep::FileOnly,
        },
    };
    let timeout = Duration::from_secs_f64(l.settings.timeout_s);
    let wrap_at = Duration::from_secs_f64((l.settings.timeout_s - l.settings.wrap_up_s).max(0.0));
    let (done, wait) = mpsc::channel::<()>();
    let wrap_up = wrap_up_file(l.run_dir);
    let waker = std::thread::spawn(move || {
        if let Err(mpsc::RecvTimeoutError::Timeout) = wait.recv_timeout(wrap_at) {
            let _ = std::fs::write(&wrap_up, "wrap up: commit your work and exit\n");
        }
    });
    let marker = format!("TALLY_RUN_TAG={}", l.tag);
    let result = tally_process::run_in_group_stoppable(
        command,
        marker.as_bytes(),
        timeout,
        TERM_GRACE,
        cancel,
        Some(tally_process::Stop {
            token: &stop.token,
            // Any grace ≥ 0 is valid; one too long for a Duration is no limit.
            grace: Duration::try_from_secs_f64(l.settings.stop_grace_s).unwrap_or(Duration::MAX),
        }),
    );
    drop(done);
    let _ = waker.join();
    match result {
        Ok(run) => Ended {
            end: Ok(run.end),
            stderr_tail: tail(&String::from_utf8_lossy(&file_tail(&stderr_log)), 10),
            stopped: run.stopped,
        },
        Err(e) => Ended {
            end: Err(format!("{e:?}")),
            stderr_tail: String::new(),
            stopped: false,
        },
    }
}

/// The last [`STDERR_TAIL_BYTES`] of a file (nothing when it cannot be read).
fn file_tail(path: &Path) -> Vec<u8> {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut file) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let len = file.metadata().map_or(0, |m| m.len());
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(STDERR_TAIL_BYTES)));
    let mut bytes = Vec::new();
    let _ = file.read_to_end(&mut bytes);
    bytes
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.trim_end().lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
