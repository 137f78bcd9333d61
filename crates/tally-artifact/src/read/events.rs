//! One embedded record, checked in the reference's order (`docs/evidence.md#schema-versions` step 3 to `docs/evidence.md#error-precedence`):
//! version and type classification, the context, the eight ref fields, the event constructor
//! (unknown, then missing keys), `event_id`, `metadata`, the type's own checks, and the declared
//! version. The first failing check wins.
//!
//! This is the only place where an event is validated: the embedded path (v2/v3 lines and
//! [`parse_inference_record`](crate::read::parse_inference_record)) and the compact v4 path (after
//! its context id is known to resolve) both come here. It does not decide whether a line is a
//! transport record, and never looks a context id up (see `decode` and `context`).

use std::cell::RefCell;
use std::sync::Arc;

use rustc_hash::FxHashSet;

use tally_evidence::model::{
    BusyIntervals, CorrelationContext, CorrelationEvent, EntityRef, EventBody, EventType, Metadata,
    Text,
};

use super::bodies;
use super::fields::{self, Checked, Fault, nonempty};
use super::known;
use super::scan::PlainRefs;
use super::value::{self, Val};
use super::wire::{self, Key, RecordWire};

/// Where an event's context comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ContextSource {
    /// The record's own `context` object (v2/v3).
    Embedded,
    /// A registry, resolved from `context_id` by the caller (v4): the `context_id` key is gone
    /// from the expanded record and the context is already valid.
    Registry,
}

/// A validated event without its context (for v4, the context is attached once resolved).
#[derive(Debug)]
pub(crate) struct EventParts {
    /// `event_id`.
    pub event_id: Text,
    /// `metadata`, original text.
    pub metadata: Metadata,
    /// The typed body.
    pub body: EventBody,
}

impl EventParts {
    /// The event, with its context.
    pub(crate) fn event(self, context: Arc<CorrelationContext>) -> CorrelationEvent {
        CorrelationEvent::new(context, self.event_id, self.metadata, self.body)
    }
}

/// One record's top level, with how it was parsed.
pub(crate) struct Fields<'w, 'a> {
    /// The keys as read.
    pub wire: &'w RecordWire<'a>,
    /// Whether the line's special literals were rewritten to sentinels.
    pub lenient: bool,
    /// The top-level context, when it was a known text (its raw value is then a placeholder).
    pub known_context: Option<Arc<CorrelationContext>>,
    /// The references of the usual shape the scan found.
    pub plain_refs: &'w PlainRefs,
}

impl<'a> Fields<'_, 'a> {
    /// The typed value of `key` (`None` when absent).
    pub(crate) fn val(&self, key: Key) -> Option<Val<'a>> {
        fields::typed_opt(self.wire.get(key), self.lenient)
    }
    /// The raw text of `key`'s value when it is present and not null.
    fn present(&self, key: Key) -> Option<&'a str> {
        self.wire.get(key).filter(|raw| !raw.starts_with('n'))
    }
}

struct Class {
    ty: EventType,
    /// The type's own fields (besides `context`, `event_id`, `metadata`), in the class's order.
    fields: &'static [Key],
    /// The required ones among them, in the class's order.
    required: &'static [Key],
}

fn class(ty: EventType) -> Class {
    use Key::*;
    use tally_evidence::model::EventType as Type;
    let (fields, required): (&'static [Key], &'static [Key]) = match ty {
        Type::Artifact => (&[ArtifactKind, CreatedAtNs], &[ArtifactKind, CreatedAtNs]),
        Type::Request => (
            &[
                RequestRef,
                AttemptRef,
                BackendRequestRef,
                StartNs,
                EndNs,
                Status,
                InputTokens,
                OutputTokens,
                KvBytes,
            ],
            &[RequestRef],
        ),
        Type::Iteration => (&[IterationRef, BatchRef, StartNs, EndNs], &[IterationRef]),
        Type::Stage => (
            &[
                StageRef,
                Name,
                RequestRef,
                IterationRef,
                StartNs,
                EndNs,
                InputTokens,
                OutputTokens,
                KvBytes,
            ],
            &[StageRef, Name],
        ),
        Type::Membership => (
            &[
                RequestRef,
                IterationRef,
                Role,
                AttemptRef,
                InputTokens,
                OutputTokens,
                KvBytes,
            ],
            &[RequestRef, IterationRef, Role],
        ),
        Type::Activity => (
            &[
                ActivityRef,
                ActivityKind,
                AttributionStatus,
                ActivityDomain,
                IterationRef,
                CorrelationScope,
                TraceAttachmentId,
                RuntimeCorrelationId,
                CudaCorrelationId,
                StreamId,
                GraphId,
                StartNs,
                EndNs,
            ],
            &[ActivityRef, ActivityKind, AttributionStatus],
        ),
        Type::Capabilities => (
            &[Component, Available, Supported, Enabled, Collected],
            &[Component, Available],
        ),
        Type::ClockAlignment => (
            &[
                FromClockDomain,
                ToClockDomain,
                OffsetNs,
                UncertaintyNs,
                ValidFromNs,
                ValidToNs,
            ],
            &[FromClockDomain, ToClockDomain, OffsetNs, UncertaintyNs],
        ),
    };
    Class {
        ty,
        fields,
        required,
    }
}

/// The ref-valued keys, converted in this order for every event type (`docs/evidence.md#entity-ref`).
pub(crate) const REF_KEYS: [Key; 8] = [
    Key::RequestRef,
    Key::AttemptRef,
    Key::BackendRequestRef,
    Key::IterationRef,
    Key::BatchRef,
    Key::StageRef,
    Key::ActivityRef,
    Key::CorrelationScope,
];

/// The reference naming the entity an event of type `ty` describes.
fn own_ref(ty: EventType) -> Option<Key> {
    match ty {
        EventType::Request => Some(Key::RequestRef),
        EventType::Iteration => Some(Key::IterationRef),
        EventType::Stage => Some(Key::StageRef),
        EventType::Activity => Some(Key::ActivityRef),
        _ => None,
    }
}

/// Whether the id of the reference `key` of an event of type `ty` is shared with other records
/// ([`fields::shared_id`]): every reference but the own, unique ones of stages and activities,
/// which nothing else names.
fn shares_id(ty: EventType, key: Key) -> bool {
    !matches!(
        (ty, key),
        (EventType::Activity, Key::ActivityRef) | (EventType::Stage, Key::StageRef)
    )
}

/// `parse_inference_record`: an embedded record with declared `version` (the record's own, or
/// the embedded version a v4 record expands to). A valid event's context (`Some` for
/// [`ContextSource::Embedded`]) and parts go to `event`, a v1 record is `legacy()`: the caller's
/// value is built where the parts are made, rather than wrapped and copied layer by layer.
pub(crate) fn embedded<T>(
    rec: &Fields<'_, '_>,
    version: Option<Val<'_>>,
    source: ContextSource,
    event: impl FnOnce(Option<Arc<CorrelationContext>>, EventParts) -> T,
    legacy: impl FnOnce() -> T,
) -> Checked<T> {
    // `None` for an integer beyond i128: never supported, its digits are the message.
    let (version, version_int) = match version {
        None => (Some(1), None),
        Some(Val::Int(i)) => {
            if i.value == Some(4) {
                return Err(Fault::Value(
                    "v4 requires load_inference_artifact or a sequence decoder".into(),
                ));
            }
            (i.value, Some(i))
        }
        Some(_) => return Err(Fault::Value("schema_version must be an integer".into())),
    };
    let event_type = match rec.val(Key::EventType) {
        Some(Val::Str(t)) if t.starts_with("infer.") => t,
        // A lone surrogate cannot make a known type name, but may still start with `infer.`.
        Some(Val::LossyStr(t, _)) if t.starts_with("infer.") => t.into(),
        _ => {
            return Err(Fault::Value(
                "event_type must name an inference event".into(),
            ));
        }
    };
    if version == Some(1) {
        return Ok(legacy());
    }
    let allowed: &[i128] = if event_type == EventType::Activity.as_str() {
        &[2, 3]
    } else {
        &[2]
    };
    let Some(version) = version.filter(|v| allowed.contains(v)) else {
        let shown = version_int.map(|i| i.to_string()).unwrap_or_default();
        return Err(Fault::Value(format!(
            "unsupported inference schema_version: {shown}"
        )));
    };
    let Some(ty) = EventType::parse(&event_type) else {
        return Err(Fault::Value(format!(
            "unsupported inference event_type: {event_type}"
        )));
    };
    let prefix = |fault: Fault| match fault {
        Fault::Type(m) => Fault::Value(format!("invalid {} record: {m}", ty.as_str())),
        other => other,
    };
    correlation_record(rec, ty, source, version, event).map_err(prefix)
}

/// The declared-version check, last of an event's checks (`docs/evidence.md#error-precedence`): an activity with
/// `metadata.intervals` is content version 3, every other event 2.
fn declared_version(ty: EventType, version: i128, body: &EventBody) -> Checked<()> {
    let content_version = match body {
        EventBody::Activity(a) if a.intervals != BusyIntervals::Absent => 3,
        _ => 2,
    };
    if content_version != version {
        return Err(Fault::Value(if version == 3 {
            format!(
                "{} schema_version 3 requires metadata.intervals",
                ty.as_str()
            )
        } else {
            format!(
                "{} with metadata.intervals requires schema_version {content_version}",
                ty.as_str()
            )
        }));
    }
    Ok(())
}

/// `_parse_correlation_record`: context, refs, constructor, checks, then the declared `version`;
/// the context and parts go to `into`. `Fault::Type` is returned bare; the caller adds the
/// `invalid ... record: ` prefix.
fn correlation_record<T>(
    rec: &Fields<'_, '_>,
    ty: EventType,
    source: ContextSource,
    version: i128,
    into: impl FnOnce(Option<Arc<CorrelationContext>>, EventParts) -> T,
) -> Checked<T> {
    let context = match source {
        ContextSource::Registry => None,
        ContextSource::Embedded => match (&rec.known_context, rec.wire.get(Key::Context)) {
            (Some(known), _) => Some(Arc::clone(known)),
            (None, Some(raw)) if raw.starts_with('{') => {
                Some(known::shared_context(raw, rec.lenient)?)
            }
            _ => return Err(Fault::Value("context must be an object".into())),
        },
    };
    let mut refs: [Option<EntityRef>; 8] = Default::default();
    for (i, (slot, key)) in refs.iter_mut().zip(REF_KEYS).enumerate() {
        if let Some(raw) = rec.present(key) {
            if !raw.starts_with('{') {
                return Err(Fault::Value(format!("{} must be an object", key.name())));
            }
            let share = shares_id(ty, key);
            *slot = Some(match rec.plain_refs.get(i, rec.wire.text()) {
                Some((producer_id, id)) if !producer_id.is_empty() && !id.is_empty() => {
                    fields::plain_entity_ref(producer_id, id, share)
                }
                _ => fields::entity_ref(raw, rec.lenient, share)?,
            });
        }
    }
    let class = class(ty);
    constructor(rec, &class, source)?;
    let own_id = own_ref(ty)
        .and_then(|key| refs[REF_KEYS.iter().position(|k| *k == key)?].as_ref())
        .map(|r| &r.id);
    let event_id = match (rec.val(Key::EventId), own_id) {
        // The event is named after its entity (activities, iterations): one text for both.
        (Some(Val::Str(s)), Some(id)) if *s == **id => Text::clone(id),
        (v, _) => nonempty(v, "event_id")?,
    };
    let (metadata, intervals) = match rec.wire.get(Key::Metadata) {
        None => (Metadata::empty(), None),
        Some(raw) if raw.starts_with('{') => {
            (shared_metadata(raw, rec.lenient), wire::intervals_of(raw))
        }
        Some(_) => return Err(Fault::Value("metadata must be an object".into())),
    };
    let body = bodies::body(rec, ty, bodies::Refs(refs), intervals)?;
    declared_version(ty, version, &body)?;
    Ok(into(
        context,
        EventParts {
            event_id,
            metadata,
            body,
        },
    ))
}

/// The event constructor's keyword binding: the first key (in the record's order) the class does
/// not take, then the required keys that are absent, in the class's order.
fn constructor(rec: &Fields<'_, '_>, class: &Class, source: ContextSource) -> Checked<()> {
    let mask = |keys: &[Key]| keys.iter().fold(0u64, |m, k| m | 1 << *k as u32);
    let mut takes = mask(&[
        Key::SchemaVersion,
        Key::EventType,
        Key::Context,
        Key::EventId,
        Key::Metadata,
    ]) | mask(class.fields);
    if source == ContextSource::Registry {
        takes |= mask(&[Key::ContextId]);
    }
    let present = rec.wire.present_mask();
    let class_name = class.ty.class_name();
    let unknown = rec.wire.first_unknown();
    if present & !takes != 0 || unknown.is_some() {
        let mut first: Option<(u16, &str)> = unknown;
        for &key in Key::ALL {
            let position = rec.wire.position(key as usize);
            if takes & 1 << key as u32 == 0
                && position != 0
                && first.is_none_or(|(p, _)| position < p)
            {
                first = Some((position, key.name()));
            }
        }
        let (_, key) = first.expect("an unexpected key");
        return Err(Fault::Type(fields::unexpected_message(class_name, key)));
    }
    let required = mask(&[Key::EventId]) | mask(class.required);
    if present & required != required {
        let missing: Vec<&str> = std::iter::once(Key::EventId)
            .chain(class.required.iter().copied())
            .filter(|&k| !rec.wire.has(k))
            .map(Key::name)
            .collect();
        return Err(Fault::Type(fields::missing_message(
            class_name,
            "keyword-only",
            &missing,
        )));
    }
    Ok(())
}

/// Metadata texts seen on this thread. Bounded: cleared when full.
const KNOWN_METADATA: usize = 8192;

thread_local! {
    static METADATA: RefCell<FxHashSet<Text>> =
        const { RefCell::new(FxHashSet::with_hasher(rustc_hash::FxBuildHasher)) };
}

/// The metadata whose raw object text is `raw`: equal texts read on one thread share one
/// allocation (records of one kind often carry the same metadata), which also makes comparing
/// them in resolution a pointer check.
fn shared_metadata(raw: &str, lenient: bool) -> Metadata {
    if lenient || raw == "{}" {
        return Metadata::from_json_text(&restore_literals(raw, lenient));
    }
    METADATA.with_borrow_mut(|known| {
        if let Some(text) = known.get(raw) {
            return Metadata::from_shared_text(text.clone());
        }
        if known.len() >= KNOWN_METADATA {
            known.clear();
        }
        let text = Text::from(raw);
        known.insert(text.clone());
        Metadata::from_shared_text(text)
    })
}

/// In a rewritten line, puts the literals back where the sentinels stand, so metadata keeps the
/// text it was written with.
fn restore_literals(raw: &str, lenient: bool) -> std::borrow::Cow<'_, str> {
    const LITERALS: [&str; 3] = ["NaN", "Infinity", "-Infinity"];
    if !lenient || !raw.contains("\\u0000tally:") {
        return raw.into();
    }
    let mut text = raw.to_owned();
    for ((sentinel, _), literal) in value::SPECIAL_SENTINELS.iter().zip(LITERALS) {
        text = text.replace(sentinel, literal);
    }
    text.into()
}
