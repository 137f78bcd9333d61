//! Exit codes: one table for every tally command (documented in `docs/cli.md`).
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success (including `--help`, `--version`, a campaign that is idle or stopped) |
//! | 1 | failure, bad input or a refusal: unreadable or invalid files, config or store problems, values the command refuses |
//! | 2 | usage: unknown flag, missing argument, malformed command line; `tally trace import` given a device, FIFO, socket or directory as a trace |
//! | 3 | held: a campaign command returned because the campaign is held; `tally bench openai`: the endpoint failed its preflight request |
//! | 4 | `tally bench openai`: the run is not trustworthy (client saturated, or too many errors); its metrics were printed |
//! | 130 | interrupted by Ctrl-C (SIGINT) |
//! | 143 | interrupted by SIGTERM (`timeout`, `kill`, a batch scheduler) |
//! | 129 | interrupted by SIGHUP (the terminal or SSH session closed) |
//!
//! A closed standard output (`tally ... | head`) is not a failure: the command stops quietly with
//! status 0, as ripgrep does.

use std::io;
use std::process::ExitCode;

use crate::printer;

/// How a command that did not fail ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Done (0).
    Success,
    /// The campaign is held (3).
    Held,
    /// A usage error already reported (2).
    Usage,
    /// `tally bench openai`: the endpoint failed its preflight request (3).
    PreflightFailed,
    /// `tally bench openai`: the run is not trustworthy; metrics were printed (4).
    Untrustworthy,
    /// Interrupted by a signal: SIGINT (130), SIGTERM (143) or SIGHUP (129); 128 + its number.
    Interrupted(i32),
}

impl From<Status> for ExitCode {
    fn from(status: Status) -> Self {
        ExitCode::from(match status {
            Status::Success => 0,
            Status::Held => 3,
            Status::Usage => 2,
            Status::PreflightFailed => 3,
            Status::Untrustworthy => 4,
            Status::Interrupted(signal) => u8::try_from(128 + signal).unwrap_or(130),
        })
    }
}

/// Prints a command-line parsing error (or help/version) and returns its code: 0 for help and
/// version, 2 for usage errors.
pub fn from_clap(err: &clap::Error) -> ExitCode {
    // clap prints help/version on stdout and errors on stderr, with its own formatting.
    let _ = err.print();
    if err.use_stderr() {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}

/// Prints `error: ...` for a failed command and returns 1 (or 0 for a closed stdout pipe).
pub fn from_error(err: &anyhow::Error) -> ExitCode {
    let broken_pipe = err.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    });
    if broken_pipe {
        return ExitCode::SUCCESS;
    }
    printer::error(&one_line(err));
    ExitCode::from(1)
}

/// The error and its causes on one line, `: `-separated, each cause said once: a cause whose
/// text the line already holds (an error whose message includes its source's, as `io::Error`s
/// wrapped with a path and SQLite's or gzip's errors do) is not repeated.
pub fn one_line(err: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if text.is_empty() || line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn each_cause_is_said_once() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "No such file (os error 2)");
        let err = anyhow::Error::new(io).context("/x.jsonl: No such file (os error 2)");
        assert_eq!(one_line(&err), "/x.jsonl: No such file (os error 2)");
        let err = anyhow::anyhow!("readonly database")
            .context("readonly database")
            .context("cannot record the sample: readonly database");
        assert_eq!(
            one_line(&err),
            "cannot record the sample: readonly database"
        );
        let err = anyhow::anyhow!("line 3: bad").context("a.jsonl");
        assert_eq!(one_line(&err), "a.jsonl: line 3: bad");
    }
}
