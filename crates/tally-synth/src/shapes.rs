//! Constructors of the record shapes the lowering emits.
//!
//! Small helpers shared by [`crate::lower`] and [`crate::extras`]: ids (`req-0000042`), entity
//! references, a correlation record from its parts, a bare activity, an engine-reported runtime
//! launch, a capability report, and [`MetaText`], which writes a metadata object's JSON text
//! member by member (strings and integers only). Nothing here decides what to emit.

use std::sync::Arc;

use tally_evidence::{
    ActivityDomain, ActivityReferenceEvent, AttributionStatus, BusyIntervals, CapabilityEvent,
    CorrelationContext, CorrelationEvent, EntityRef, EventBody, InferenceRecord, Metadata, Text,
};

/// The request id (`req-0000042`).
pub(crate) fn req(request: u64) -> String {
    format!("req-{request:07}")
}

/// An entity reference (both parts non-empty by construction).
pub(crate) fn eref(producer: &Text, id: impl Into<Text>) -> EntityRef {
    EntityRef {
        producer_id: producer.clone(),
        id: id.into(),
    }
}

/// A correlation record; empty `metadata` text means `{}`.
pub(crate) fn record(
    ctx: &Arc<CorrelationContext>,
    event_id: impl Into<Text>,
    metadata: String,
    body: EventBody,
) -> InferenceRecord {
    let metadata = if metadata.is_empty() {
        Metadata::empty()
    } else {
        Metadata::from_json_text(&metadata)
    };
    InferenceRecord::Event(CorrelationEvent::new(
        Arc::clone(ctx),
        event_id.into(),
        metadata,
        body,
    ))
}

/// An activity with only the required fields set (status follows the iteration link).
pub(crate) fn activity(
    activity_ref: EntityRef,
    kind: &str,
    domain: ActivityDomain,
    iteration_ref: Option<EntityRef>,
) -> ActivityReferenceEvent {
    ActivityReferenceEvent {
        activity_ref,
        activity_kind: kind.into(),
        attribution_status: if iteration_ref.is_some() {
            AttributionStatus::Linked
        } else {
            AttributionStatus::Unresolved
        },
        activity_domain: domain,
        iteration_ref,
        correlation_scope: None,
        trace_attachment_id: None,
        runtime_correlation_id: None,
        cuda_correlation_id: None,
        stream_id: None,
        graph_id: None,
        start_ns: None,
        end_ns: None,
        intervals: BusyIntervals::Absent,
    }
}

/// The engine adapter's report of a runtime launch call.
pub(crate) fn runtime_launch(
    engine: &Arc<CorrelationContext>,
    id: String,
    correlation: u64,
    iteration: Option<EntityRef>,
) -> InferenceRecord {
    let producer = &engine.producer_id;
    let runtime: Text = producer.replace("engine-", "runtime-").into();
    record(
        engine,
        id.clone(),
        String::new(),
        EventBody::Activity(ActivityReferenceEvent {
            correlation_scope: Some(eref(&runtime, "cuda-context-1")),
            runtime_correlation_id: Some(correlation),
            ..activity(
                eref(producer, id),
                "runtime_launch",
                ActivityDomain::Runtime,
                iteration,
            )
        }),
    )
}

pub(crate) fn capabilities(
    ctx: &Arc<CorrelationContext>,
    event_id: &str,
    component: &str,
    supported: &[&str],
    collected: &[&str],
    metadata: String,
) -> InferenceRecord {
    let texts = |list: &[&str]| list.iter().map(|s| Text::from(*s)).collect::<Vec<_>>();
    record(
        ctx,
        event_id,
        metadata,
        EventBody::Capabilities(CapabilityEvent {
            component: component.into(),
            available: !supported.is_empty(),
            supported: texts(supported),
            enabled: texts(supported),
            collected: texts(collected),
        }),
    )
}

/// A JSON string literal.
pub(crate) fn json_str(s: &str) -> String {
    serde_json::to_string(s).expect("a string serialises")
}

/// Builds a metadata object's JSON text member by member.
pub(crate) struct MetaText {
    text: String,
}

impl MetaText {
    pub(crate) fn new() -> Self {
        Self {
            text: String::with_capacity(160),
        }
    }
    fn key(&mut self, key: &str) {
        self.text.push(if self.text.is_empty() { '{' } else { ',' });
        self.text.push('"');
        self.text.push_str(key);
        self.text.push_str("\":");
    }
    pub(crate) fn int(&mut self, key: &str, value: u64) {
        self.key(key);
        self.text.push_str(&value.to_string());
    }
    pub(crate) fn str(&mut self, key: &str, value: &str) {
        self.key(key);
        self.text.push_str(&json_str(value));
    }
    pub(crate) fn raw(&mut self, key: &str, json: &str) {
        self.key(key);
        self.text.push_str(json);
    }
    pub(crate) fn finish(mut self) -> String {
        if self.text.is_empty() {
            return self.text;
        }
        self.text.push('}');
        self.text
    }
}
