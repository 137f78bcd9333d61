//! Exit codes: one table for every tally command (documented in `docs/cli.md`).
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success (including `--help`, `--version`, a campaign that is idle or stopped) |
//! | 1 | failure, bad input or a refusal: unreadable or invalid files, config or store problems, values the command refuses |
//! | 2 | usage: unknown flag, missing argument, malformed command line |
//! | 3 | held: a campaign command returned because the campaign is held |
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
    /// The campaign is held (3).
    Held,
    /// Ctrl-C (130).
    Interrupted,
}

impl From<Status> for ExitCode {
    fn from(status: Status) -> Self {
        ExitCode::from(match status {
            Status::Success => 0,
            Status::Held => 3,
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
