//! The `tally` binary: the only place that knows about the command line, the terminal and exit
//! codes.
//!
//! `main` parses the arguments ([`cli`]), runs one command ([`commands`]), and turns the outcome
//! into an exit code ([`exit`]) and, on failure, into one line on standard error
//! (`error: <FILE>: line N: <message>` or `error: <message>`). Library crates never print; all
//! output goes through [`printer`].
//!
//! What the binary does not do: render. Commands wire — parse the arguments, call the libraries,
//! hand typed results to `tally-report` and print the text it returns (or stream its writer
//! through [`printer`]); only one-line messages (what was queued, written or recorded, notes on
//! standard error) are worded here.

mod cli;
mod commands;
mod evidence;
mod exit;
mod printer;
mod stdin;

use std::process::ExitCode;

use clap::Parser;

/// mimalloc rather than the system allocator: bulk reads (100,000 measurements for `tally
/// status`) allocate many small strings and maps, where glibc malloc and its page faults cost
/// ~100 ms of ~270 ms (docs/performance.md). `tally trace` turns transparent huge pages off for
/// its process (`commands/trace/pages.rs`); every other command keeps them.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return exit::from_clap(&err),
    };
    match commands::run(cli) {
        Ok(status) => status.into(),
        Err(err) => exit::from_error(&err),
    }
}
