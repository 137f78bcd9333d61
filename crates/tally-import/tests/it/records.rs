//! Small hand-built records for the link and export tests.

use std::sync::Arc;

use tally_evidence::{
    ActivityDomain, ActivityReferenceEvent, AttributionStatus, BusyIntervals, ClockKind,
    CollectionMode, CorrelationContext, CorrelationEvent, EntityRef, EventBody, InferenceRecord,
    IterationEvent, MembershipEvent, Metadata, Provenance, RequestEvent,
};

pub fn context(
    producer: &str,
    host: Option<&str>,
    pid: Option<u64>,
    uuid: Option<&str>,
) -> Arc<CorrelationContext> {
    Arc::new(CorrelationContext {
        run_id: "r".into(),
        session_id: "s".into(),
        producer_id: producer.into(),
        source: producer.into(),
        clock_domain: "h/mono".into(),
        clock_kind: ClockKind::Monotonic,
        collection_mode: CollectionMode::Active,
        provenance: Provenance::Observed,
        source_version: None,
        engine: None,
        engine_version: None,
        backend: None,
        backend_version: None,
        host: host.map(Into::into),
        device_uuid: uuid.map(Into::into),
        pid,
        rank: None,
        local_rank: None,
        world_size: None,
    })
}

pub fn r(producer: &str, id: &str) -> EntityRef {
    EntityRef::new(producer, id).unwrap()
}

pub fn event(context: &Arc<CorrelationContext>, id: &str, body: EventBody) -> InferenceRecord {
    InferenceRecord::Event(CorrelationEvent::new(
        context.clone(),
        id.into(),
        Metadata::empty(),
        body,
    ))
}

pub fn activity(
    context: &Arc<CorrelationContext>,
    id: &str,
    domain: ActivityDomain,
    iteration: Option<&str>,
    cuda: Option<u64>,
    span: (i64, i64),
) -> InferenceRecord {
    event(
        context,
        id,
        EventBody::Activity(ActivityReferenceEvent {
            activity_ref: r(&context.producer_id, id),
            activity_kind: if domain == ActivityDomain::Gpu {
                "gpu_kernel"
            } else {
                "runtime_launch"
            }
            .into(),
            attribution_status: if iteration.is_some() {
                AttributionStatus::Linked
            } else {
                AttributionStatus::Unresolved
            },
            activity_domain: domain,
            iteration_ref: iteration.map(|i| r("eng", i)),
            correlation_scope: Some(r("cupti", "correlation_id")),
            trace_attachment_id: None,
            runtime_correlation_id: None,
            cuda_correlation_id: cuda,
            stream_id: Some(7),
            graph_id: None,
            start_ns: Some(span.0),
            end_ns: Some(span.1),
            intervals: BusyIntervals::Absent,
        }),
    )
}

pub fn iteration(context: &Arc<CorrelationContext>, id: &str, span: (i64, i64)) -> InferenceRecord {
    event(
        context,
        id,
        EventBody::Iteration(IterationEvent {
            iteration_ref: r("eng", id),
            batch_ref: None,
            start_ns: Some(span.0),
            end_ns: Some(span.1),
        }),
    )
}

pub fn request(
    context: &Arc<CorrelationContext>,
    id: &str,
    span: Option<(i64, i64)>,
) -> InferenceRecord {
    event(
        context,
        id,
        EventBody::Request(RequestEvent {
            request_ref: r("cli", id),
            attempt_ref: None,
            backend_request_ref: None,
            start_ns: span.map(|s| s.0),
            end_ns: span.map(|s| s.1),
            status: None,
            input_tokens: None,
            output_tokens: None,
            kv_bytes: None,
        }),
    )
}

pub fn membership(
    context: &Arc<CorrelationContext>,
    id: &str,
    request: &str,
    iteration: &str,
) -> InferenceRecord {
    event(
        context,
        id,
        EventBody::Membership(MembershipEvent {
            request_ref: r("cli", request),
            iteration_ref: r("eng", iteration),
            role: "decode".into(),
            attempt_ref: None,
            input_tokens: None,
            output_tokens: None,
            kv_bytes: None,
        }),
    )
}
