//! One call of an external provider as a process: start the command, write the request on its
//! stdin and close it, drain stdout and stderr on their own threads (so a chatty provider never
//! blocks on a full pipe), wait with a deadline, and kill it when the deadline passes.
//!
//! Failures come back as one-line messages (`timed out after 10 s`, `exited with status 3`)
//! ending with the last lines of the provider's stderr; the caller prefixes the provider's name.
//! This module knows nothing of JSON or the protocol. It kills the process it started, not
//! processes that one may have started in turn: a reader still blocked on a pipe such a process
//! holds open is left behind rather than waited for.

use std::io::{Read, Write};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::thread;
use std::time::{Duration, Instant};

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
    let (program, args) = command
        .split_first()
        .ok_or_else(|| "the command is empty; set `command = [\"./my-provider\"]`".to_string())?;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            format!(
                "could not start `{program}`: {e}; check `command` (a program on PATH, or a path \
                 relative to the directory tally runs in, executable)"
            )
        })?;
    if let Some(mut stdin) = child.stdin.take() {
        // A provider may exit without reading its input; the write then fails, which is fine.
        thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
    }
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let timeout = Duration::from_secs_f64(timeout_s);
    let deadline = Instant::now() + timeout;
    let mut step = Duration::from_millis(1);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("could not wait for it: {e}"));
            }
        }
        let now = Instant::now();
        if now >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            let err = stderr.recv_timeout(GRACE).unwrap_or_default();
            return Err(format!(
                "timed out after {timeout_s} s{}",
                stderr_tail(&err)
            ));
        }
        thread::sleep(step.min(deadline - now));
        step = (step * 2).min(Duration::from_millis(20));
    };
    let left = deadline.saturating_duration_since(Instant::now()) + GRACE;
    let Ok(out) = stdout.recv_timeout(left) else {
        return Err(format!(
            "timed out after {timeout_s} s: it exited, but something it started kept its stdout open"
        ));
    };
    let err = stderr.recv_timeout(GRACE).unwrap_or_default();
    if !status.success() {
        return Err(format!("{}{}", describe_exit(status), stderr_tail(&err)));
    }
    Ok(Output {
        stdout: out,
        stderr: err,
    })
}

/// Reads a pipe to its end on a thread; the bytes arrive on the returned channel.
fn drain(pipe: Option<impl Read + Send + 'static>) -> Receiver<Vec<u8>> {
    let (sender, receiver) = channel();
    thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        let _ = sender.send(bytes);
    });
    receiver
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
