//! `tally run [--until-idle]`: one per campaign at a time (a lock a killed process cannot leave
//! stuck) — or one per free worker slot with `evaluation_slots` above 1 on a PostgreSQL store
//! (`docs/team.md#workers`), every free slot at once with Slurm (`slots`,
//! `docs/team.md#slurm-slots`) — leftovers of a killed run (on the same slots) pruned first,
//! then the engine's loop. Exit 0 when idle or
//! stopped, 3 when held (the reason on stderr), 128 + the signal's number when SIGINT (130),
//! SIGTERM (143) or SIGHUP (129) interrupted it.

use std::path::PathBuf;

use tally_engine::RunEnd;
use tally_runner::prune_leftovers_keeping;

use super::context::{CampaignRunner, Workspace};
use super::implement;
use super::implement::Driven;
use super::progress::{Progress, interrupt_token, interrupting_signal};
use super::slots::Crew;
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
    refuse_implementers_with_several_slots(&loaded.settings)?;
    workspace.refuse_uncommitted_evaluation(&loaded)?;
    workspace.ensure_tally_dir()?;
    let name = &loaded.settings.name;
    // The worker slots this process works: the run lock with one slot, the first free of several
    // on PostgreSQL, every free one with Slurm (docs/team.md#slurm-slots); the Slurm jobs of the
    // evaluations a slot's engine resumes are adopted (docs/team.md#adopting).
    let progress = Progress::new();
    let crew = Crew::assemble(&workspace, &loaded, &progress)?;
    let engine = crew.primary_engine(&workspace, &loaded, &progress);
    let cancel = interrupt_token();
    let run_all =
        |until_idle| crew.run(&engine, &workspace, &loaded, &progress, until_idle, &cancel);
    // Both stores keep ideas and implementer runs (docs/implementers.md#ideas).
    let ideas = crew.primary().store.with_ideas();
    if ideas.is_none() && loaded.settings.implementer.is_some() {
        anyhow::bail!(
            "tally.toml has an [implementer] table, but this campaign's store keeps no ideas \
             or implementer runs; remove the table (docs/implementers.md)"
        );
    }
    if let Some(ideas) = ideas {
        implement::settle_leftovers(&workspace, &loaded, ideas, &engine, &cancel)?;
    }
    // Without an [implementer] table, every worker slot judges the queue at once.
    let (Some(ideas), Some(settings)) = (ideas, loaded.settings.implementer.as_ref()) else {
        return report(run_all(args.until_idle)?, name, &progress);
    };
    // Judge what is queued and launch implementers on ready ideas, as `overlap` and
    // `max_concurrent` allow, until nothing runs, is queued or is ready
    // (docs/implementers.md#runs, docs/implementers.md#parallel).
    match implement::drive(&workspace, &loaded, settings, ideas, &engine, &cancel)? {
        Driven::Idle => {}
        Driven::End(end) => return report(end, name, &progress),
        Driven::AgentsInterrupted(agents) => {
            let (signal, name) = interrupting_signal();
            printer::note(&format!(
                "interrupted ({name}): {agents} implementer(s) stopped, their work collected and queued{}",
                if progress.samples_in_flight() > 0 {
                    "; the sample in flight is recorded as failed and its candidate stays queued"
                } else {
                    ""
                }
            ));
            return Ok(Status::Interrupted(signal));
        }
    }
    let end = if args.until_idle {
        RunEnd::Idle
    } else {
        let end = run_all(false)?;
        implement::apply_notes(&loaded, ideas)?;
        end
    };
    report(end, name, &progress)
}

/// Implementer runs are driven by one `tally run` per campaign, whose loop judges with one
/// evaluation slot (`docs/team.md#implementers`): on a store shared by several workers a second
/// worker would take the first one's running agents for leftovers of a killed run and collect
/// them, and the several slots one run works with Slurm are not driven beside agents. Refused
/// before any slot is taken or any job touched.
fn refuse_implementers_with_several_slots(settings: &tally_config::Settings) -> anyhow::Result<()> {
    let slots = settings.evaluation_slots;
    if settings.implementer.is_some() && slots > 1 {
        anyhow::bail!(
            "tally.toml: an [implementer] table with evaluation_slots = {slots}: a campaign's \
             implementers are driven by one `tally run`, which judges one evaluation at a time \
             (several runs on a shared store would collect each other's running agents, and \
             the slots one run works with Slurm are not driven beside agents); set \
             evaluation_slots = 1 (docs/team.md#implementers)"
        );
    }
    Ok(())
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
                match progress.samples_in_flight() {
                    0 => "no sample was running; nothing was recorded".to_owned(),
                    1 => "the sample in flight is recorded as failed and its candidate stays \
                          queued"
                        .to_owned(),
                    n => format!(
                        "the {n} samples in flight are recorded as failed and their candidates \
                         stay queued"
                    ),
                }
            ));
            Ok(Status::Interrupted(signal))
        }
    }
}
