//! One call of an external provider as a process: start the command, write the request on its
//! stdin and close it, drain stdout and stderr on their own threads (so a chatty provider never
//! blocks on a full pipe), wait with a deadline, and kill it when the deadline passes. The
//! mechanics are `tally-process`'s ([`Spawned`]); this module is the provider's policy.
//!
//! Failures come back as one-line messages (`timed out after 10 s`, `exited with status 3`)
//! ending with the last lines of the provider's stderr; the caller prefixes the provider's name.
//! This module knows nothing of JSON or the protocol. The provider runs in tally's own process
//! group (a Ctrl-C at the terminal reaches it too), and it kills the process it started, not
//! processes that one may have started in turn: a reader still blocked on a pipe such a process
//! holds open is left behind rather than waited for.

use std::process::ExitStatus;
use std::time::{Duration, Instant};

use tally_process::{Command, Group, Sink, SpawnError, Spawned, Waited};

/// How long to wait for the pipes after the process ended (or was killed).
const GRACE: Duration = Duration::from_millis(500);
/// At most this many lines of stderr are quoted in an error.
const STDERR_LINES: usize = 5;
/// At most this many characters of stderr are quoted in an error.
const STDERR_CHARS: usize = 500;

/// What a process that exited with status 0 printed.
pub(crate) struct Output {
    /// Everything it wrote on stdout.
    pub(crate) stdout: Vec<u8>,
    /// Everything it wrote on stderr.
    pub(crate) stderr: Vec<u8>,
}

/// Runs `command` with `input` on stdin, for at most `timeout_s` seconds.
pub(crate) fn run(command: &[String], input: Vec<u8>, timeout_s: f64) -> Result<Output, String> {
    let mut child = Spawned::spawn(
        Command {
            argv: command,
            dir: None,
            env: Vec::new(),
            stdin: Some(input),
            stdout: Sink::memory(),
            stderr: Sink::memory(),
        },
        Group::Caller,
    )
    .map_err(|why| match why {
        SpawnError::EmptyCommand => {
            "the command is empty; set `command = [\"./my-provider\"]`".to_string()
        }
        SpawnError::Start { program, source } => format!(
            "could not start `{program}`: {source}; check `command` (a program on PATH, or a path \
             relative to the directory tally runs in, executable)"
        ),
        SpawnError::Log(e) => format!("could not start it: {e}"),
    })?;
    let timeout = Duration::from_secs_f64(timeout_s);
    let deadline = Instant::now() + timeout;
    if child.wait(deadline, None) == Waited::TimedOut {
        child.kill();
        let _ = child.reap();
        let err = kept_within(&mut child.stderr, GRACE);
        return Err(format!(
            "timed out after {timeout_s} s{}",
            stderr_tail(&err)
        ));
    }
    let status = match child.reap() {
        Ok(status) => status,
        Err(e) => return Err(format!("could not wait for it: {e}")),
    };
    let until = deadline.max(Instant::now()) + GRACE;
    if !child.stdout.wait_until(until) {
        return Err(format!(
            "timed out after {timeout_s} s: it exited, but something it started kept its stdout open"
        ));
    }
    let out = child.stdout.kept();
    let err = kept_within(&mut child.stderr, GRACE);
    if !status.success() {
        return Err(format!("{}{}", describe_exit(status), stderr_tail(&err)));
    }
    Ok(Output {
        stdout: out,
        stderr: err,
    })
}

/// Everything on a stream that ends within `grace`; nothing when it does not.
fn kept_within(drain: &mut tally_process::Drain, grace: Duration) -> Vec<u8> {
    if drain.wait_until(Instant::now() + grace) {
        drain.kept()
    } else {
        Vec::new()
    }
}

/// `exited with status 3` or `was killed by signal 9`.
fn describe_exit(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exited with status {code}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!("was killed by signal {signal}");
        }
    }
    format!("ended with {status}")
}

/// `; stderr: <last lines>`, or nothing when stderr was empty.
pub(crate) fn stderr_tail(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if lines.is_empty() {
        return String::new();
    }
    let tail = lines[lines.len().saturating_sub(STDERR_LINES)..].join(" | ");
    let count = tail.chars().count();
    let tail: String = if count > STDERR_CHARS {
        let skipped: String = tail.chars().skip(count - STDERR_CHARS).collect();
        format!("…{skipped}")
    } else {
        tail
    };
    format!("; stderr: {tail}")
}
