//! `tally run [--until-idle]`: one per campaign at a time (a lock a killed process cannot leave
//! stuck), leftovers of a killed run pruned first, then the engine's loop. Exit 0 when idle or
//! stopped, 3 when held (the reason on stderr), 128 + the signal's number when SIGINT (130),
//! SIGTERM (143) or SIGHUP (129) interrupted it.

use tally_engine::RunEnd;
use tally_runner::prune_leftovers;

use super::context::{Workspace, engine};
use super::progress::{Progress, interrupt_token, interrupting_signal};
use crate::cli::{CampaignOptions, RunArgs};
use crate::exit::Status;
use crate::printer;

/// Removes the checkouts and stops the processes that a killed `tally run` or `tally init` left
/// (the caller holds the run lock, so none of them is in use), and says so.
pub(super) fn clean_up_after_killed_commands(
    workspace: &Workspace,
    runner: &tally_runner::WorktreeRunner,
) -> anyhow::Result<()> {
    let pruned = prune_leftovers(&workspace.git, runner.worktree_root())?;
    if !pruned.directories.is_empty() || !pruned.killed.is_empty() {
        printer::note(&format!(
            "removed {} checkout(s) and stopped {} process(es) left by an earlier tally run",
            pruned.directories.len(),
            pruned.killed.len()
        ));
    }
    Ok(())
}

/// Runs the command.
pub fn run(args: &RunArgs, options: &CampaignOptions) -> anyhow::Result<Status> {
    let workspace = Workspace::discover(options)?;
    let loaded = workspace.load()?;
    workspace.refuse_uncommitted_evaluation(&loaded)?;
    workspace.ensure_tally_dir()?;
    let name = &loaded.settings.name;
    let _lock = workspace.lock_campaign(name)?;
    let store = workspace.open_store()?;
    let runner = workspace.runner(name)?;
    clean_up_after_killed_commands(&workspace, &runner)?;
    let progress = Progress::new();
    let engine = engine(&workspace, &*store, &runner, &loaded, &progress);
    let cancel = interrupt_token();
    match engine.run(args.until_idle, &cancel)? {
        RunEnd::Idle => {
            printer::note("idle: nothing queued");
            Ok(Status::Success)
        }
        RunEnd::Stopped(reason) => {
            printer::note(&format!(
                "campaign `{name}` stopped: {reason}\n(change its limit in [plugins.stop_rule] of tally.toml to go on)"
            ));
            Ok(Status::Success)
        }
        RunEnd::Held(reason) => {
            printer::note(&format!(
                "campaign `{name}` is held: {reason}\n(raise the limit in tally.toml, or fix what the reason names; every `tally run` asks again)"
            ));
            Ok(Status::Held)
        }
        RunEnd::Interrupted => {
            let (signal, name) = interrupting_signal();
            printer::note(&format!(
                "interrupted ({name}): {}",
                if progress.sample_in_flight() {
                    "the sample in flight is recorded as failed and its candidate stays queued"
                } else {
                    "no sample was running; nothing was recorded"
                }
            ));
            Ok(Status::Interrupted(signal))
        }
    }
}
