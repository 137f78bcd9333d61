//! The evaluation slots one `tally run` works (`docs/team.md#slurm-slots`): with the local
//! executor one slot per process (the run lock, or one free worker slot of a PostgreSQL
//! campaign, `docs/team.md#workers`); with `[executor] kind = "slurm"` and `evaluation_slots`
//! above 1, every free slot at once, each worked by its own worker so that up to that many jobs
//! are in flight.
//!
//! A [`Crew`] holds the slots' locks and, per slot, a store connection that claims work as that
//! slot's worker and a runner that checks out under that slot's root. On SQLite the process
//! holds the campaign's run lock and runs all its slots itself; on PostgreSQL it takes each
//! free slot's advisory lock, so processes on several machines still add up to
//! `evaluation_slots`. [`Crew::run`] runs the first worker's engine on the calling thread and the
//! others' on threads of their own; an evaluation (both sides of its ABBA pairs) stays with the
//! worker that claimed it. When one worker's run ends held, stopped or interrupted, the others
//! finish the evaluation in hand and take no more; when one fails, the others' samples are
//! cancelled (re-queued, as on Ctrl-C) and the failure is the command's.

use std::sync::atomic::{AtomicBool, Ordering};

use tally_config::ExecutorSettings;
use tally_engine::{Engine, RunEnd};
use tally_runner::CancelToken;
use tally_store::{SqliteStore, Store};

use super::context::{CampaignLock, CampaignRunner, Database, Loaded, Workspace, engine};
use super::progress::Progress;
use super::run::clean_up_after_killed_commands;
use crate::printer;

/// One slot's worker: its store connection and its runner.
pub struct Worker {
    /// The store, claiming work as this slot's worker when the campaign has several.
    pub store: Box<dyn Store>,
    /// The runner, checking out under this slot's root.
    pub runner: CampaignRunner,
}

/// The slots this process works, with their locks held.
pub struct Crew {
    _locks: Vec<CampaignLock>,
    workers: Vec<Worker>,
    /// Set when one worker's run ends (held, stopped, interrupted, failed): the others drain.
    drain: AtomicBool,
}

impl Crew {
    /// Takes the slots this `tally run` works and prepares a worker for each, after removing
    /// what killed predecessors on those slots left — except the Slurm jobs of the evaluations
    /// the slot's engine resumes, which it adopts (`docs/team.md#adopting`).
    pub fn assemble(
        workspace: &Workspace,
        loaded: &Loaded,
        progress: &Progress,
    ) -> anyhow::Result<Self> {
        let settings = &loaded.settings;
        let slots = settings.evaluation_slots;
        let many = slots > 1 && matches!(settings.executor, ExecutorSettings::Slurm(_));
        let (locks, taken): (Vec<CampaignLock>, Vec<u32>) = if many {
            take_every_free_slot(workspace, &settings.name, slots)?
        } else {
            let (lock, slot) = workspace.lock_worker_slot(&settings.name, slots)?;
            (vec![lock], vec![slot])
        };
        let mut workers = Vec::with_capacity(taken.len());
        for &slot in &taken {
            let store: Box<dyn Store> = match workspace.database() {
                Database::Sqlite(path) if many => {
                    Box::new(SqliteStore::open(&path)?.as_worker(slot, slots))
                }
                _ => workspace.open_store_as_worker(slot)?,
            };
            let runner = workspace.runner(settings, slot)?;
            let resumed =
                engine(workspace, &*store, &runner, loaded, progress).resumed_log_dirs()?;
            clean_up_after_killed_commands(workspace, &runner, &resumed)?;
            workers.push(Worker { store, runner });
        }
        if workers.len() > 1 {
            let list: Vec<String> = taken.iter().map(u32::to_string).collect();
            printer::note(&format!(
                "working {} of the {slots} evaluation slots of campaign `{}` (slots {}): up to {} \
                 Slurm jobs at once",
                workers.len(),
                settings.name,
                list.join(", "),
                workers.len()
            ));
        }
        Ok(Self {
            _locks: locks,
            workers,
            drain: AtomicBool::new(false),
        })
    }

    /// The first worker: the one whose engine runs on the calling thread (and launches
    /// implementers).
    pub fn primary(&self) -> &Worker {
        &self.workers[0]
    }

    /// [`Engine::run`] on every worker at once: `primary` (an engine over
    /// [`primary`](Self::primary)) on this thread, an engine per other worker on a thread of its
    /// own. Returns when all have returned: the first error, else the end that matters most
    /// (interrupted, stopped, held, idle).
    pub fn run(
        &self,
        primary: &Engine<'_>,
        workspace: &Workspace,
        loaded: &Loaded,
        progress: &Progress,
        until_idle: bool,
        cancel: &CancelToken,
    ) -> anyhow::Result<RunEnd> {
        if self.workers.len() == 1 {
            return Ok(primary.run(until_idle, cancel)?);
        }
        // (The locks stay on this thread: a PostgreSQL connection is not shared.)
        let drain = &self.drain;
        let ended = |end: &tally_engine::Result<RunEnd>| match end {
            Ok(RunEnd::Idle) => {}
            Ok(_) => drain.store(true, Ordering::SeqCst),
            Err(_) => {
                drain.store(true, Ordering::SeqCst);
                cancel.cancel();
            }
        };
        let ends = std::thread::scope(|scope| {
            let others: Vec<_> = self.workers[1..]
                .iter()
                .map(|worker| {
                    let ended = &ended;
                    scope.spawn(move || {
                        let engine =
                            engine(workspace, &*worker.store, &worker.runner, loaded, progress)
                                .draining_on(drain);
                        let end = engine.run(until_idle, cancel);
                        ended(&end);
                        end
                    })
                })
                .collect();
            let first = primary.run(until_idle, cancel);
            ended(&first);
            let mut ends = vec![first];
            for other in others {
                ends.push(
                    other
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                );
            }
            ends
        });
        let mut most = RunEnd::Idle;
        for end in ends {
            let end = end?;
            if weight(&end) > weight(&most) {
                most = end;
            }
        }
        Ok(most)
    }

    /// The engine of the primary worker, set to drain with the others.
    pub fn primary_engine<'a>(
        &'a self,
        workspace: &Workspace,
        loaded: &'a Loaded,
        progress: &'a Progress,
    ) -> Engine<'a> {
        let primary = self.primary();
        engine(
            workspace,
            &*primary.store,
            &primary.runner,
            loaded,
            progress,
        )
        .draining_on(&self.drain)
    }
}

/// How much an end says about the run as a whole: an interruption over a stop over a hold over
/// idleness.
fn weight(end: &RunEnd) -> u8 {
    match end {
        RunEnd::Idle => 0,
        RunEnd::Held(_) => 1,
        RunEnd::Stopped(_) => 2,
        RunEnd::Interrupted => 3,
    }
}

/// Every free slot of the campaign: on SQLite all of them under the run lock; on PostgreSQL each
/// free slot's lock (at least one, or the error naming who holds them all).
fn take_every_free_slot(
    workspace: &Workspace,
    campaign: &str,
    slots: u32,
) -> anyhow::Result<(Vec<CampaignLock>, Vec<u32>)> {
    match workspace.database() {
        Database::Sqlite(_) => Ok((
            vec![workspace.lock_campaign(campaign)?],
            (0..slots).collect(),
        )),
        Database::Postgres(_) => {
            let (lock, slot) = workspace.lock_worker_slot(campaign, slots)?;
            let mut locks = vec![lock];
            let mut taken = vec![slot];
            while (taken.len() as u32) < slots {
                // The next free slot, until none is left (another worker holds the rest).
                match workspace.lock_worker_slot(campaign, slots) {
                    Ok((lock, slot)) => {
                        locks.push(lock);
                        taken.push(slot);
                    }
                    Err(_) => break,
                }
            }
            taken.sort_unstable();
            Ok((locks, taken))
        }
    }
}
