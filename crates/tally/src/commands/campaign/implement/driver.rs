//! The implementer driver of `tally run` (`docs/implementers.md#parallel`): agents run in
//! threads of their own while this loop, on the calling thread, collects each agent that ended,
//! launches the next when the gate allows it, and judges the queue one evaluation at a time.
//! Collecting, launching and judging all happen here, one after the other, so they never race
//! and evaluations stay one at a time whatever the agents do.
//!
//! `overlap = "serial"` (the default): one agent, and nothing judged while it works — the queue
//! is judged, then an agent runs to its end, then its commits are judged. `overlap =
//! "parallel"`: up to `max_concurrent` agents at once, the queue judged meanwhile.

use std::sync::mpsc;
use std::time::Duration;

use tally_config::Overlap;
use tally_engine::{Engine, RunEnd};
use tally_process::{CancelToken, End};
use tally_store::ImplementerStore;

use super::super::brief::campaign_brief;
use super::super::context::{Loaded, Workspace};
use super::launch::{self, Gate, Prepared};
use super::{agent, finish};

/// How long the loop waits for an agent's end when it has nothing else to do.
const WAIT: Duration = Duration::from_millis(200);

/// Why the driver returned.
pub enum Driven {
    /// Nothing runs, nothing is queued, no idea is ready.
    Idle,
    /// The stop rule held or stopped the campaign, or judging was interrupted with no agent
    /// running; every agent had ended and was collected first.
    End(RunEnd),
    /// Ctrl-C or SIGTERM while this many agents ran: each was killed, collected and its
    /// commits queued.
    AgentsInterrupted(usize),
}

/// Drives implementers and the queue until idle, held, stopped or interrupted.
pub fn drive(
    workspace: &Workspace,
    loaded: &Loaded,
    store: &dyn ImplementerStore,
    engine: &Engine<'_>,
    cancel: &CancelToken,
) -> anyhow::Result<Driven> {
    let Some(settings) = loaded.settings.implementer.as_ref() else {
        return Ok(match engine.run(true, cancel)? {
            RunEnd::Idle => Driven::Idle,
            end => Driven::End(end),
        });
    };
    let parallel = settings.overlap == Overlap::Parallel;
    let slots = if parallel {
        settings.max_concurrent.max(1) as usize
    } else {
        1
    };
    std::thread::scope(|scope| {
        let (ended_tx, ended_rx) = mpsc::channel::<(u32, agent::Ended)>();
        let mut running: Vec<Prepared> = Vec::new();
        let mut loop_state = LoopState::default();
        loop {
            // Collect every agent that ended.
            while let Ok((number, ended)) = ended_rx.try_recv() {
                let stopped = collect(
                    workspace,
                    loaded,
                    store,
                    engine,
                    &mut running,
                    number,
                    ended,
                )?;
                loop_state.after_collect(stopped);
            }
            if cancel.is_cancelled() {
                // The agents share the token: each is being killed. Wait for and collect all.
                while !running.is_empty() {
                    let (number, ended) = ended_rx.recv()?;
                    let stopped = collect(
                        workspace,
                        loaded,
                        store,
                        engine,
                        &mut running,
                        number,
                        ended,
                    )?;
                    loop_state.after_collect(stopped);
                }
                return Ok(if loop_state.stopped > 0 {
                    Driven::AgentsInterrupted(loop_state.stopped)
                } else {
                    Driven::End(RunEnd::Interrupted)
                });
            }
            if let Some(end) = &loop_state.ending {
                // Held or stopped: no launch, no evaluation; the running agents finish.
                if running.is_empty() {
                    return Ok(Driven::End(end.clone()));
                }
                if let Some(stopped) =
                    wait_for_one(&ended_rx, workspace, loaded, store, engine, &mut running)?
                {
                    loop_state.after_collect(stopped);
                }
                continue;
            }
            // Launch when a slot is free and the overlap allows it: in serial, only with the
            // queue judged and nothing running.
            let may_launch = running.len() < slots
                && !loop_state.launch_refused()
                && !loop_state.no_idea
                && (parallel || (loop_state.queue_empty && running.is_empty()));
            if may_launch {
                match launch::gate(loaded, store, engine, cancel)? {
                    Gate::Nothing => loop_state.no_idea = true,
                    Gate::Refused(end) => {
                        if running.is_empty() && loop_state.queue_empty {
                            return Ok(Driven::End(end));
                        }
                        // Asked again once the agents ended and the queue is judged.
                        loop_state.refused = Some(end);
                    }
                    Gate::Go(idea) => {
                        let brief = campaign_brief(workspace, loaded, engine, Some(store))?;
                        let prepared = launch::prepare(workspace, loaded, store, *idea, &brief)?;
                        if let Some(error) = prepared.failed.clone() {
                            let Prepared {
                                campaign,
                                run,
                                idea,
                                ..
                            } = prepared;
                            finish(
                                workspace,
                                loaded,
                                store,
                                engine,
                                &campaign,
                                &run,
                                Some(&idea),
                                Err(error),
                                String::new(),
                            )?;
                            loop_state.after_collect(false);
                            continue;
                        }
                        let number = prepared.run.number;
                        let tx = ended_tx.clone();
                        let agent_cancel = cancel.clone();
                        let this = prepared.clone();
                        running.push(prepared);
                        scope.spawn(move || {
                            let ended = this.run_agent(&agent_cancel);
                            // The loop outlives every thread of the scope: the send succeeds.
                            let _ = tx.send((number, ended));
                        });
                        continue;
                    }
                }
            }
            // Judge one piece of queued work: in serial, only with no agent running.
            if (parallel || running.is_empty()) && !loop_state.queue_empty {
                match engine.judge_one(cancel)? {
                    None => {}
                    Some(RunEnd::Idle) => loop_state.queue_empty = true,
                    // Ctrl-C: handled at the top of the loop.
                    Some(RunEnd::Interrupted) => {}
                    Some(end) => loop_state.ending = Some(end),
                }
                continue;
            }
            if running.is_empty() {
                // Nothing runs and the queue is judged: ask a refused launch once more, now
                // that nothing else can change the answer; else idle.
                if loop_state.refused.take().is_some() {
                    loop_state.no_idea = false;
                    continue;
                }
                return Ok(Driven::Idle);
            }
            if let Some(stopped) =
                wait_for_one(&ended_rx, workspace, loaded, store, engine, &mut running)?
            {
                loop_state.after_collect(stopped);
            }
        }
    })
}

/// What the loop remembers between turns.
#[derive(Default)]
struct LoopState {
    /// Judging found nothing queued (since the last collection).
    queue_empty: bool,
    /// No idea was ready (since the last collection).
    no_idea: bool,
    /// The gate refused a launch while agents ran or work was queued.
    refused: Option<RunEnd>,
    /// The stop rule held or stopped the campaign before an evaluation.
    ending: Option<RunEnd>,
    /// Agents that Ctrl-C or SIGTERM stopped.
    stopped: usize,
}

impl LoopState {
    /// An agent ended: its commits may be queued and its idea ready again.
    /// `stopped`: the agent was stopped by Ctrl-C or SIGTERM.
    fn after_collect(&mut self, stopped: bool) {
        self.queue_empty = false;
        self.no_idea = false;
        self.stopped += usize::from(stopped);
    }

    fn launch_refused(&self) -> bool {
        self.refused.is_some()
    }
}

/// Waits a little for one agent to end and collects it; `Some` (whether Ctrl-C stopped it)
/// when one was collected.
fn wait_for_one(
    ended_rx: &mpsc::Receiver<(u32, agent::Ended)>,
    workspace: &Workspace,
    loaded: &Loaded,
    store: &dyn ImplementerStore,
    engine: &Engine<'_>,
    running: &mut Vec<Prepared>,
) -> anyhow::Result<Option<bool>> {
    match ended_rx.recv_timeout(WAIT) {
        Ok((number, ended)) => {
            collect(workspace, loaded, store, engine, running, number, ended).map(Some)
        }
        Err(_) => Ok(None),
    }
}

/// Collects, queues and settles the ended run `number` (`super::finish`); true when Ctrl-C or
/// SIGTERM stopped its agent.
fn collect(
    workspace: &Workspace,
    loaded: &Loaded,
    store: &dyn ImplementerStore,
    engine: &Engine<'_>,
    running: &mut Vec<Prepared>,
    number: u32,
    ended: agent::Ended,
) -> anyhow::Result<bool> {
    let Some(at) = running.iter().position(|p| p.run.number == number) else {
        return Ok(false);
    };
    let stopped = matches!(ended.end, Ok(End::Cancelled));
    let prepared = running.swap_remove(at);
    finish(
        workspace,
        loaded,
        store,
        engine,
        &prepared.campaign,
        &prepared.run,
        Some(&prepared.idea),
        ended.end,
        ended.stderr_tail,
    )?;
    Ok(stopped)
}
