//! The closed loop: C workers, each sending its next request when its previous one ended
//! (intended arrival = that moment, so dispatch lag is ≈ 0 by construction).
//!
//! Count bound: indices 0..N are shared out. Duration bound: the load runs from the phase
//! start; a request is warm-up before `warm`, measured inside the window, and cool-down after
//! it. Cool-down keeps C in flight until the last measured request has ended, so no measured
//! request sees a lighter server than its peers; cool-down requests are then cancelled. A stop
//! request ends every worker's loop and closes the window at that moment. The C connections
//! are dialled before the phase starts, so the first wave's latencies and the window hold no
//! connects (docs/bench.md#connections).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use tokio::sync::watch;

use super::request::{plan, send};
use super::stop::clip_window;
use super::{PhaseBound, PhaseResult, Shared, warm_pool};
use crate::record::Phase;

struct Loop {
    shared: Arc<Shared>,
    bound: PhaseBound,
    start: Instant,
    next: AtomicU64,
    cohort_in_flight: AtomicU64,
    cohort_done: watch::Sender<bool>,
}

impl Loop {
    fn window_end(&self) -> Option<Instant> {
        match self.bound {
            PhaseBound::Duration { warm, window, .. } => Some(self.start + warm + window),
            PhaseBound::Count { .. } => None,
        }
    }

    fn phase_at(&self, now: Instant) -> Phase {
        match self.bound {
            PhaseBound::Count { phase, .. } => phase,
            PhaseBound::Duration { warm, window, .. } => {
                if now < self.start + warm {
                    Phase::Warmup
                } else if now < self.start + warm + window {
                    Phase::Measured
                } else {
                    Phase::Cooldown
                }
            }
        }
    }

    fn count_limit(&self) -> Option<u64> {
        match self.bound {
            PhaseBound::Count { requests, .. } => Some(requests),
            PhaseBound::Duration { cap, .. } => cap,
        }
    }

    async fn worker(self: Arc<Self>, worker: u32) -> Vec<crate::record::RequestRecord> {
        let mut records = Vec::new();
        let drain_deadline = self
            .window_end()
            .map(|end| end + self.shared.config.drain_timeout);
        loop {
            if self.shared.config.stop.is_stopping() {
                break;
            }
            let now = Instant::now();
            let phase = self.phase_at(now);
            if phase == Phase::Cooldown && self.cohort_in_flight.load(Ordering::SeqCst) == 0 {
                let _ = self.cohort_done.send(true);
                break;
            }
            let index = self.next.fetch_add(1, Ordering::SeqCst);
            if self.count_limit().is_some_and(|n| index >= n) {
                break;
            }
            let (mut record, body) = plan(&self.shared, phase, index, now);
            record.worker = Some(worker);
            let cancel = (phase == Phase::Cooldown).then(|| self.cohort_done.subscribe());
            let measured = phase == Phase::Measured;
            if measured {
                self.cohort_in_flight.fetch_add(1, Ordering::SeqCst);
            }
            let deadline = if measured { drain_deadline } else { None };
            let record = send(&self.shared, record, body, deadline, cancel).await;
            if measured
                && self.cohort_in_flight.fetch_sub(1, Ordering::SeqCst) == 1
                && self.window_end().is_some_and(|end| Instant::now() >= end)
            {
                let _ = self.cohort_done.send(true);
            }
            records.push(record);
        }
        records
    }
}

/// Runs one closed-loop phase.
pub async fn run(shared: Arc<Shared>, concurrency: u32, bound: PhaseBound) -> PhaseResult {
    let (cohort_done, _) = watch::channel(false);
    warm_pool(&shared, concurrency.max(1) as usize).await;
    let start = Instant::now();
    let state = Arc::new(Loop {
        shared: shared.clone(),
        bound,
        start,
        next: AtomicU64::new(0),
        cohort_in_flight: AtomicU64::new(0),
        cohort_done,
    });
    let mut workers = tokio::task::JoinSet::new();
    for worker in 0..concurrency.max(1) {
        workers.spawn(state.clone().worker(worker));
    }
    let mut records = Vec::new();
    while let Some(result) = workers.join_next().await {
        if let Ok(mut batch) = result {
            records.append(&mut batch);
        }
    }
    let end = Instant::now();
    records.sort_by_key(|r| (r.intended_ns, r.index));
    let clock = &shared.ctx.clock;
    let window = match bound {
        // The drain ends with the last response's end (not when the workers were joined).
        PhaseBound::Count { .. } => {
            let drained = records.iter().filter_map(|r| r.end_ns).max();
            (
                start,
                drained.map_or(end, |ns| clock.instant(ns).clamp(start, end)),
            )
        }
        PhaseBound::Duration { warm, window, .. } => (start + warm, start + warm + window),
    };
    let stopped = shared.config.stop.stopped().map(|(at, _)| at);
    let window = clip_window(window, stopped);
    let window_ns = (clock.ns(window.0), clock.ns(window.1));
    PhaseResult {
        records,
        start_ns: clock.ns(start),
        end_ns: clock.ns(end),
        window_ns,
        mean_gap_ms: None,
    }
}
