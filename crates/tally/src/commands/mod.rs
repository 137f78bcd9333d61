//! One module per command. Each takes its parsed arguments, does its work through the library
//! crates, has `tally-report` render the result, prints through [`crate::printer`], and returns
//! an exit [`Status`] or an error.

pub mod bench;
mod campaign;
mod guard;
mod store;
mod trace;

use crate::cli::{Cli, Command};
use crate::exit::Status;

/// Runs the command the user asked for.
pub fn run(cli: Cli) -> anyhow::Result<Status> {
    guard::refuse_inside_implementer(&cli.command, |name| std::env::var(name).ok())?;
    if matches!(
        cli.command,
        Command::Init(_) | Command::Run(_) | Command::Demo(_)
    ) {
        // Orphans of a benchmark re-parent to tally, so its process-group sweep can reap them.
        let _ = tally_runner::become_child_subreaper();
    }
    match cli.command {
        Command::Init(c) => campaign::init::run(&c.args, &c.options),
        Command::Candidate(c) => campaign::candidate::run(&c.command, &c.options),
        Command::Idea(c) => campaign::idea::run(&c.command, &c.options),
        Command::Implementer(c) => campaign::implementer::run(&c.command, &c.options),
        Command::Run(c) => campaign::run::run(&c.args, &c.options),
        Command::Status(c) => campaign::status::run(&c.args, &c.options),
        Command::Measurement(c) => campaign::measurement::run(&c.command, &c.options),
        Command::Campaign(c) => campaign::resume::run(&c.command, &c.options),
        Command::Plugins(c) => campaign::plugins::run(&c.args, &c.options),
        Command::Brief(c) => campaign::brief::run(&c.args, &c.options),
        Command::Demo(args) => campaign::demo::run(&args),
        Command::Trace(command) => trace::run(command),
        Command::Bench(command) => bench::run(command),
        Command::Store(command) => store::run(&command),
    }
}
