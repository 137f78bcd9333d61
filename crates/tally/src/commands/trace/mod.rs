//! `tally trace ...`: the evidence commands (contract: `docs/cli.md`, after
//! `docs/cli.md`).

mod account;
mod align;
mod convert;
mod import;
mod output;
mod pages;
mod parse_only;
mod perfetto;
mod shares;
mod synth;

use crate::cli::TraceCommand;
use crate::exit::Status;

/// Runs one `tally trace` subcommand.
pub fn run(command: TraceCommand) -> anyhow::Result<Status> {
    pages::prefer_small();
    match command {
        TraceCommand::Account(args) => account::run(&args),
        TraceCommand::Align(args) => align::run(&args),
        TraceCommand::Shares(args) => shares::run(&args),
        TraceCommand::Convert(args) => convert::run(&args),
        TraceCommand::Synth(args) => synth::run(&args),
        TraceCommand::Import(command) => import::run(&command),
        TraceCommand::Export(crate::cli::ExportCommand::Perfetto(args)) => perfetto::run(&args),
        TraceCommand::Link(args) => import::link(&args),
        TraceCommand::ParseOnly(args) => parse_only::run(&args),
    }
}
