//! The `tally` binary: the only place that knows about the command line, the terminal and exit
//! codes.
//!
//! `main` parses the arguments ([`cli`]), runs one command ([`commands`]), and turns the outcome
//! into an exit code ([`exit`]) and, on failure, into one line on standard error
//! (`error: <FILE>: line N: <message>` or `error: <message>`). Library crates never print; all
//! output goes through [`printer`].

mod alloc;
mod cli;
mod commands;
mod evidence;
mod exit;
mod printer;
mod report;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    alloc::tune();
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return exit::from_clap(&err),
    };
    match commands::run(cli) {
        Ok(status) => status.into(),
        Err(err) => exit::from_error(&err),
    }
}
