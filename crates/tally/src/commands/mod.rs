//! One module per command. Each takes its parsed arguments, does its work through the library
//! crates, prints through [`crate::printer`], and returns an exit [`Status`] or an error.

pub mod bench;
mod campaign;
mod trace;

use crate::cli::{Cli, Command};
use crate::exit::Status;

/// Runs the command the user asked for.
pub fn run(cli: Cli) -> anyhow::Result<Status> {
    if matches!(
        cli.command,
        Command::Init(_) | Command::Run(_) | Command::Demo(_)
    ) {
        // Orphans of a benchmark re-parent to tally, so its process-group sweep can reap them.
        let _ = tally_runner::become_child_subreaper();
    }
    match cli.command {
        Command::Init(args) => campaign::init::run(&args, &cli.options),
        Command::Candidate(command) => campaign::candidate::run(&command, &cli.options),
        Command::Run(args) => campaign::run::run(&args, &cli.options),
        Command::Status(args) => campaign::status::run(&args, &cli.options),
        Command::Measurement(command) => campaign::measurement::run(&command, &cli.options),
        Command::Campaign(command) => campaign::resume::run(&command, &cli.options),
        Command::Plugins(args) => campaign::plugins::run(&args, &cli.options),
        Command::Brief(args) => campaign::brief::run(&args, &cli.options),
        Command::Demo(args) => campaign::demo::run(&args),
        Command::Trace(command) => trace::run(command),
        Command::Bench(command) => bench::run(command),
    }
}
