//! Exit codes: one table for every tally command (documented in `docs/cli.md`).
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success (including `--help`, `--version`, a campaign that is idle or stopped) |
//! | 1 | failure, bad input or a refusal: unreadable or invalid files, config or store problems, values the command refuses |
//! | 2 | usage: unknown flag, missing argument, malformed command line |
//! | 3 | held: a campaign command returned because the campaign is held; `tally bench openai`: the endpoint failed its preflight request |
//! | 4 | `tally bench openai`: the run is not trustworthy (client saturated, or too many errors); its metrics were printed |
//! | 130 | interrupted by Ctrl-C |
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
    /// The input was read but refused, and the command already said why (1).
    #[allow(dead_code)]
    Refused,
    /// The campaign is held (3).
    #[allow(dead_code)]
    Held,
    /// A usage error already reported (2).
    Usage,
    /// `tally bench openai`: the endpoint failed its preflight request (3).
    PreflightFailed,
    /// `tally bench openai`: the run is not trustworthy; metrics were printed (4).
    Untrustworthy,
    /// Ctrl-C (130).
    #[allow(dead_code)]
    Interrupted,
}

impl From<Status> for ExitCode {
    fn from(status: Status) -> Self {
        ExitCode::from(match status {
            Status::Success => 0,
            Status::Refused => 1,
            Status::Held => 3,
            Status::Usage => 2,
            Status::PreflightFailed => 3,
            Status::Untrustworthy => 4,
            Status::Interrupted => 130,
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
    printer::error(&format!("{err:#}"));
    ExitCode::from(1)
}
