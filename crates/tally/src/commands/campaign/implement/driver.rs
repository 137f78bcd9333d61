//! The implementer driver of `tally run` (`docs/implementers.md#parallel`): agents run in
//! threads of their own while this loop, on the calling thread, collects each agent that ended,
//! launches the next when the gate allows it, and judges the queue one evaluation at a time.
//! Collecting, launching and judging all happen here, one after the other, so they never race
//! and evaluations stay one at a time whatever the agents do. A judged unit that moved the head
//! is followed by `remerge::rescan`, so no pending agent candidate is judged without the head.
//!
//! `overlap = "serial"` (the default): one agent, and nothing judged while it works — the queue
//! is judged, then an agent runs to its end, then its commits are judged. `overlap =
//! "parallel"`: up to `max_concurrent` agents at once, the queue judged meanwhile.
//!
//! A hold lets the working agents finish (their commits wait pending). A stop — the stop rule
//! before an evaluation or a launch, or asked when the queue runs dry while agents work — asks
//! each working agent to stop: its wrap-up file at once, SIGTERM `stop_grace` later; it is
//! collected as usual and its run ends `stopped` (`docs/implementers.md#stop-grace`). In serial
//! nothing is judged or launched while an agent works, so a stop never meets one.

use std::sync::mpsc;
use std::thread::Scope;
use std::time::Duration;

use tally_config::{ImplementerSettings, Overlap};
use tally_engine::{Engine, RunEnd};
use tally_process::{CancelToken, End};
use tally_store::ImplementerStore;

use super::super::brief::campaign_brief;
use super::super::context::{Loaded, Workspace};
use super::launch::{self, Gate, Prepared};
use super::{agent, finish, remerge};

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

/// What every step of the loop works with.
struct Driver<'a> {
    workspace: &'a Workspace,
    loaded: &'a Loaded,
    store: &'a dyn ImplementerStore,
    engine: &'a Engine<'a>,
    cancel: &'a CancelToken,
}

/// Drives implementers and the queue until idle, held, stopped or interrupted.
pub fn drive(
    workspace: &Workspace,
    loaded: &Loaded,
    settings: &ImplementerSettings,
    store: &dyn ImplementerStore,
    engine: &Engine<'_>,
    cancel: &CancelToken,
) -> anyhow::Result<Driven> {
    let slots = match settings.overlap {
        Overlap::Parallel => Some(settings.max_concurrent.max(1) as usize),
        Overlap::Serial => None,
    };
    let driver = Driver {
        workspace,
        loaded,
        store,
        engine,
        cancel,
    };
    // The head may have moved since the last `tally run` (a verdict set by hand): pending agent
    // candidates it left behind are merged onto it before anything is judged.
    remerge::rescan(workspace, store, engine)?;
    std::thread::scope(|scope| {
        let driven = turns(scope, &driver, slots);
        if driven.is_err() {
            // The scope waits for every agent's thread: stop them rather than wait out their
            // timeouts (the next `tally run` collects what they leave, as after a kill).
            cancel.cancel();
        }
        driven
    })
}

/// The loop; `slots` is `max_concurrent` with `overlap = "parallel"`, `None` in serial.
fn turns<'scope>(
    scope: &'scope Scope<'scope, '_>,
    c: &Driver<'_>,
    slots: Option<usize>,
) -> anyhow::Result<Driven> {
    let parallel = slots.is_some();
    let slots = slots.unwrap_or(1);
    let (ended_tx, ended_rx) = mpsc::channel::<(u32, agent::Ended)>();
    let mut running: Vec<Prepared> = Vec::new();
    let mut state = LoopState::default();
    loop {
        // Collect every agent that ended.
        while let Ok((number, ended)) = ended_rx.try_recv() {
            let stopped = collect(c, &mut running, number, ended, state.stop_reason())?;
            state.after_collect(stopped);
        }
        if c.cancel.is_cancelled() {
            // The agents share the token: each is being killed. Wait for and collect all.
            while !running.is_empty() {
                let (number, ended) = ended_rx.recv()?;
                let stopped = collect(c, &mut running, number, ended, state.stop_reason())?;
                state.after_collect(stopped);
            }
            return Ok(if state.stopped > 0 {
                Driven::AgentsInterrupted(state.stopped)
            } else {
                Driven::End(RunEnd::Interrupted)
            });
        }
        if let Some(end) = &state.ending {
            // Held or stopped: no launch, no evaluation. Held: the running agents finish.
            // Stopped: each is asked to stop (once), then collected.
            if running.is_empty() {
                return Ok(Driven::End(end.clone()));
            }
            if let RunEnd::Stopped(why) = end {
                for prepared in &running {
                    prepared.stop(why);
                }
            }
            let reason = state.stop_reason();
            if let Some(stopped) = wait_for_one(c, &ended_rx, &mut running, reason)? {
                state.after_collect(stopped);
            }
            continue;
        }
        // Launch when a slot is free and the overlap allows it: in serial, only with the queue
        // judged and nothing running.
        let may_launch = running.len() < slots
            && state.refused.is_none()
            && !state.no_idea
            && (parallel || (state.queue_empty && running.is_empty()));
        if may_launch {
            match launch::gate(c.loaded, c.store, c.engine, c.cancel)? {
                Gate::Nothing => state.no_idea = true,
                Gate::Refused(end) => {
                    if running.is_empty() && state.queue_empty {
                        return Ok(Driven::End(end));
                    }
                    if matches!(end, RunEnd::Stopped(_)) {
                        // The campaign is stopped: the working agents are asked to stop.
                        state.ending = Some(end);
                        continue;
                    }
                    // Asked again once the agents ended and the queue is judged.
                    state.refused = Some(end);
                }
                Gate::Go(idea) => {
                    let brief = campaign_brief(c.workspace, c.loaded, c.engine, Some(c.store))?;
                    let prepared = launch::prepare(c.workspace, c.loaded, c.store, *idea, &brief)?;
                    if let Some(error) = prepared.failed.clone() {
                        settle(c, &prepared, Err(error), String::new(), None)?;
                        state.after_collect(false);
                        continue;
                    }
                    let number = prepared.run.number;
                    let (tx, cancel, this) = (ended_tx.clone(), c.cancel.clone(), prepared.clone());
                    running.push(prepared);
                    scope.spawn(move || {
                        let ended = this.run_agent(&cancel);
                        // The loop outlives every thread of the scope: the send succeeds.
                        let _ = tx.send((number, ended));
                    });
                    continue;
                }
            }
        }
        // Judge one piece of queued work: in serial, only with no agent running.
        if (parallel || running.is_empty()) && !state.queue_empty {
            let head = c.engine.campaign()?.head;
            let judged = c.engine.judge_one(c.cancel)?;
            // A judged agent commit with a `Tally-Note` trailer takes its note now.
            super::apply_notes(c.loaded, c.store)?;
            if c.engine.campaign()?.head != head {
                // Pending agent candidates the new head left behind are merged onto it.
                remerge::rescan(c.workspace, c.store, c.engine)?;
            }
            match judged {
                None => {}
                Some(RunEnd::Idle) => {
                    state.queue_empty = true;
                    // The queue ran dry while agents work: a stop limit the work just judged
                    // reached must not wait for them (they may work for hours).
                    if !running.is_empty() {
                        state.ending = c.engine.stop_reached()?;
                    }
                }
                // Ctrl-C: handled at the top of the loop.
                Some(RunEnd::Interrupted) => {}
                Some(end) => state.ending = Some(end),
            }
            continue;
        }
        if running.is_empty() {
            // Nothing runs and the queue is judged: ask a refused launch once more, now that
            // nothing else can change the answer; else idle.
            if state.refused.take().is_some() {
                state.no_idea = false;
                continue;
            }
            return Ok(Driven::Idle);
        }
        if let Some(stopped) = wait_for_one(c, &ended_rx, &mut running, None)? {
            state.after_collect(stopped);
        }
    }
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
    /// Why the campaign stopped, once the stop rule stopped it.
    fn stop_reason(&self) -> Option<String> {
        match &self.ending {
            Some(RunEnd::Stopped(why)) => Some(why.clone()),
            _ => None,
        }
    }

    /// An agent ended (`stopped`: by Ctrl-C or SIGTERM): its commits may be queued and its idea
    /// ready again.
    fn after_collect(&mut self, stopped: bool) {
        self.queue_empty = false;
        self.no_idea = false;
        self.stopped += usize::from(stopped);
    }
}

/// Waits a little for one agent to end and collects it; `Some` (whether Ctrl-C stopped it)
/// when one was collected.
fn wait_for_one(
    c: &Driver<'_>,
    ended_rx: &mpsc::Receiver<(u32, agent::Ended)>,
    running: &mut Vec<Prepared>,
    stop_reason: Option<String>,
) -> anyhow::Result<Option<bool>> {
    match ended_rx.recv_timeout(WAIT) {
        Ok((number, ended)) => collect(c, running, number, ended, stop_reason).map(Some),
        Err(_) => Ok(None),
    }
}

/// Collects, queues and settles the ended run `number` (ended `stopped` when the campaign's
/// stop, for `stop_reason`, reached its agent); true when Ctrl-C or SIGTERM stopped its agent.
fn collect(
    c: &Driver<'_>,
    running: &mut Vec<Prepared>,
    number: u32,
    ended: agent::Ended,
    stop_reason: Option<String>,
) -> anyhow::Result<bool> {
    let Some(at) = running.iter().position(|p| p.run.number == number) else {
        return Ok(false);
    };
    let prepared = running.swap_remove(at);
    let stopped = matches!(ended.end, Ok(End::Cancelled));
    let stopped_for = stop_reason.filter(|_| ended.stopped);
    settle(
        c,
        &prepared,
        ended.end,
        ended.stderr_tail,
        stopped_for.as_deref(),
    )?;
    Ok(stopped)
}

/// `super::finish` for a prepared run.
fn settle(
    c: &Driver<'_>,
    prepared: &Prepared,
    end: Result<End, String>,
    stderr_tail: String,
    stopped_for: Option<&str>,
) -> anyhow::Result<()> {
    finish(
        c.workspace,
        c.loaded,
        c.store,
        c.engine,
        &prepared.campaign,
        &prepared.run,
        Some(&prepared.idea),
        end,
        stderr_tail,
        stopped_for,
    )?;
    Ok(())
}
