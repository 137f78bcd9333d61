//! Content fingerprints: how two records are compared for de-duplication.
//!
//! The reference compares parsed records with Python value equality (`docs/evidence.md#dedup`). tally
//! decides the same, written down once here:
//! - every typed field compares by value (strings by their code points, integers exactly);
//! - `metadata` compares as a JSON value where object key order is irrelevant and numbers compare
//!   by numeric value across integers, floats and booleans (`1`, `1.0` and `true` are equal; so
//!   are `0`, `-0.0` and `false`), and `NaN` equals `NaN`;
//! - `event_id` is not part of a fingerprint (it is part of the identity key instead).
//!
//! `CorrelationEvent`'s equality (`PartialEq`) and [`CorrelationEvent::fingerprint`] are defined
//! here, so the model does not depend on this module.
//!
//! Two records are compared in one of two ways, with the same outcome:
//! - **directly** (`same_content`), which is what resolution does: contexts and typed bodies
//!   by their (typed, therefore canonical) values, and metadata by its text, falling back to its
//!   fingerprint only when two texts differ. Exact, and nothing is computed for a record that is
//!   never compared, which is almost every record;
//! - **by fingerprint**, for an identity whose record is not kept (artifact and capability
//!   records, duplicates that lost the smallest-`event_id` tie-break), and for callers of
//!   `CorrelationEvent::fingerprint`. A fingerprint is a 128-bit XXH3 hash of a canonical byte
//!   encoding of the values (`canonical`); an event's encoding holds its context's and its
//!   metadata's own fingerprints (`shared_context` keeps a context's by address). A collision
//!   between different records has probability about 2⁻¹²⁸ per pair, which tally accepts for
//!   these few records (documented in `docs/evidence.md`).
//!
//! Nothing here does I/O.

mod canonical;

use std::cell::RefCell;
use std::sync::{Arc, LazyLock};

use rustc_hash::FxHashMap;

use crate::model::{BusyIntervals, CorrelationContext, CorrelationEvent, EventBody, Metadata};
use canonical::{Canon, hashed};

/// A 128-bit content fingerprint.
pub type Fingerprint = u128;

/// Whether two records with these contexts and metadata, and equal typed bodies (the caller
/// compares those), are equal records: the direct form of fingerprint equality. Typed values are
/// canonical (an integer field holds an integer, never `1.0` or `true`), so derived equality of
/// contexts is value equality; metadata texts that differ are compared by value.
pub(crate) fn same_content(
    context: &Arc<CorrelationContext>,
    metadata: &Metadata,
    other_context: &Arc<CorrelationContext>,
    other_metadata: &Metadata,
) -> bool {
    (Arc::ptr_eq(context, other_context) || **context == **other_context)
        && (metadata.json_text() == other_metadata.json_text()
            || self::metadata(metadata) == self::metadata(other_metadata))
}

impl CorrelationEvent {
    /// Content fingerprint of everything but `event_id` (type, version, context, fields,
    /// metadata by value). Equal fingerprints mean equal records in the reference's sense.
    pub fn fingerprint(&self) -> Fingerprint {
        event(
            shared_context(self.context_arc()),
            metadata(self.metadata()),
            self.body(),
        )
    }
}

/// Equal events: the same `event_id`, equal typed bodies, and contexts and metadata equal by
/// value (`same_content`).
impl PartialEq for CorrelationEvent {
    fn eq(&self, other: &Self) -> bool {
        self.event_id_text() == other.event_id_text()
            && self.body() == other.body()
            && same_content(
                self.context_arc(),
                self.metadata(),
                other.context_arc(),
                other.metadata(),
            )
    }
}
impl Eq for CorrelationEvent {}

/// Fingerprint of a metadata object by value.
pub fn metadata(meta: &Metadata) -> Fingerprint {
    if meta.is_empty() {
        *EMPTY_METADATA
    } else {
        metadata_text(meta.json_text())
    }
}

static EMPTY_METADATA: LazyLock<Fingerprint> = LazyLock::new(|| metadata_text("{}"));

/// Fingerprint of the JSON text of a metadata object by value (what [`metadata`] gives for
/// metadata with this text).
pub(crate) fn metadata_text(text: &str) -> Fingerprint {
    hashed(|c| c.json_text(text))
}

/// Fingerprint of a context (all 19 values).
pub fn context(ctx: &CorrelationContext) -> Fingerprint {
    hashed(|c| context_into(c, ctx))
}

fn context_into(c: &mut Canon, ctx: &CorrelationContext) {
    c.tag(b'C');
    c.str(&ctx.run_id);
    c.str(&ctx.session_id);
    c.str(&ctx.producer_id);
    c.str(&ctx.source);
    c.str(&ctx.clock_domain);
    c.str(ctx.clock_kind.as_str());
    c.str(ctx.collection_mode.as_str());
    c.str(ctx.provenance.as_str());
    for s in [
        &ctx.source_version,
        &ctx.engine,
        &ctx.engine_version,
        &ctx.backend,
        &ctx.backend_version,
        &ctx.host,
        &ctx.device_uuid,
    ] {
        c.opt_str(s.as_deref());
    }
    for v in [ctx.pid, ctx.rank, ctx.local_rank, ctx.world_size] {
        c.opt_u64(v);
    }
}

/// Contexts fingerprinted on this thread, by address. Each entry holds its `Arc`, so an address
/// cannot be reused by another context while it is here. Bounded: cleared when full.
const KNOWN_CONTEXTS: usize = 1024;

thread_local! {
    static CONTEXTS: RefCell<FxHashMap<usize, (Arc<CorrelationContext>, Fingerprint)>> =
        const { RefCell::new(FxHashMap::with_hasher(rustc_hash::FxBuildHasher)) };
}

/// [`context`] of a shared context, computed once per thread and allocation.
pub(crate) fn shared_context(ctx: &Arc<CorrelationContext>) -> Fingerprint {
    let address = Arc::as_ptr(ctx) as usize;
    if let Some(known) = CONTEXTS.with_borrow(|m| m.get(&address).map(|(_, f)| *f)) {
        return known;
    }
    let fingerprint = context(ctx);
    CONTEXTS.with_borrow_mut(|m| {
        if m.len() >= KNOWN_CONTEXTS {
            m.clear();
        }
        m.insert(address, (Arc::clone(ctx), fingerprint));
    });
    fingerprint
}

/// Fingerprint of an event's content without its `event_id`: type, declared version, context,
/// every field and metadata by value.
pub fn event_content(ctx: &CorrelationContext, meta: &Metadata, body: &EventBody) -> Fingerprint {
    event(context(ctx), metadata(meta), body)
}

/// [`event_content`] from the fingerprints of the context and the metadata.
pub(crate) fn event(context: Fingerprint, metadata: Fingerprint, body: &EventBody) -> Fingerprint {
    hashed(|c| {
        c.str(body.event_type().as_str());
        let version = match body {
            EventBody::Activity(a) if a.intervals != BusyIntervals::Absent => 3,
            _ => 2,
        };
        c.int(version);
        c.fingerprint(b'C', context);
        c.fingerprint(b'M', metadata);
        match body {
            EventBody::Artifact(e) => {
                c.str(&e.artifact_kind);
                c.int(e.created_at_ns as i128);
            }
            EventBody::Request(e) => {
                c.entity(&e.request_ref);
                c.opt_entity(e.attempt_ref.as_ref());
                c.opt_entity(e.backend_request_ref.as_ref());
                c.opt_ns(e.start_ns);
                c.opt_ns(e.end_ns);
                c.opt_str(e.status.as_deref());
                c.opt_u64(e.input_tokens);
                c.opt_u64(e.output_tokens);
                c.opt_u64(e.kv_bytes);
            }
            EventBody::Iteration(e) => {
                c.entity(&e.iteration_ref);
                c.opt_entity(e.batch_ref.as_ref());
                c.opt_ns(e.start_ns);
                c.opt_ns(e.end_ns);
            }
            EventBody::Stage(e) => {
                c.entity(&e.stage_ref);
                c.str(&e.name);
                c.opt_entity(e.request_ref.as_ref());
                c.opt_entity(e.iteration_ref.as_ref());
                c.opt_ns(e.start_ns);
                c.opt_ns(e.end_ns);
                c.opt_u64(e.input_tokens);
                c.opt_u64(e.output_tokens);
                c.opt_u64(e.kv_bytes);
            }
            EventBody::Membership(e) => {
                c.entity(&e.request_ref);
                c.entity(&e.iteration_ref);
                c.str(&e.role);
                c.opt_entity(e.attempt_ref.as_ref());
                c.opt_u64(e.input_tokens);
                c.opt_u64(e.output_tokens);
                c.opt_u64(e.kv_bytes);
            }
            EventBody::Activity(e) => {
                c.entity(&e.activity_ref);
                c.str(&e.activity_kind);
                c.str(e.attribution_status.as_str());
                c.str(e.activity_domain.as_str());
                c.opt_entity(e.iteration_ref.as_ref());
                c.opt_entity(e.correlation_scope.as_ref());
                c.opt_str(e.trace_attachment_id.as_deref());
                c.opt_u64(e.runtime_correlation_id);
                c.opt_u64(e.cuda_correlation_id);
                c.opt_u64(e.stream_id);
                c.opt_u64(e.graph_id);
                c.opt_ns(e.start_ns);
                c.opt_ns(e.end_ns);
                // `intervals` lives in metadata and is covered there.
            }
            EventBody::Capabilities(e) => {
                c.str(&e.component);
                c.int(i128::from(e.available));
                for list in [&e.supported, &e.enabled, &e.collected] {
                    c.strs(list);
                }
            }
            EventBody::ClockAlignment(e) => {
                c.str(&e.from_clock_domain);
                c.str(&e.to_clock_domain);
                c.int(e.offset_ns as i128);
                c.int(e.uncertainty_ns as i128);
                c.opt_ns(e.valid_from_ns);
                c.opt_ns(e.valid_to_ns);
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(text: &str) -> Fingerprint {
        metadata(&Metadata::from_json_text(text))
    }

    #[test]
    fn metadata_equality_follows_python_values() {
        assert_eq!(meta(r#"{"x":1}"#), meta(r#"{"x":1.0}"#));
        assert_eq!(meta(r#"{"x":1}"#), meta(r#"{"x":true}"#));
        assert_eq!(meta(r#"{"x":0}"#), meta(r#"{"x":-0.0}"#));
        assert_eq!(meta(r#"{"a":1,"b":2}"#), meta(r#"{"b":2,"a":1}"#));
        assert_eq!(meta(r#"{"x":NaN}"#), meta(r#"{"x":NaN}"#));
        assert_eq!(meta("{}"), metadata(&Metadata::empty()));
        assert_ne!(meta(r#"{"x":1}"#), meta(r#"{"x":"1"}"#));
        assert_ne!(meta(r#"{"x":[1,2]}"#), meta(r#"{"x":[2,1]}"#));
        assert_ne!(meta(r#"{"x":1.5}"#), meta(r#"{"x":1}"#));
        assert_ne!(meta(r#"{"x":Infinity}"#), meta(r#"{"x":-Infinity}"#));
    }
}
