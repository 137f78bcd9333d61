//! Records as a file holds them: a validated [`CorrelationEvent`] (its parts and its content
//! fingerprint) or a verbatim [`LegacyRecord`], as an [`InferenceRecord`].
//!
//! Only assembly lives here: the parts are validated by whoever builds them (the reader, or the
//! caller of [`CorrelationEvent::new`]); what makes two events equal, and the content fingerprint
//! ([`CorrelationEvent::fingerprint`]), are [`crate::fingerprint`]'s.

use std::sync::Arc;

use super::{
    BusyIntervals, ClockKind, CorrelationContext, EventBody, EventType, Metadata, Nanos, Text,
};

/// One validated correlation event: context, id, metadata and the typed body.
///
/// Built through [`CorrelationEvent::new`]; the parts are read through accessors. Its content
/// [`Fingerprint`](crate::fingerprint::Fingerprint) is computed when asked for (resolution
/// compares records directly, see [`crate::fingerprint`]), which also defines its equality.
#[derive(Clone, Debug)]
pub struct CorrelationEvent {
    context: Arc<CorrelationContext>,
    event_id: Text,
    metadata: Metadata,
    body: EventBody,
}

impl CorrelationEvent {
    /// Assembles an event from validated parts. `metadata` must be consistent with `body` (for an
    /// activity, its `intervals` key is what `body.intervals` says); the reader guarantees it.
    pub fn new(
        context: Arc<CorrelationContext>,
        event_id: Text,
        metadata: Metadata,
        body: EventBody,
    ) -> Self {
        Self {
            context,
            event_id,
            metadata,
            body,
        }
    }

    /// Who observed it, with which clock.
    pub fn context(&self) -> &CorrelationContext {
        &self.context
    }
    /// The shared context (v4 files share one per definition).
    pub fn context_arc(&self) -> &Arc<CorrelationContext> {
        &self.context
    }
    /// The record's event id (unique per session and producer).
    pub fn event_id(&self) -> &str {
        &self.event_id
    }
    /// The event id as shared text.
    pub fn event_id_text(&self) -> &Text {
        &self.event_id
    }
    /// The metadata object.
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }
    /// The typed body.
    pub fn body(&self) -> &EventBody {
        &self.body
    }
    /// The event type.
    pub fn event_type(&self) -> EventType {
        self.body.event_type()
    }
    /// The declared schema version this event must carry on the wire: 3 for an activity whose
    /// metadata has an `intervals` key, else 2.
    pub fn schema_version(&self) -> u8 {
        match &self.body {
            EventBody::Activity(a) if a.intervals != BusyIntervals::Absent => 3,
            _ => 2,
        }
    }
    /// Consumes the event, returning its parts.
    #[inline]
    pub fn into_parts(self) -> (Arc<CorrelationContext>, Text, Metadata, EventBody) {
        (self.context, self.event_id, self.metadata, self.body)
    }
    /// Elapsed time (`docs/evidence.md#events`): `end - start` on a monotonic clock with both ends.
    pub fn elapsed_ns(&self) -> Option<Nanos> {
        if self.context.clock_kind != ClockKind::Monotonic {
            return None;
        }
        let (start, end) = match &self.body {
            EventBody::Request(e) => (e.start_ns, e.end_ns),
            EventBody::Iteration(e) => (e.start_ns, e.end_ns),
            EventBody::Stage(e) => (e.start_ns, e.end_ns),
            EventBody::Activity(e) => (e.start_ns, e.end_ns),
            _ => (None, None),
        };
        Some(end? - start?)
    }
}

/// A version-1 (legacy client) record: kept verbatim, never validated, carries no evidence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LegacyRecord {
    /// The JSON text of the record as read.
    pub json: Box<str>,
}

/// One record of an artifact.
// Events are the common case and legacy records are rare: boxing the event would cost every
// record an allocation to save space on the few legacy ones.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InferenceRecord {
    /// A legacy (v1) record, passed through untouched.
    Legacy(LegacyRecord),
    /// A validated correlation event.
    Event(CorrelationEvent),
}
