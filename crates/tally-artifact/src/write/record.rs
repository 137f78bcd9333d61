//! The JSON object of one record, with its keys in sorted order, as the reference writes it.
//!
//! A correlation event is written as stormlog's `CorrelationEvent.to_record()` would produce it
//! (`schema_version`, `event_type`, the context, `event_id`, `metadata` and every field of the
//! event's dataclass, optional ones as `null`), serialised with `sort_keys=True`. Each event type
//! writes its keys in a fixed, hand-sorted order; the key `context` and its v4 replacement
//! `context_id` sort to the same place, so one order serves both forms. A legacy record is its
//! own JSON re-serialised with sorted keys.
//!
//! This module writes into a byte buffer and never decides the artifact's form or keeps state
//! across records: that is [`super::ArtifactWriter`]'s job.

use std::io;

use tally_evidence::model::{
    CorrelationContext, CorrelationEvent, EntityRef, EventBody, LegacyRecord, Metadata, Nanos,
};

use super::canonical;
use super::python_json::{self, Separators};

/// How a row carries its context.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ContextField<'a> {
    /// `"context": {...}` with the already serialised object.
    Embedded(&'a [u8]),
    /// `"context_id": "ctx-..."` (a v4 compact row).
    Interned(&'a str),
}

/// Appends the context object: all 19 keys, sorted, nulls included.
pub(crate) fn push_context(out: &mut Vec<u8>, ctx: &CorrelationContext, seps: Separators) {
    let mut f = Fields::new(out, seps);
    f.opt_str("backend", ctx.backend.as_deref());
    f.opt_str("backend_version", ctx.backend_version.as_deref());
    f.str("clock_domain", &ctx.clock_domain);
    f.str("clock_kind", ctx.clock_kind.as_str());
    f.str("collection_mode", ctx.collection_mode.as_str());
    f.opt_str("device_uuid", ctx.device_uuid.as_deref());
    f.opt_str("engine", ctx.engine.as_deref());
    f.opt_str("engine_version", ctx.engine_version.as_deref());
    f.opt_str("host", ctx.host.as_deref());
    f.opt_u64("local_rank", ctx.local_rank);
    f.opt_u64("pid", ctx.pid);
    f.str("producer_id", &ctx.producer_id);
    f.str("provenance", ctx.provenance.as_str());
    f.opt_u64("rank", ctx.rank);
    f.str("run_id", &ctx.run_id);
    f.str("session_id", &ctx.session_id);
    f.str("source", &ctx.source);
    f.opt_str("source_version", ctx.source_version.as_deref());
    f.opt_u64("world_size", ctx.world_size);
    f.end();
}

/// Appends the metadata object by value (sorted keys, numbers and special literals as Python
/// writes them back). Fails only for metadata text that is not JSON, which the reader never
/// produces.
pub(crate) fn push_metadata(out: &mut Vec<u8>, meta: &Metadata) -> io::Result<()> {
    if meta.is_empty() {
        out.extend_from_slice(b"{}");
        return Ok(());
    }
    canonical::reserialize(out, meta.json_text(), Separators::Spaced)
        .map_err(|e| invalid(format!("metadata is not JSON ({e}): {}", meta.json_text())))
}

/// Appends a legacy record: its JSON object re-serialised with sorted keys.
pub(crate) fn push_legacy(out: &mut Vec<u8>, record: &LegacyRecord) -> io::Result<()> {
    canonical::reserialize(out, &record.json, Separators::Spaced)
        .map_err(|e| invalid(format!("legacy record is not JSON ({e}): {}", record.json)))
}

/// Appends one correlation event as a JSON object. `metadata` is the event's metadata object,
/// already serialised by [`push_metadata`]; `version` is the declared `schema_version`.
pub(crate) fn push_event(
    out: &mut Vec<u8>,
    event: &CorrelationEvent,
    context: ContextField<'_>,
    metadata: &[u8],
    version: u8,
) {
    let mut f = Fields::new(out, Separators::Spaced);
    let event_type = event.event_type().as_str();
    let event_id = event.event_id();
    match event.body() {
        EventBody::Artifact(e) => {
            f.str("artifact_kind", &e.artifact_kind);
            f.context(context);
            f.i64("created_at_ns", e.created_at_ns);
            f.common(event_id, event_type, metadata);
            f.u64("schema_version", u64::from(version));
        }
        EventBody::Request(e) => {
            f.opt_ref("attempt_ref", e.attempt_ref.as_ref());
            f.opt_ref("backend_request_ref", e.backend_request_ref.as_ref());
            f.context(context);
            f.opt_i64("end_ns", e.end_ns);
            f.str("event_id", event_id);
            f.str("event_type", event_type);
            f.opt_u64("input_tokens", e.input_tokens);
            f.opt_u64("kv_bytes", e.kv_bytes);
            f.raw("metadata", metadata);
            f.opt_u64("output_tokens", e.output_tokens);
            f.entity("request_ref", &e.request_ref);
            f.u64("schema_version", u64::from(version));
            f.opt_i64("start_ns", e.start_ns);
            f.opt_str("status", e.status.as_deref());
        }
        EventBody::Iteration(e) => {
            f.opt_ref("batch_ref", e.batch_ref.as_ref());
            f.context(context);
            f.opt_i64("end_ns", e.end_ns);
            f.str("event_id", event_id);
            f.str("event_type", event_type);
            f.entity("iteration_ref", &e.iteration_ref);
            f.raw("metadata", metadata);
            f.u64("schema_version", u64::from(version));
            f.opt_i64("start_ns", e.start_ns);
        }
        EventBody::Stage(e) => {
            f.context(context);
            f.opt_i64("end_ns", e.end_ns);
            f.str("event_id", event_id);
            f.str("event_type", event_type);
            f.opt_u64("input_tokens", e.input_tokens);
            f.opt_ref("iteration_ref", e.iteration_ref.as_ref());
            f.opt_u64("kv_bytes", e.kv_bytes);
            f.raw("metadata", metadata);
            f.str("name", &e.name);
            f.opt_u64("output_tokens", e.output_tokens);
            f.opt_ref("request_ref", e.request_ref.as_ref());
            f.u64("schema_version", u64::from(version));
            f.entity("stage_ref", &e.stage_ref);
            f.opt_i64("start_ns", e.start_ns);
        }
        EventBody::Membership(e) => {
            f.opt_ref("attempt_ref", e.attempt_ref.as_ref());
            f.context(context);
            f.str("event_id", event_id);
            f.str("event_type", event_type);
            f.opt_u64("input_tokens", e.input_tokens);
            f.entity("iteration_ref", &e.iteration_ref);
            f.opt_u64("kv_bytes", e.kv_bytes);
            f.raw("metadata", metadata);
            f.opt_u64("output_tokens", e.output_tokens);
            f.entity("request_ref", &e.request_ref);
            f.str("role", &e.role);
            f.u64("schema_version", u64::from(version));
        }
        EventBody::Activity(e) => {
            f.str("activity_domain", e.activity_domain.as_str());
            f.str("activity_kind", &e.activity_kind);
            f.entity("activity_ref", &e.activity_ref);
            f.str("attribution_status", e.attribution_status.as_str());
            f.context(context);
            f.opt_ref("correlation_scope", e.correlation_scope.as_ref());
            f.opt_u64("cuda_correlation_id", e.cuda_correlation_id);
            f.opt_i64("end_ns", e.end_ns);
            f.str("event_id", event_id);
            f.str("event_type", event_type);
            f.opt_u64("graph_id", e.graph_id);
            f.opt_ref("iteration_ref", e.iteration_ref.as_ref());
            f.raw("metadata", metadata);
            f.opt_u64("runtime_correlation_id", e.runtime_correlation_id);
            f.u64("schema_version", u64::from(version));
            f.opt_i64("start_ns", e.start_ns);
            f.opt_u64("stream_id", e.stream_id);
            f.opt_str("trace_attachment_id", e.trace_attachment_id.as_deref());
        }
        EventBody::Capabilities(e) => {
            f.bool("available", e.available);
            f.str_list("collected", &e.collected);
            f.str("component", &e.component);
            f.context(context);
            f.str_list("enabled", &e.enabled);
            f.common(event_id, event_type, metadata);
            f.u64("schema_version", u64::from(version));
            f.str_list("supported", &e.supported);
        }
        EventBody::ClockAlignment(e) => {
            f.context(context);
            f.str("event_id", event_id);
            f.str("event_type", event_type);
            f.str("from_clock_domain", &e.from_clock_domain);
            f.raw("metadata", metadata);
            f.i64("offset_ns", e.offset_ns);
            f.u64("schema_version", u64::from(version));
            f.str("to_clock_domain", &e.to_clock_domain);
            f.i64("uncertainty_ns", e.uncertainty_ns);
            f.opt_i64("valid_from_ns", e.valid_from_ns);
            f.opt_i64("valid_to_ns", e.valid_to_ns);
        }
    }
    f.end();
}

/// Appends the v4 definition row of a context.
pub(crate) fn push_definition(out: &mut Vec<u8>, context: &[u8], context_id: &str) {
    let mut f = Fields::new(out, Separators::Spaced);
    f.raw("context", context);
    f.str("context_id", context_id);
    f.str("event_type", "infer.context");
    f.u64("schema_version", 4);
    f.end();
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

/// Writes the members of one object, in the order they are given (callers give sorted keys).
struct Fields<'a> {
    out: &'a mut Vec<u8>,
    seps: Separators,
    first: bool,
}

impl<'a> Fields<'a> {
    fn new(out: &'a mut Vec<u8>, seps: Separators) -> Self {
        out.push(b'{');
        Self {
            out,
            seps,
            first: true,
        }
    }
    fn end(self) {
        self.out.push(b'}');
    }
    /// Keys are ASCII identifiers, so they need no escaping.
    fn key(&mut self, key: &str) {
        if !self.first {
            self.out.extend_from_slice(self.seps.item());
        }
        self.first = false;
        self.out.push(b'"');
        self.out.extend_from_slice(key.as_bytes());
        self.out.push(b'"');
        self.out.extend_from_slice(self.seps.key());
    }
    fn null(&mut self, key: &str) {
        self.key(key);
        self.out.extend_from_slice(b"null");
    }
    fn raw(&mut self, key: &str, json: &[u8]) {
        self.key(key);
        self.out.extend_from_slice(json);
    }
    fn str(&mut self, key: &str, value: &str) {
        self.key(key);
        python_json::push_str(self.out, value);
    }
    fn opt_str(&mut self, key: &str, value: Option<&str>) {
        match value {
            Some(v) => self.str(key, v),
            None => self.null(key),
        }
    }
    fn u64(&mut self, key: &str, value: u64) {
        self.key(key);
        python_json::push_u64(self.out, value);
    }
    fn opt_u64(&mut self, key: &str, value: Option<u64>) {
        match value {
            Some(v) => self.u64(key, v),
            None => self.null(key),
        }
    }
    fn i64(&mut self, key: &str, value: Nanos) {
        self.key(key);
        python_json::push_i64(self.out, value);
    }
    fn opt_i64(&mut self, key: &str, value: Option<Nanos>) {
        match value {
            Some(v) => self.i64(key, v),
            None => self.null(key),
        }
    }
    fn bool(&mut self, key: &str, value: bool) {
        self.key(key);
        self.out
            .extend_from_slice(if value { b"true" } else { b"false" });
    }
    fn entity(&mut self, key: &str, value: &EntityRef) {
        self.key(key);
        self.out.extend_from_slice(b"{\"id\"");
        self.out.extend_from_slice(self.seps.key());
        python_json::push_str(self.out, &value.id);
        self.out.extend_from_slice(self.seps.item());
        self.out.extend_from_slice(b"\"producer_id\"");
        self.out.extend_from_slice(self.seps.key());
        python_json::push_str(self.out, &value.producer_id);
        self.out.push(b'}');
    }
    fn opt_ref(&mut self, key: &str, value: Option<&EntityRef>) {
        match value {
            Some(v) => self.entity(key, v),
            None => self.null(key),
        }
    }
    fn str_list(&mut self, key: &str, values: &[tally_evidence::model::Text]) {
        self.key(key);
        self.out.push(b'[');
        for (k, v) in values.iter().enumerate() {
            if k > 0 {
                self.out.extend_from_slice(self.seps.item());
            }
            python_json::push_str(self.out, v);
        }
        self.out.push(b']');
    }
    fn context(&mut self, context: ContextField<'_>) {
        match context {
            ContextField::Embedded(json) => self.raw("context", json),
            ContextField::Interned(id) => self.str("context_id", id),
        }
    }
    /// `event_id`, `event_type` and `metadata`, which sort next to each other in the types
    /// that have no field between them.
    fn common(&mut self, event_id: &str, event_type: &str, metadata: &[u8]) {
        self.str("event_id", event_id);
        self.str("event_type", event_type);
        self.raw("metadata", metadata);
    }
}
