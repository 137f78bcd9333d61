//! The open loop: a schedule fixed before the first send, dispatched on absolute deadlines
//! (never "sleep one gap", which accumulates error), through an in-flight limit whose overflow
//! either waits (the request is `held_for_slot`, and its latency from the intended arrival
//! includes the wait) or drops the request. Intended arrival a_r = phase start + t_k even when
//! the dispatch is late, so queueing is never hidden (coordinated omission). A stop request
//! ends the schedule and closes the window at that moment; arrivals still waiting for a slot
//! are dropped. Before the schedule starts, the connection pool is filled to what the schedule
//! will need ([`pool_needed`]), so that dials do not make the first arrivals late.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

use super::request::{plan, send};
use super::stop::clip_window;
use super::{Overflow, PhaseBound, PhaseResult, Shared, warm_pool};
use crate::alarm::Alarm;
use crate::arrivals::Schedule;
use crate::record::{Phase, Status};

/// The most connections dialled before a schedule starts.
const MAX_WARM: usize = 256;

/// The connections the schedule will need (docs/bench.md#connections): twice its mean rate ×
/// the preflight's E2E, plus one, at most the in-flight limit, the schedule's length and
/// [`MAX_WARM`].
fn pool_needed(shared: &Shared, schedule: &Schedule, max_in_flight: u32) -> usize {
    let n = schedule.offsets.len();
    if n == 0 || schedule.endpoint <= 0.0 {
        return 0;
    }
    let rate = n as f64 / schedule.endpoint;
    let needed = (rate * shared.preflight_e2e_s * 2.0).ceil() as usize + 1;
    needed.min(max_in_flight as usize).min(n).min(MAX_WARM)
}

/// Runs one open-loop phase over `schedule`.
pub async fn run(
    shared: Arc<Shared>,
    schedule: Schedule,
    max_in_flight: u32,
    overflow: Overflow,
    bound: PhaseBound,
) -> PhaseResult {
    let clock = shared.ctx.clock;
    warm_pool(&shared, pool_needed(&shared, &schedule, max_in_flight)).await;
    // A short lead so the first deadline is not already late when the loop starts.
    let start = Instant::now() + Duration::from_millis(2);
    let endpoint = start + Duration::from_secs_f64(schedule.endpoint);
    let drain_deadline = endpoint + shared.config.drain_timeout;
    let slots = Arc::new(Semaphore::new(max_in_flight.max(1) as usize));
    let mut tasks = tokio::task::JoinSet::new();
    let mut records = Vec::with_capacity(schedule.offsets.len());
    let mut alarm = Alarm::new();
    for (index, offset) in schedule.offsets.iter().enumerate() {
        let due = start + Duration::from_secs_f64(*offset);
        let stop = &shared.config.stop;
        if stop.is_stopping() {
            break;
        }
        let phase = match bound {
            PhaseBound::Count { phase, .. } => phase,
            PhaseBound::Duration { warm, .. } if Duration::from_secs_f64(*offset) < warm => {
                Phase::Warmup
            }
            PhaseBound::Duration { .. } => Phase::Measured,
        };
        // A finished task's memory is freed now, not at the end of the phase: held, every
        // arrival would take fresh pages from the kernel (docs/performance.md#openai-dispatch).
        while let Some(result) = tasks.try_join_next() {
            if let Ok(record) = result {
                records.push(record);
            }
        }
        // The body is built before the due time, so building it is not part of the dispatch.
        let (mut record, body) = plan(&shared, phase, index as u64, due);
        tokio::select! {
            () = alarm.sleep_until(due) => {}
            () = stop.wait() => break,
        }
        let available = slots.available_permits();
        record.in_flight_at_dispatch = max_in_flight.saturating_sub(available as u32);
        let permit = match slots.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) if overflow == Overflow::Drop => {
                record.status = Status::Dropped;
                record.error_kind = Some("overflow".into());
                records.push(record);
                continue;
            }
            Err(_) => {
                record.held_for_slot = true;
                let wait =
                    tokio::time::timeout_at(drain_deadline.into(), slots.clone().acquire_owned());
                let waited = tokio::select! {
                    waited = wait => waited.ok().and_then(Result::ok).ok_or("drain"),
                    () = stop.wait() => Err("interrupted"),
                };
                match waited {
                    Ok(permit) => permit,
                    Err(kind) => {
                        record.status = Status::Dropped;
                        record.error_kind = Some(kind.into());
                        records.push(record);
                        continue;
                    }
                }
            }
        };
        let shared = shared.clone();
        let deadline = (phase == Phase::Measured).then_some(drain_deadline);
        tasks.spawn(async move {
            let record = send(&shared, record, body, deadline, None).await;
            drop(permit);
            record
        });
    }
    while let Some(result) = tasks.join_next().await {
        if let Ok(record) = result {
            records.push(record);
        }
    }
    let end = Instant::now();
    records.sort_by_key(|r| (r.intended_ns, r.index));
    let window = match bound {
        PhaseBound::Count { .. } => (start, endpoint),
        PhaseBound::Duration { warm, window, .. } => (start + warm, start + warm + window),
    };
    let stopped = shared.config.stop.stopped().map(|(at, _)| at);
    let window = clip_window(window, stopped);
    let window_ns = (clock.ns(window.0), clock.ns(window.1));
    let n = schedule.offsets.len();
    let mean_gap_ms =
        (n > 1).then(|| (schedule.offsets[n - 1] - schedule.offsets[0]) / (n - 1) as f64 * 1e3);
    PhaseResult {
        records,
        start_ns: clock.ns(start),
        end_ns: clock.ns(end),
        window_ns,
        mean_gap_ms,
    }
}
