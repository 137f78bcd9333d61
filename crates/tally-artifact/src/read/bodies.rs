//! The type-specific checks of the eight event types, in the reference's order for each
//! (`docs/evidence.md#events`, `docs/evidence.md#intervals`): what comes after the constructor, `event_id` and `metadata`.
//!
//! The order between types' shared steps (classification, context, refs, constructor) is
//! `events`' business; this module only builds one body from fields already known to be
//! accepted by the type's constructor.

use std::collections::HashSet;

use tally_evidence::model::{
    ActivityDomain, ActivityReferenceEvent, ArtifactIdentityEvent, AttributionStatus,
    BusyIntervals, CapabilityEvent, ClockAlignmentEvent, EntityRef, EventBody, EventType,
    IterationEvent, MembershipEvent, Nanos, RequestEvent, StageEvent, Text,
};

use super::events::{Fields, REF_KEYS};
use super::fields::{self, Checked, Fault, opt_u64, span};
use super::value::{self, Val};
use super::wire::{self, Key};

const TOKENS: [Key; 3] = [Key::InputTokens, Key::OutputTokens, Key::KvBytes];

/// The body of an event of type `ty`; `refs` are the converted ref fields, `intervals` the raw
/// value of `metadata.intervals` when the key is present.
pub(crate) fn body(
    rec: &Fields<'_, '_>,
    ty: EventType,
    mut refs: Refs,
    intervals: Option<&str>,
) -> Checked<EventBody> {
    Ok(match ty {
        EventType::Artifact => EventBody::Artifact(ArtifactIdentityEvent {
            artifact_kind: fields::nonempty_shared(rec.val(Key::ArtifactKind), "artifact_kind")?,
            created_at_ns: fields::req_nanos(rec.val(Key::CreatedAtNs), "created_at_ns")?,
        }),
        EventType::Request => {
            let request_ref = refs.required(Key::RequestRef)?;
            let attempt_ref = refs.optional(Key::AttemptRef);
            let backend_request_ref = refs.optional(Key::BackendRequestRef);
            let (start_ns, end_ns) = span(rec.val(Key::StartNs), rec.val(Key::EndNs))?;
            let [input_tokens, output_tokens, kv_bytes] = tokens(rec)?;
            let status = fields::opt_nonempty_shared(rec.val(Key::Status), "status")?;
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
            let name = fields::nonempty_shared(rec.val(Key::Name), "name")?;
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
            let role = fields::nonempty_shared(rec.val(Key::Role), "role")?;
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
            let from_clock_domain =
                fields::nonempty_shared(rec.val(Key::FromClockDomain), "from_clock_domain")?;
            let to_clock_domain =
                fields::nonempty_shared(rec.val(Key::ToClockDomain), "to_clock_domain")?;
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
    })
}

/// The converted ref fields of one record.
pub(crate) struct Refs(pub [Option<EntityRef>; 8]);

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

fn activity(
    rec: &Fields<'_, '_>,
    refs: &mut Refs,
    intervals: Option<&str>,
) -> Checked<ActivityReferenceEvent> {
    let activity_ref = refs.required(Key::ActivityRef)?;
    let activity_kind = fields::nonempty_shared(rec.val(Key::ActivityKind), "activity_kind")?;
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
    let trace_attachment_id =
        fields::opt_nonempty_shared(rec.val(Key::TraceAttachmentId), "trace_attachment_id")?;
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

/// `metadata.intervals` (`docs/evidence.md#intervals`), checked entry by entry as the reference does.
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
    let non_negative = |raw: &str| match value::classify(raw, false) {
        Val::Int(i) if !i.negative => Some(i.value.unwrap_or(i128::MAX)),
        _ => None,
    };
    Some((non_negative(a)?, non_negative(b)?))
}

fn capabilities(rec: &Fields<'_, '_>) -> Checked<CapabilityEvent> {
    let component = fields::nonempty_shared(rec.val(Key::Component), "component")?;
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
        match value::classify(item, rec.lenient) {
            Val::Str(s) if !s.is_empty() => out.push(fields::shared_text(&s)),
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
