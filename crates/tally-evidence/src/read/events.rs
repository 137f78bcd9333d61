//! One embedded record, checked in the reference's order (`evidence.md` §2.2 step 3 to §2.8):
//! version and type classification, the context, the eight ref fields, the event constructor
//! (unknown, then missing keys), `event_id`, `metadata`, the type's own checks, and the declared
//! version. The first failing check wins.
//!
//! This is the only place where an event is validated: the embedded path (v2/v3 lines and
//! [`parse_inference_record`](crate::read::parse_inference_record)) and the compact v4 path (after
//! its context id is known to resolve) both come here. It does not decide whether a line is a
//! transport record, and never looks a context id up (see `decode` and `context`).

use std::collections::HashSet;
use std::sync::Arc;

use crate::model::{
    ActivityDomain, ActivityReferenceEvent, ArtifactIdentityEvent, AttributionStatus,
    BusyIntervals, CapabilityEvent, ClockAlignmentEvent, CorrelationContext, EntityRef, EventBody,
    EventType, IterationEvent, MembershipEvent, Metadata, Nanos, RequestEvent, StageEvent, Text,
};

use super::fields::{self, Checked, Fault, nonempty, opt_nonempty, opt_u64, span};
use super::wire::{self, Key, RecordWire, Val};

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

/// What an embedded record is.
#[allow(clippy::large_enum_variant)] // short-lived, never stored
#[derive(Debug)]
pub(crate) enum Embedded {
    /// A v1 record: kept verbatim by the caller.
    Legacy,
    /// A valid event; the context is `Some` for [`ContextSource::Embedded`].
    Event(Option<Arc<CorrelationContext>>, EventParts),
}

/// One record's top level, with the flag saying whether `NaN`/`Infinity` were rewritten.
pub(crate) struct Fields<'w, 'a> {
    /// The keys as read.
    pub wire: &'w RecordWire<'a>,
    /// Whether the line's special literals were rewritten to sentinels.
    pub lenient: bool,
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

const TOKENS: [Key; 3] = [Key::InputTokens, Key::OutputTokens, Key::KvBytes];

fn class(ty: EventType) -> Class {
    use crate::model::EventType as Type;
    use Key::*;
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

/// The ref-valued keys, converted in this order for every event type (`evidence.md` §2.4).
const REF_KEYS: [Key; 8] = [
    Key::RequestRef,
    Key::AttemptRef,
    Key::BackendRequestRef,
    Key::IterationRef,
    Key::BatchRef,
    Key::StageRef,
    Key::ActivityRef,
    Key::CorrelationScope,
];

/// `parse_inference_record`: an embedded record with declared `version` (the record's own, or
/// the embedded version a v4 record expands to).
pub(crate) fn embedded(
    rec: &Fields<'_, '_>,
    version: Option<Val<'_>>,
    source: ContextSource,
) -> Checked<Embedded> {
    // `None` for an integer beyond i128: never supported, its digits are the message.
    let (version, version_text): (Option<i128>, String) = match version {
        None => (Some(1), String::new()),
        Some(Val::Int(i)) => {
            if i.value == Some(4) {
                return Err(Fault::Value(
                    "v4 requires load_inference_artifact or a sequence decoder".into(),
                ));
            }
            (i.value, i.to_string())
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
        return Ok(Embedded::Legacy);
    }
    let allowed: &[i128] = if event_type == EventType::Activity.as_str() {
        &[2, 3]
    } else {
        &[2]
    };
    let Some(version) = version.filter(|v| allowed.contains(v)) else {
        return Err(Fault::Value(format!(
            "unsupported inference schema_version: {version_text}"
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
    let (context, parts) = correlation_record(rec, ty, source).map_err(prefix)?;
    let content_version = match &parts.body {
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
    Ok(Embedded::Event(context, parts))
}

/// `_parse_correlation_record`: context, refs, constructor, checks. `Fault::Type` is returned
/// bare; the caller adds the `invalid ... record: ` prefix.
fn correlation_record(
    rec: &Fields<'_, '_>,
    ty: EventType,
    source: ContextSource,
) -> Checked<(Option<Arc<CorrelationContext>>, EventParts)> {
    let context = match source {
        ContextSource::Registry => None,
        ContextSource::Embedded => match rec.wire.get(Key::Context) {
            Some(raw) if raw.starts_with('{') => Some(fields::shared_context(raw, rec.lenient)?),
            _ => return Err(Fault::Value("context must be an object".into())),
        },
    };
    let mut refs: [Option<EntityRef>; 8] = Default::default();
    for (slot, key) in refs.iter_mut().zip(REF_KEYS) {
        if let Some(raw) = rec.present(key) {
            if !raw.starts_with('{') {
                return Err(Fault::Value(format!("{} must be an object", key.name())));
            }
            *slot = Some(fields::entity_ref(raw, rec.lenient)?);
        }
    }
    let class = class(ty);
    constructor(rec, &class, source)?;
    let event_id = nonempty(rec.val(Key::EventId), "event_id")?;
    let (metadata, intervals) = match rec.wire.get(Key::Metadata) {
        None => (Metadata::empty(), None),
        Some(raw) if raw.starts_with('{') => (
            Metadata::from_json_text(&restore_literals(raw, rec.lenient)),
            wire::intervals_of(raw),
        ),
        Some(_) => return Err(Fault::Value("metadata must be an object".into())),
    };
    let mut refs = Refs(refs);
    let body = match ty {
        EventType::Artifact => EventBody::Artifact(ArtifactIdentityEvent {
            artifact_kind: nonempty(rec.val(Key::ArtifactKind), "artifact_kind")?,
            created_at_ns: fields::req_nanos(rec.val(Key::CreatedAtNs), "created_at_ns")?,
        }),
        EventType::Request => {
            let request_ref = refs.required(Key::RequestRef)?;
            let attempt_ref = refs.optional(Key::AttemptRef);
            let backend_request_ref = refs.optional(Key::BackendRequestRef);
            let (start_ns, end_ns) = span(rec.val(Key::StartNs), rec.val(Key::EndNs))?;
            let [input_tokens, output_tokens, kv_bytes] = tokens(rec)?;
            let status = opt_nonempty(rec.val(Key::Status), "status")?;
            EventBody::Request(RequestEvent {
                request_ref,
                attempt_ref,
                backend_request_ref,
                start_ns,
                end_ns,
                status,
                input_tokens,
                output_tokens,
                kv_bytes,
            })
        }
        EventType::Iteration => {
            let iteration_ref = refs.required(Key::IterationRef)?;
            let batch_ref = refs.optional(Key::BatchRef);
            let (start_ns, end_ns) = span(rec.val(Key::StartNs), rec.val(Key::EndNs))?;
            EventBody::Iteration(IterationEvent {
                iteration_ref,
                batch_ref,
                start_ns,
                end_ns,
            })
        }
        EventType::Stage => {
            let stage_ref = refs.required(Key::StageRef)?;
            let name = nonempty(rec.val(Key::Name), "name")?;
            let request_ref = refs.optional(Key::RequestRef);
            let iteration_ref = refs.optional(Key::IterationRef);
            if request_ref.is_none() && iteration_ref.is_none() {
                return Err(Fault::Value(
                    "stage must reference a request or iteration".into(),
                ));
            }
            let (start_ns, end_ns) = span(rec.val(Key::StartNs), rec.val(Key::EndNs))?;
            let [input_tokens, output_tokens, kv_bytes] = tokens(rec)?;
            EventBody::Stage(StageEvent {
                stage_ref,
                name,
                request_ref,
                iteration_ref,
                start_ns,
                end_ns,
                input_tokens,
                output_tokens,
                kv_bytes,
            })
        }
        EventType::Membership => {
            let request_ref = refs.required(Key::RequestRef)?;
            let iteration_ref = refs.required(Key::IterationRef)?;
            let role = nonempty(rec.val(Key::Role), "role")?;
            let attempt_ref = refs.optional(Key::AttemptRef);
            let [input_tokens, output_tokens, kv_bytes] = tokens(rec)?;
            EventBody::Membership(MembershipEvent {
                request_ref,
                iteration_ref,
                role,
                attempt_ref,
                input_tokens,
                output_tokens,
                kv_bytes,
            })
        }
        EventType::Activity => EventBody::Activity(activity(rec, &mut refs, intervals)?),
        EventType::Capabilities => EventBody::Capabilities(capabilities(rec)?),
        EventType::ClockAlignment => {
            let from_clock_domain = nonempty(rec.val(Key::FromClockDomain), "from_clock_domain")?;
            let to_clock_domain = nonempty(rec.val(Key::ToClockDomain), "to_clock_domain")?;
            let offset_ns = fields::signed_nanos(rec.val(Key::OffsetNs), "offset_ns")?;
            let uncertainty_ns = fields::req_nanos(rec.val(Key::UncertaintyNs), "uncertainty_ns")?;
            let (valid_from_ns, valid_to_ns) =
                span(rec.val(Key::ValidFromNs), rec.val(Key::ValidToNs))?;
            EventBody::ClockAlignment(ClockAlignmentEvent {
                from_clock_domain,
                to_clock_domain,
                offset_ns,
                uncertainty_ns,
                valid_from_ns,
                valid_to_ns,
            })
        }
    };
    Ok((
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
    let takes = |key: Key| {
        matches!(
            key,
            Key::SchemaVersion | Key::EventType | Key::Context | Key::EventId | Key::Metadata
        ) || (key == Key::ContextId && source == ContextSource::Registry)
            || class.fields.contains(&key)
    };
    let mut first: Option<(u32, &str)> = rec.wire.first_unknown();
    for &key in Key::ALL {
        let position = rec.wire.position(key as usize);
        if position != 0 && !takes(key) && first.is_none_or(|(p, _)| position < p) {
            first = Some((position, key.name()));
        }
    }
    let class_name = class.ty.class_name();
    if let Some((_, key)) = first {
        return Err(Fault::Type(fields::unexpected_message(class_name, key)));
    }
    let missing: Vec<&str> = std::iter::once(Key::EventId)
        .chain(class.required.iter().copied())
        .filter(|&k| !rec.wire.has(k))
        .map(Key::name)
        .collect();
    if !missing.is_empty() {
        return Err(Fault::Type(fields::missing_message(
            class_name,
            "keyword-only",
            &missing,
        )));
    }
    Ok(())
}

/// The converted ref fields of one record.
struct Refs([Option<EntityRef>; 8]);

impl Refs {
    fn take(&mut self, key: Key) -> Option<EntityRef> {
        let i = REF_KEYS.iter().position(|k| *k == key).expect("a ref key");
        self.0[i].take()
    }
    /// `_optional_ref`: after conversion a present value is a ref or null, so this never fails.
    fn optional(&mut self, key: Key) -> Option<EntityRef> {
        self.take(key)
    }
    /// `_require_ref`: null is refused.
    fn required(&mut self, key: Key) -> Checked<EntityRef> {
        self.take(key)
            .ok_or_else(|| Fault::Value(format!("{} must be an EntityRef", key.name())))
    }
}

fn tokens(rec: &Fields<'_, '_>) -> Checked<[Option<u64>; 3]> {
    let mut out = [None; 3];
    for (slot, key) in out.iter_mut().zip(TOKENS) {
        *slot = opt_u64(rec.val(key), key.name())?;
    }
    Ok(out)
}

/// In a rewritten line, puts the literals back where the sentinels stand, so metadata keeps the
/// text it was written with.
fn restore_literals(raw: &str, lenient: bool) -> std::borrow::Cow<'_, str> {
    const LITERALS: [&str; 3] = ["NaN", "Infinity", "-Infinity"];
    if !lenient || !raw.contains("\\u0000tally:") {
        return raw.into();
    }
    let mut text = raw.to_owned();
    for ((sentinel, _), literal) in wire::SPECIAL_SENTINELS.iter().zip(LITERALS) {
        text = text.replace(sentinel, literal);
    }
    text.into()
}

fn activity(
    rec: &Fields<'_, '_>,
    refs: &mut Refs,
    intervals: Option<&str>,
) -> Checked<ActivityReferenceEvent> {
    let activity_ref = refs.required(Key::ActivityRef)?;
    let activity_kind = nonempty(rec.val(Key::ActivityKind), "activity_kind")?;
    let activity_domain = match rec.val(Key::ActivityDomain) {
        None => ActivityDomain::Unknown,
        v => fields::member(
            v,
            ActivityDomain::parse,
            "activity_domain must be gpu, runtime, cpu, or unknown",
        )?,
    };
    let iteration_ref = refs.optional(Key::IterationRef);
    let correlation_scope = refs.optional(Key::CorrelationScope);
    let attribution_status = fields::member(
        rec.val(Key::AttributionStatus),
        |s| match s {
            "linked" => Some(AttributionStatus::Linked),
            "unresolved" => Some(AttributionStatus::Unresolved),
            _ => None,
        },
        "attribution_status must be linked or unresolved",
    )?;
    if iteration_ref.is_none() != (attribution_status == AttributionStatus::Unresolved) {
        return Err(Fault::Value(
            "attribution_status must match the iteration link".into(),
        ));
    }
    let trace_attachment_id = opt_nonempty(rec.val(Key::TraceAttachmentId), "trace_attachment_id")?;
    let mut ids = [None; 4];
    let id_keys = [
        Key::RuntimeCorrelationId,
        Key::CudaCorrelationId,
        Key::StreamId,
        Key::GraphId,
    ];
    for (slot, key) in ids.iter_mut().zip(id_keys) {
        *slot = opt_u64(rec.val(key), key.name())?;
    }
    let (start_ns, end_ns) = span(rec.val(Key::StartNs), rec.val(Key::EndNs))?;
    let intervals = match intervals {
        None => BusyIntervals::Absent,
        Some(raw) if raw.starts_with('n') => BusyIntervals::Null,
        Some(raw) => BusyIntervals::List(busy_intervals(raw, start_ns, end_ns)?),
    };
    let [
        runtime_correlation_id,
        cuda_correlation_id,
        stream_id,
        graph_id,
    ] = ids;
    Ok(ActivityReferenceEvent {
        activity_ref,
        activity_kind,
        attribution_status,
        activity_domain,
        iteration_ref,
        correlation_scope,
        trace_attachment_id,
        runtime_correlation_id,
        cuda_correlation_id,
        stream_id,
        graph_id,
        start_ns,
        end_ns,
        intervals,
    })
}

/// `metadata.intervals` (`evidence.md` §2.6), checked entry by entry as the reference does.
/// Integers too large for `i128` are saturated: they can only fail "inside start_ns..end_ns",
/// which is what the reference reports for them.
fn busy_intervals(
    raw: &str,
    start: Option<Nanos>,
    end: Option<Nanos>,
) -> Checked<Vec<(Nanos, Nanos)>> {
    let (Some(start), Some(end)) = (start, end) else {
        return Err(Fault::Value(
            "metadata.intervals needs start_ns and end_ns".into(),
        ));
    };
    let items = if raw.starts_with('[') {
        wire::list_items(raw)
    } else {
        Vec::new()
    };
    if items.is_empty() {
        return Err(Fault::Value(
            "metadata.intervals must be a non-empty list of [offset_ns, duration_ns] pairs".into(),
        ));
    }
    let mut out = Vec::with_capacity(items.len());
    let mut cursor: i128 = 0;
    let (start, end) = (i128::from(start), i128::from(end));
    for item in items {
        let (offset, duration) = interval_pair(item).ok_or_else(|| {
            Fault::Value(
                "metadata.intervals entries must be [offset_ns, duration_ns] pairs of \
                 non-negative integers"
                    .into(),
            )
        })?;
        if offset < cursor {
            return Err(Fault::Value(
                "metadata.intervals must be sorted and disjoint".into(),
            ));
        }
        cursor = offset.saturating_add(duration);
        if start.saturating_add(cursor) > end {
            return Err(Fault::Value(
                "metadata.intervals must lie inside start_ns..end_ns".into(),
            ));
        }
        // Inside the span, so both fit: 0 <= offset <= cursor <= end - start <= i64::MAX.
        out.push((offset as Nanos, duration as Nanos));
    }
    Ok(out)
}

fn interval_pair(raw: &str) -> Option<(i128, i128)> {
    if !raw.starts_with('[') {
        return None;
    }
    let items = wire::list_items(raw);
    let [a, b] = items.as_slice() else {
        return None;
    };
    let non_negative = |raw: &str| match wire::classify(raw, false) {
        Val::Int(i) if !i.negative => Some(i.value.unwrap_or(i128::MAX)),
        _ => None,
    };
    Some((non_negative(a)?, non_negative(b)?))
}

fn capabilities(rec: &Fields<'_, '_>) -> Checked<CapabilityEvent> {
    let component = nonempty(rec.val(Key::Component), "component")?;
    let available = match rec.val(Key::Available) {
        Some(Val::Bool(b)) => b,
        _ => return Err(Fault::Value("available must be a boolean".into())),
    };
    let mut lists: [Vec<Text>; 3] = Default::default();
    for (list, key) in lists
        .iter_mut()
        .zip([Key::Supported, Key::Enabled, Key::Collected])
    {
        *list = capability_names(rec, key)?;
    }
    let [supported, enabled, collected] = lists;
    fn set(list: &[Text]) -> HashSet<&str> {
        list.iter().map(|s| s.as_ref()).collect()
    }
    let (s, e, c) = (set(&supported), set(&enabled), set(&collected));
    if !(c.is_subset(&e) && e.is_subset(&s)) {
        return Err(Fault::Value(
            "collected must be enabled and enabled must be supported".into(),
        ));
    }
    let reports_any = !(supported.is_empty() && enabled.is_empty() && collected.is_empty());
    if !available && reports_any {
        return Err(Fault::Value(
            "unavailable components cannot report capabilities".into(),
        ));
    }
    Ok(CapabilityEvent {
        component,
        available,
        supported,
        enabled,
        collected,
    })
}

fn capability_names(rec: &Fields<'_, '_>, key: Key) -> Checked<Vec<Text>> {
    let name = key.name();
    let shape = || Fault::Value(format!("{name} must be a list of non-empty strings"));
    let raw = match rec.wire.get(key) {
        None => return Ok(Vec::new()),
        Some(raw) if raw.starts_with('[') => raw,
        Some(_) => return Err(shape()),
    };
    let mut out: Vec<Text> = Vec::new();
    let mut lossy = None;
    for item in wire::list_items(raw) {
        match wire::classify(item, rec.lenient) {
            Val::Str(s) if !s.is_empty() => out.push(Text::from(s.as_ref())),
            Val::LossyStr(_, unit) => {
                lossy.get_or_insert(unit);
            }
            _ => return Err(shape()),
        }
    }
    if let Some(unit) = lossy {
        return Err(fields::lone_surrogate(name, unit));
    }
    let distinct: HashSet<&str> = out.iter().map(|s| s.as_ref()).collect();
    if distinct.len() != out.len() {
        return Err(Fault::Value(format!("{name} must not contain duplicates")));
    }
    Ok(out)
}
