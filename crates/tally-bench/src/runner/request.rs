//! One planned request: its body from the workload, its record, and its exchange under the
//! per-request deadline (→ `timeout`), the drain limit and an early stop's grace (→ `cancelled`).

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use tokio::sync::watch;

use super::Shared;
use super::stop::STOP_GRACE;
use crate::client::exchange::execute;
use crate::openai::RequestBody;
use crate::record::{Phase, RequestRecord, Status, TokenSource};
use crate::workload::digest;

/// The `X-Request-Id` of a request.
pub fn request_id(run_id: &str, phase: Phase, index: u64) -> String {
    match phase {
        Phase::Warmup => format!("tally-{run_id}-warmup-{index}"),
        Phase::Measured | Phase::Cooldown => format!("tally-{run_id}-{index}"),
    }
}

/// A record for request `index` due at `intended`, with its body.
pub fn plan(
    shared: &Shared,
    phase: Phase,
    index: u64,
    intended: Instant,
) -> (RequestRecord, Bytes) {
    let config = &shared.config;
    let planned = config
        .workload
        .request(phase, index, shared.tokens_per_word);
    let mut record = RequestRecord::new(
        phase,
        index,
        request_id(&config.run_id, phase, index),
        shared.ctx.clock.ns(intended),
    );
    record.target_input_tokens = planned.input_tokens;
    record.target_output_tokens = planned.output_tokens;
    record.prompt_tokens = Some(planned.input_tokens);
    record.prompt_tokens_source = TokenSource::Planned;
    record.prompt_digest = digest(&planned.prompt);
    let body = RequestBody {
        model: &config.model,
        prompt: &planned.prompt,
        max_tokens: planned.output_tokens,
        stream: config.stream,
        include_usage: config.include_usage,
        ignore_eos: config.ignore_eos,
    }
    .to_json(config.api);
    (record, Bytes::from(body))
}

/// A request cut short: its status, error kind and message.
type Cut = (Status, &'static str, &'static str);
const DEADLINE: Cut = (Status::Timeout, "deadline", "past --request-deadline");
const DRAIN: Cut = (
    Status::Cancelled,
    "drain",
    "still running at the drain limit",
);
const INTERRUPTED: Cut = (
    Status::Cancelled,
    "interrupted",
    "still running when the grace after the stop request ended",
);

/// Runs the exchange; `drain_deadline` cancels it, `cancel` (cool-down requests) too.
pub async fn send(
    shared: &Arc<Shared>,
    mut record: RequestRecord,
    body: Bytes,
    drain_deadline: Option<Instant>,
    mut cancel: Option<watch::Receiver<bool>>,
) -> RequestRecord {
    shared.progress.started();
    let request_deadline = shared.config.request_deadline.map(|d| Instant::now() + d);
    let deadline = match (request_deadline, drain_deadline) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let cancelled_by_drain =
        deadline.is_some() && deadline == drain_deadline && deadline != request_deadline;
    let exchange = execute(&shared.ctx, body, &mut record);
    let far = Instant::now() + std::time::Duration::from_secs(365 * 86_400);
    let grace = STOP_GRACE.min(shared.config.drain_timeout);
    let expired = tokio::select! {
        () = exchange => None,
        () = tokio::time::sleep_until(deadline.unwrap_or(far).into()) => {
            Some(if cancelled_by_drain { DRAIN } else { DEADLINE })
        }
        () = async {
            match cancel.as_mut() {
                Some(rx) => { let _ = rx.wait_for(|done| *done).await; }
                None => std::future::pending().await,
            }
        } => Some(DRAIN),
        () = shared.config.stop.cut(grace) => Some(INTERRUPTED),
    };
    if let Some((status, kind, message)) = expired {
        record.status = status;
        record.error_kind = Some(kind.into());
        record.error_message = Some(message.into());
        record.end_ns = Some(shared.ctx.clock.now_ns());
    }
    shared.progress.finished(&record);
    record
}
