//! Field-level checks with the reference's messages: non-empty strings, non-negative integers,
//! spans, enumerations, and the two small value objects (`CorrelationContext`, `EntityRef`) with
//! their constructor errors (`docs/evidence.md#context`, `docs/evidence.md#entity-ref`).
//!
//! Every check takes a value typed by [`wire::classify`] (`None` when the key is absent) and
//! returns the model value or a [`Fault`]. Integers that Python would accept but that do not fit
//! tally's model (`u64` counters, `i64` nanoseconds) are [`Fault::Range`], raised at the point where
//! the reference checks that field. Which checks run in which order is the caller's business
//! (`events`); this module owns only the wording.

use std::cell::RefCell;
use std::thread::LocalKey;

use rustc_hash::{FxBuildHasher, FxHashSet};

use tally_evidence::model::{
    ClockKind, CollectionMode, CorrelationContext, EntityRef, Nanos, Provenance, Text,
};

use super::value::{self, Int, Val};
use super::wire::{self, ContextWire};

/// Why a record is refused, before the line is attached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Fault {
    /// The reference raises `ValueError(message)`: reported as is.
    Value(String),
    /// The reference raises a `TypeError` inside a constructor (unknown or missing keyword, an
    /// unhashable enum value): reported as `invalid {event_type} record: {message}` for an event,
    /// bare for a context definition.
    Type(String),
    /// A value the reference accepts but tally cannot hold: reported as `Error::OutOfRange`.
    Range(String),
}

/// `Result` with a [`Fault`].
pub(crate) type Checked<T> = Result<T, Fault>;

/// Types an optional raw value (`None`: the key is absent).
pub(crate) fn typed_opt(raw: Option<&str>, lenient: bool) -> Option<Val<'_>> {
    raw.map(|r| value::classify(r, lenient))
}

/// The refusal of a string value that has a lone surrogate escape: Python keeps such a string,
/// tally's text is UTF-8 and cannot.
pub(crate) fn lone_surrogate(field: &str, unit: u16) -> Fault {
    Fault::Value(format!(
        "{field} contains the lone surrogate escape \\u{unit:04x}, which tally cannot \
         represent: write the text as valid UTF-8"
    ))
}

fn value<T>(message: String) -> Checked<T> {
    Err(Fault::Value(message))
}

/// A non-empty string (`{field} must be a non-empty string`). An absent key counts as null.
pub(crate) fn nonempty(v: Option<Val<'_>>, field: &str) -> Checked<Text> {
    match v {
        Some(Val::Str(s)) if !s.is_empty() => Ok(Text::from(s.as_ref())),
        Some(Val::LossyStr(_, unit)) => Err(lone_surrogate(field, unit)),
        _ => value(format!("{field} must be a non-empty string")),
    }
}

/// Text shared with earlier equal values read on this thread, for the fields whose values repeat
/// across records (producer ids, roles, kinds, names, statuses, clock domains): one allocation
/// per distinct value and thread instead of one per record. Bounded: cleared when full.
pub(crate) fn shared_text(s: &str) -> Text {
    thread_local! {
        static TEXTS: RefCell<FxHashSet<Text>> =
            const { RefCell::new(FxHashSet::with_hasher(FxBuildHasher)) };
    }
    share(&TEXTS, 4096, s)
}

/// Text shared with earlier equal ids of referenced entities read on this thread: a request or
/// iteration is named by every membership, stage and activity that belongs to it, and records
/// that reference one entity come close together. Bounded: cleared when full.
pub(crate) fn shared_id(s: &str) -> Text {
    thread_local! {
        static IDS: RefCell<FxHashSet<Text>> =
            const { RefCell::new(FxHashSet::with_hasher(FxBuildHasher)) };
    }
    share(&IDS, 1 << 15, s)
}

fn share(set: &'static LocalKey<RefCell<FxHashSet<Text>>>, capacity: usize, s: &str) -> Text {
    set.with_borrow_mut(|texts| {
        if let Some(text) = texts.get(s) {
            return Text::clone(text);
        }
        if texts.len() >= capacity {
            texts.clear();
        }
        let text = Text::from(s);
        texts.insert(Text::clone(&text));
        text
    })
}

/// [`nonempty`] for a field whose values repeat across records: the text is [`shared_text`].
pub(crate) fn nonempty_shared(v: Option<Val<'_>>, field: &str) -> Checked<Text> {
    match v {
        Some(Val::Str(s)) if !s.is_empty() => Ok(shared_text(&s)),
        v => nonempty(v, field),
    }
}

/// [`opt_nonempty`] for a field whose values repeat across records.
pub(crate) fn opt_nonempty_shared(v: Option<Val<'_>>, field: &str) -> Checked<Option<Text>> {
    match v {
        None | Some(Val::Null) => Ok(None),
        v => nonempty_shared(v, field).map(Some),
    }
}

/// Null or a non-empty string.
pub(crate) fn opt_nonempty(v: Option<Val<'_>>, field: &str) -> Checked<Option<Text>> {
    match v {
        None | Some(Val::Null) => Ok(None),
        v => nonempty(v, field).map(Some),
    }
}

fn out_of_range(field: &str, int: &Int<'_>, limit: &str) -> Fault {
    Fault::Range(format!(
        "{field} {int} is out of range: tally holds it as {limit}; the reference accepts it, \
         tally refuses rather than wrap: fix the value at its producer"
    ))
}

const U64_LIMIT: &str = "an unsigned 64-bit integer (at most 18446744073709551615)";
const NANOS_LIMIT: &str = "signed 64-bit nanoseconds (at most 9223372036854775807)";
const SIGNED_NANOS_LIMIT: &str =
    "signed 64-bit nanoseconds (from -9223372036854775808 to 9223372036854775807)";

/// Null or an integer ≥ 0 held as `u64` (counters, ids, pid, ranks).
pub(crate) fn opt_u64(v: Option<Val<'_>>, field: &str) -> Checked<Option<u64>> {
    match v {
        None | Some(Val::Null) => Ok(None),
        Some(Val::Int(i)) if !i.negative => i
            .value
            .and_then(|x| u64::try_from(x).ok())
            .map(Some)
            .ok_or_else(|| out_of_range(field, &i, U64_LIMIT)),
        _ => value(format!("{field} must be a non-negative integer or null")),
    }
}

/// Null or an integer ≥ 0 held as [`Nanos`].
pub(crate) fn opt_nanos(v: Option<Val<'_>>, field: &str) -> Checked<Option<Nanos>> {
    match v {
        None | Some(Val::Null) => Ok(None),
        Some(Val::Int(i)) if !i.negative => nanos(field, &i, NANOS_LIMIT).map(Some),
        _ => value(format!("{field} must be a non-negative integer or null")),
    }
}

/// An integer ≥ 0 held as [`Nanos`] (`{field} must be a non-negative integer`, null included).
pub(crate) fn req_nanos(v: Option<Val<'_>>, field: &str) -> Checked<Nanos> {
    match v {
        Some(Val::Int(i)) if !i.negative => nanos(field, &i, NANOS_LIMIT),
        _ => value(format!("{field} must be a non-negative integer")),
    }
}

/// An integer of any sign held as [`Nanos`] (`{field} must be an integer`).
pub(crate) fn signed_nanos(v: Option<Val<'_>>, field: &str) -> Checked<Nanos> {
    match v {
        Some(Val::Int(i)) => nanos(field, &i, SIGNED_NANOS_LIMIT),
        _ => value(format!("{field} must be an integer")),
    }
}

fn nanos(field: &str, int: &Int<'_>, limit: &str) -> Checked<Nanos> {
    int.value
        .and_then(|x| Nanos::try_from(x).ok())
        .ok_or_else(|| out_of_range(field, int, limit))
}

/// The reference's span helper: both ends null or ≥ 0, and `end ≥ start` when both are set.
/// The messages always say `start_ns`/`end_ns` (the clock-alignment window reuses it).
pub(crate) fn span(
    start: Option<Val<'_>>,
    end: Option<Val<'_>>,
) -> Checked<(Option<Nanos>, Option<Nanos>)> {
    let start = opt_nanos(start, "start_ns")?;
    let end = opt_nanos(end, "end_ns")?;
    if let (Some(s), Some(e)) = (start, end)
        && e < s
    {
        return value("end_ns must be >= start_ns".into());
    }
    Ok((start, end))
}

/// A member of a fixed set of strings (`value not in {...}` in the reference): a list or an object
/// is unhashable in Python, a `TypeError`.
pub(crate) fn member<T>(
    v: Option<Val<'_>>,
    parse: impl FnOnce(&str) -> Option<T>,
    message: &str,
) -> Checked<T> {
    match v {
        Some(Val::Str(s)) => parse(&s).ok_or_else(|| Fault::Value(message.into())),
        Some(v @ (Val::List | Val::Dict)) => Err(unhashable(&v)),
        _ => value(message.into()),
    }
}

fn unhashable(v: &Val<'_>) -> Fault {
    Fault::Type(format!("unhashable type: '{}'", v.python_type()))
}

/// Python's message for missing arguments: `'a'`, `'a' and 'b'`, `'a', 'b', and 'c'`.
pub(crate) fn missing_message(class: &str, kind: &str, names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
    let list = match quoted.as_slice() {
        [one] => one.clone(),
        [a, b] => format!("{a} and {b}"),
        [init @ .., last] => format!("{}, and {last}", init.join(", ")),
        [] => String::new(),
    };
    let plural = if names.len() == 1 { "" } else { "s" };
    format!(
        "{class}.__init__() missing {} required {kind} argument{plural}: {list}",
        names.len()
    )
}

/// Python's message for an unknown keyword.
pub(crate) fn unexpected_message(class: &str, key: &str) -> String {
    format!("{class}.__init__() got an unexpected keyword argument '{key}'")
}

/// The reference of a usual-shape object (both texts non-empty, no escapes): what
/// [`entity_ref`] makes of it.
pub(crate) fn plain_entity_ref(producer_id: &str, id: &str, share_id: bool) -> EntityRef {
    EntityRef {
        producer_id: shared_text(producer_id),
        id: if share_id {
            shared_id(id)
        } else {
            Text::from(id)
        },
    }
}

/// `EntityRef(**value)` from the raw text of an object, with its checks (`docs/evidence.md#entity-ref`).
/// With `share_id` (for references to entities that others reference too), the id is
/// [`shared_id`].
pub(crate) fn entity_ref(raw_object: &str, lenient: bool, share_id: bool) -> Checked<EntityRef> {
    if let Some((producer_id, id)) = wire::simple_ref(raw_object)
        && !producer_id.is_empty()
        && !id.is_empty()
    {
        return Ok(plain_entity_ref(producer_id, id, share_id));
    }
    let wire = wire::ref_wire(raw_object);
    if let Some((_, key)) = wire.first_unknown() {
        return Err(Fault::Type(unexpected_message("EntityRef", key)));
    }
    let names = ["producer_id", "id"];
    let missing: Vec<&str> = (0..2)
        .filter(|&i| wire.raw(i).is_none())
        .map(|i| names[i])
        .collect();
    if !missing.is_empty() {
        return Err(Fault::Type(missing_message(
            "EntityRef",
            "positional",
            &missing,
        )));
    }
    let producer_id = nonempty_shared(typed_opt(wire.raw(0), lenient), "producer_id")?;
    let id = match typed_opt(wire.raw(1), lenient) {
        Some(Val::Str(s)) if share_id && !s.is_empty() => shared_id(&s),
        v => nonempty(v, "id")?,
    };
    Ok(EntityRef { producer_id, id })
}

/// `CorrelationContext(**value)` from the raw text of an object, with its checks in the
/// reference's order (`docs/evidence.md#context`).
pub(crate) fn context(raw_object: &str, lenient: bool) -> Checked<CorrelationContext> {
    let wire = wire::context_wire(raw_object);
    context_from_wire(&wire, lenient)
}

fn context_from_wire(wire: &ContextWire<'_>, lenient: bool) -> Checked<CorrelationContext> {
    const CLASS: &str = "CorrelationContext";
    if let Some((_, key)) = wire.first_unknown() {
        return Err(Fault::Type(unexpected_message(CLASS, key)));
    }
    let missing: Vec<&str> = (0..8)
        .filter(|&i| wire.raw(i).is_none())
        .map(|i| wire::CONTEXT_KEYS[i])
        .collect();
    if !missing.is_empty() {
        return Err(Fault::Type(missing_message(CLASS, "positional", &missing)));
    }
    let field = |i: usize| typed_opt(wire.raw(i), lenient);
    let required = |i: usize| -> Checked<Text> { nonempty(field(i), wire::CONTEXT_KEYS[i]) };
    let optional =
        |i: usize| -> Checked<Option<Text>> { opt_nonempty(field(i), wire::CONTEXT_KEYS[i]) };
    let run_id = required(0)?;
    let session_id = required(1)?;
    let producer_id = required(2)?;
    let source = required(3)?;
    let clock_domain = required(4)?;
    let source_version = optional(8)?;
    let engine = optional(9)?;
    let engine_version = optional(10)?;
    let backend = optional(11)?;
    let backend_version = optional(12)?;
    let host = optional(13)?;
    let device_uuid = optional(15)?;
    let pid = opt_u64(field(14), "pid")?;
    let rank = opt_u64(field(16), "rank")?;
    let local_rank = opt_u64(field(17), "local_rank")?;
    let world_size = opt_u64(field(18), "world_size")?;
    if world_size == Some(0) {
        return value("world_size must be >= 1".into());
    }
    let clock_kind = member(
        field(5),
        ClockKind::parse,
        "clock_kind must be monotonic, wall, or device",
    )?;
    let collection_mode = member(
        field(6),
        CollectionMode::parse,
        "collection_mode must be active, passive, or imported",
    )?;
    let provenance = member(
        field(7),
        Provenance::parse,
        "provenance must be observed, reported, or estimated",
    )?;
    Ok(CorrelationContext {
        run_id,
        session_id,
        producer_id,
        source,
        clock_domain,
        clock_kind,
        collection_mode,
        provenance,
        source_version,
        engine,
        engine_version,
        backend,
        backend_version,
        host,
        device_uuid,
        pid,
        rank,
        local_rank,
        world_size,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_missing_argument_lists() {
        assert_eq!(
            missing_message("EntityRef", "positional", &["id"]),
            "EntityRef.__init__() missing 1 required positional argument: 'id'"
        );
        assert_eq!(
            missing_message("X", "keyword-only", &["a", "b"]),
            "X.__init__() missing 2 required keyword-only arguments: 'a' and 'b'"
        );
        assert_eq!(
            missing_message("X", "keyword-only", &["a", "b", "c"]),
            "X.__init__() missing 3 required keyword-only arguments: 'a', 'b', and 'c'"
        );
    }

    #[test]
    fn integers_by_field_kind() {
        let v = |raw: &'static str| Some(value::classify(raw, false));
        assert_eq!(opt_u64(v("-0"), "pid"), Ok(Some(0)));
        assert_eq!(
            opt_u64(v("18446744073709551615"), "pid"),
            Ok(Some(u64::MAX))
        );
        assert!(matches!(
            opt_u64(v("18446744073709551616"), "pid"),
            Err(Fault::Range(_))
        ));
        assert!(matches!(
            opt_nanos(v("9223372036854775808"), "start_ns"),
            Err(Fault::Range(_))
        ));
        let neg_huge = Some(value::classify(
            "-99999999999999999999999999999999999999999",
            false,
        ));
        assert_eq!(
            opt_nanos(neg_huge.clone(), "start_ns"),
            Err(Fault::Value(
                "start_ns must be a non-negative integer or null".into()
            ))
        );
        assert!(matches!(
            signed_nanos(neg_huge, "offset_ns"),
            Err(Fault::Range(_))
        ));
        assert_eq!(signed_nanos(v("-5"), "offset_ns"), Ok(-5));
        assert_eq!(
            opt_u64(v("true"), "pid"),
            Err(Fault::Value(
                "pid must be a non-negative integer or null".into()
            ))
        );
        assert_eq!(
            req_nanos(v("1.0"), "created_at_ns"),
            Err(Fault::Value(
                "created_at_ns must be a non-negative integer".into()
            ))
        );
    }
}
