//! `tally run [--until-idle]`: one per campaign at a time (a lock a killed process cannot leave
//! stuck) — or one per free worker slot with `evaluation_slots` above 1 on a PostgreSQL store
//! (`docs/team.md#workers`) — leftovers of a killed run (on the same slot) pruned first, then the
//! engine's loop. Exit 0 when idle or
//! stopped, 3 when held (the reason on stderr), 128 + the signal's number when SIGINT (130),
//! SIGTERM (143) or SIGHUP (129) interrupted it.

use std::path::PathBuf;

use tally_engine::RunEnd;
use tally_runner::prune_leftovers_keeping;

use super::brief::campaign_brief;
use super::context::{CampaignRunner, Workspace, engine};
use super::implement;
use super::implement::Launched;
use super::progress::{Progress, interrupt_token, interrupting_signal};
use crate::cli::{CampaignOptions, RunArgs};
use crate::exit::Status;
use crate::printer;

/// Removes the checkouts and stops the processes that a killed `tally run` or `tally init` left
/// (the caller holds the run lock, so none of them is in use), and says so. On Slurm, the jobs
/// recorded in the log directories `wanted` (of the evaluations the engine resumes) stay, with
/// their checkouts (`docs/team.md#adopting`); every other job of this slot is `scancel`led.
pub(super) fn clean_up_after_killed_commands(
    workspace: &Workspace,
    runner: &CampaignRunner,
    wanted: &[PathBuf],
) -> anyhow::Result<()> {
    let mut keep = Vec::new();
    if let CampaignRunner::Slurm(slurm) = runner {
        let settled = slurm.settle_leftovers(wanted).map_err(anyhow::Error::msg)?;
        if !settled.kept.is_empty() {
            printer::note(&format!(
                "adopting {} Slurm job(s) an earlier tally run left",
                settled.kept.len()
            ));
        }
        if !settled.cancelled.is_empty() {
            printer::note(&format!(
                "cancelled {} Slurm job(s) an earlier tally run left that nothing needs any more: {}",
                settled.cancelled.len(),
                settled.cancelled.join(", ")
            ));
        }
        keep = settled.kept;
    }
    let pruned = prune_leftovers_keeping(&workspace.git, runner.worktree_root(), &keep)?;
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
    // One worker slot: the run lock with one slot, the first free of several on PostgreSQL.
    let (_lock, slot) = workspace.lock_worker_slot(name, loaded.settings.evaluation_slots)?;
    let store = workspace.open_store_as_worker(slot)?;
    let runner = workspace.runner(&loaded.settings, slot)?;
    let progress = Progress::new();
    let engine = engine(&workspace, &*store, &runner, &loaded, &progress);
    // The jobs of the evaluations the engine resumes are adopted (docs/team.md#adopting).
    clean_up_after_killed_commands(&workspace, &runner, &engine.resumed_log_dirs()?)?;
    let cancel = interrupt_token();
    // Ideas and implementer runs live in a SQLite store; a PostgreSQL one runs the queue alone.
    let ideas = store.with_ideas();
    if ideas.is_none() && loaded.settings.implementer.is_some() {
        anyhow::bail!(
            "tally.toml has an [implementer] table, but ideas and implementer runs are kept only \
             in a SQLite store today and this campaign's store is PostgreSQL (--database / \
             TALLY_DATABASE_URL); remove the table or run the campaign on SQLite \
             (docs/implementers.md)"
        );
    }
    if let Some(ideas) = ideas {
        implement::settle_leftovers(&workspace, &loaded, ideas, &engine)?;
    }
    // Judge what is queued, then launch an implementer on the next ready idea, and again, until
    // no idea is ready (docs/implementers.md#runs).
    loop {
        match engine.run(true, &cancel)? {
            RunEnd::Idle => {}
            other => return report(other, name, &progress),
        }
        let Some(ideas) = ideas else { break };
        let campaign_brief = campaign_brief(&workspace, &loaded, &engine, Some(ideas))?;
        match implement::launch_next(
            &workspace,
            &loaded,
            ideas,
            &engine,
            &campaign_brief,
            &cancel,
        )? {
            None => break,
            Some(launched) if launched.interrupted => {
                let (signal, name) = interrupting_signal();
                printer::note(&format!(
                    "interrupted ({name}): the implementer was stopped, its work collected and queued"
                ));
                return Ok(Status::Interrupted(signal));
            }
            Some(Launched {
                refused: Some(end), ..
            }) => return report(end, name, &progress),
            Some(_) => {}
        }
    }
    let end = if args.until_idle {
        RunEnd::Idle
    } else {
        engine.run(false, &cancel)?
    };
    report(end, name, &progress)
}

fn report(end: RunEnd, name: &str, progress: &Progress) -> anyhow::Result<Status> {
    match end {
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
