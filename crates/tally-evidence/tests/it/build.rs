//! Test support: builds validated records in memory (the JSONL reader lives elsewhere), and
//! renders results in the compact shorthand of `docs/evidence.md#conformance-cases` so expected values read like
//! `docs/evidence.md`.

use std::sync::Arc;

use serde_json::{Value, json};
use tally_evidence::{
    ActivityDomain, ActivityReferenceEvent, AttributionStatus, BusyIntervals, ClockAlignmentEvent,
    ClockKind, CollectionMode, CorrelationContext, CorrelationEvent, CorrelationGraph, EntityRef,
    EventBody, InferenceRecord, IterationEvent, LegacyRecord, MembershipEvent, Metadata, Nanos,
    Provenance, RequestEvent, RunAccounting, StageEvent, UnresolvedReference,
};

/// A context under construction; defaults are the engine context `E` of `docs/evidence.md#conformance-cases`.
#[derive(Clone)]
pub struct Ctx(CorrelationContext);

impl Ctx {
    /// `E`: producer `eng`, session `s`, run `r`, domain `w/mono`, monotonic, no UUID.
    pub fn engine() -> Self {
        Self(CorrelationContext {
            run_id: "r".into(),
            session_id: "s".into(),
            producer_id: "eng".into(),
            source: "eng".into(),
            clock_domain: "w/mono".into(),
            clock_kind: ClockKind::Monotonic,
            collection_mode: CollectionMode::Passive,
            provenance: Provenance::Observed,
            source_version: None,
            engine: None,
            engine_version: None,
            backend: None,
            backend_version: None,
            host: None,
            device_uuid: None,
            pid: None,
            rank: None,
            local_rank: None,
            world_size: None,
        })
    }
    /// `T`: as `E` with producer `tr` and device `GPU-A`.
    pub fn trace() -> Self {
        Self::engine().producer("tr").uuid(Some("GPU-A"))
    }
    /// A client context (producer `cli`).
    pub fn client() -> Self {
        Self::engine().producer("cli")
    }
    pub fn producer(mut self, p: &str) -> Self {
        self.0.producer_id = p.into();
        self.0.source = p.into();
        self
    }
    pub fn session(mut self, s: &str) -> Self {
        self.0.session_id = s.into();
        self
    }
    pub fn run(mut self, r: &str) -> Self {
        self.0.run_id = r.into();
        self
    }
    pub fn source(mut self, s: &str) -> Self {
        self.0.source = s.into();
        self
    }
    pub fn domain(mut self, d: &str) -> Self {
        self.0.clock_domain = d.into();
        self
    }
    pub fn kind(mut self, k: ClockKind) -> Self {
        self.0.clock_kind = k;
        self
    }
    pub fn uuid(mut self, u: Option<&str>) -> Self {
        self.0.device_uuid = u.map(Into::into);
        self
    }
    pub fn host(mut self, h: &str) -> Self {
        self.0.host = Some(h.into());
        self
    }
    pub fn arc(self) -> Arc<CorrelationContext> {
        Arc::new(self.0)
    }
}

/// `EntityRef(producer, id)`.
pub fn r(producer: &str, id: &str) -> EntityRef {
    EntityRef::new(producer, id).unwrap()
}

/// A correlation record with empty metadata.
pub fn ev(ctx: &Ctx, event_id: &str, body: EventBody) -> InferenceRecord {
    ev_meta(ctx, event_id, "{}", body)
}

/// A correlation record with the given metadata JSON.
pub fn ev_meta(ctx: &Ctx, event_id: &str, metadata: &str, body: EventBody) -> InferenceRecord {
    InferenceRecord::Event(CorrelationEvent::new(
        ctx.clone().arc(),
        event_id.into(),
        Metadata::from_json_text(metadata),
        body,
    ))
}

/// A legacy (v1) record.
pub fn legacy() -> InferenceRecord {
    InferenceRecord::Legacy(LegacyRecord {
        json: r#"{"event_type": "infer.summary"}"#.into(),
    })
}

/// An iteration body (producer `eng`).
pub fn iteration(id: &str, start: Option<Nanos>, end: Option<Nanos>) -> EventBody {
    EventBody::Iteration(IterationEvent {
        iteration_ref: r("eng", id),
        batch_ref: None,
        start_ns: start,
        end_ns: end,
    })
}

/// A request body (producer `cli`), optionally one attempt of it.
pub fn request(id: &str, attempt: Option<&str>) -> EventBody {
    EventBody::Request(RequestEvent {
        request_ref: r("cli", id),
        attempt_ref: attempt.map(|a| r("cli", a)),
        backend_request_ref: None,
        start_ns: None,
        end_ns: None,
        status: None,
        input_tokens: None,
        output_tokens: None,
        kv_bytes: None,
    })
}

/// A membership body.
pub fn membership(
    request: EntityRef,
    attempt: Option<EntityRef>,
    iteration: &str,
    role: &str,
) -> EventBody {
    EventBody::Membership(MembershipEvent {
        request_ref: request,
        iteration_ref: r("eng", iteration),
        role: role.into(),
        attempt_ref: attempt,
        input_tokens: None,
        output_tokens: None,
        kv_bytes: None,
    })
}

/// A stage body.
pub fn stage(id: &str, request: Option<EntityRef>, iteration: Option<EntityRef>) -> EventBody {
    EventBody::Stage(StageEvent {
        stage_ref: r("eng", id),
        name: "queue".into(),
        request_ref: request,
        iteration_ref: iteration,
        start_ns: None,
        end_ns: None,
        input_tokens: None,
        output_tokens: None,
        kv_bytes: None,
    })
}

/// An activity body (producer `tr`, domain gpu), linked when `iteration` is given.
pub fn activity(
    id: &str,
    iteration: Option<&str>,
    start: Option<Nanos>,
    end: Option<Nanos>,
) -> ActivityReferenceEvent {
    ActivityReferenceEvent {
        activity_ref: r("tr", id),
        activity_kind: "gpu_kernel".into(),
        attribution_status: if iteration.is_some() {
            AttributionStatus::Linked
        } else {
            AttributionStatus::Unresolved
        },
        activity_domain: ActivityDomain::Gpu,
        iteration_ref: iteration.map(|i| r("eng", i)),
        correlation_scope: None,
        trace_attachment_id: None,
        runtime_correlation_id: None,
        cuda_correlation_id: None,
        stream_id: None,
        graph_id: None,
        start_ns: start,
        end_ns: end,
        intervals: BusyIntervals::Absent,
    }
}

/// `act(id, ref, iteration, start, end)` of `docs/evidence.md#conformance-cases`: a gpu activity of `T`.
pub fn act(
    event_id: &str,
    id: &str,
    iteration: Option<&str>,
    start: Nanos,
    end: Nanos,
) -> InferenceRecord {
    ev(
        &Ctx::trace(),
        event_id,
        EventBody::Activity(activity(id, iteration, Some(start), Some(end))),
    )
}

/// A version-3 activity of `T` with busy sub-intervals `(offset, duration)`.
pub fn act_intervals(
    event_id: &str,
    id: &str,
    iteration: Option<&str>,
    start: Nanos,
    end: Nanos,
    intervals: &[(Nanos, Nanos)],
) -> InferenceRecord {
    let mut body = activity(id, iteration, Some(start), Some(end));
    body.intervals = BusyIntervals::List(intervals.to_vec());
    let pairs: Vec<Value> = intervals.iter().map(|&(o, d)| json!([o, d])).collect();
    let meta = json!({ "intervals": pairs }).to_string();
    ev_meta(&Ctx::trace(), event_id, &meta, EventBody::Activity(body))
}

/// A clock alignment body.
pub fn alignment(
    from: &str,
    to: &str,
    offset: Nanos,
    uncertainty: Nanos,
    valid_from: Option<Nanos>,
    valid_to: Option<Nanos>,
) -> EventBody {
    EventBody::ClockAlignment(ClockAlignmentEvent {
        from_clock_domain: from.into(),
        to_clock_domain: to.into(),
        offset_ns: offset,
        uncertainty_ns: uncertainty,
        valid_from_ns: valid_from,
        valid_to_ns: valid_to,
    })
}

/// Re-delivers a record under another event id.
pub fn renamed(record: &InferenceRecord, event_id: &str) -> InferenceRecord {
    match record {
        InferenceRecord::Legacy(l) => InferenceRecord::Legacy(l.clone()),
        InferenceRecord::Event(e) => {
            let (ctx, _, meta, body) = e.clone().into_parts();
            InferenceRecord::Event(CorrelationEvent::new(ctx, event_id.into(), meta, body))
        }
    }
}

fn ref_text(r: &EntityRef) -> String {
    format!("{}/{}", r.producer_id, r.id)
}

/// `[summed, busy, count]` per `uuid|domain|kind`.
fn gpu_map<'a>(
    groups: impl IntoIterator<Item = (&'a tally_evidence::DeviceClock, &'a tally_evidence::GpuTime)>,
) -> Value {
    let mut map = serde_json::Map::new();
    for (key, time) in groups {
        map.insert(
            key.to_string(),
            json!([time.summed_activity_ns, time.busy_ns, time.activity_count]),
        );
    }
    Value::Object(map)
}

/// The accounting in shorthand: iterations `{ "eng/I1": {"elapsed": .., "gpu": {K: [s,b,n]}}}`,
/// `totals`, `unattributed` and `unmeasured` as `producer/id` lists.
pub fn accounting_summary(acc: &RunAccounting) -> Value {
    let mut iterations = serde_json::Map::new();
    for (r, timing) in &acc.iterations {
        iterations.insert(
            ref_text(r),
            json!({ "elapsed": timing.elapsed_ns, "gpu": gpu_map(&timing.gpu) }),
        );
    }
    json!({
        "iterations": iterations,
        "totals": gpu_map(&acc.device_totals),
        "unattributed": acc.unattributed_activity_refs.iter().map(ref_text).collect::<Vec<_>>(),
        "unmeasured": acc.unmeasured_gpu_activity_refs.iter().map(ref_text).collect::<Vec<_>>(),
    })
}

/// The unresolved list as `[event_id, kind, producer, id]` rows, in order.
pub fn unresolved_rows(list: &[UnresolvedReference]) -> Value {
    list.iter()
        .map(|u| {
            json!([
                &*u.event_id,
                u.kind.as_str(),
                &*u.reference.producer_id,
                &*u.reference.id
            ])
        })
        .collect()
}

/// The counts as `[requests, iterations, stages, memberships, activities, alignments]`.
pub fn counts(graph: &CorrelationGraph) -> [usize; 6] {
    let c = graph.counts();
    [
        c.requests,
        c.iterations,
        c.stages,
        c.memberships,
        c.activities,
        c.alignments,
    ]
}
