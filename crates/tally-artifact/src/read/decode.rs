//! One line to one decoded item, with no state: UTF-8, blank lines, JSON (with the `NaN` retry),
//! and the classification of `docs/evidence.md#schema-versions`: legacy, embedded event, v4 definition or v4
//! compact record (`docs/evidence.md#v4-interning`).
//!
//! This module runs in parallel over the lines of a batch, so it never changes a registry: a
//! definition comes back with its validated context, a compact record with its context id and its
//! fully checked body (everything the reference checks after the id lookup), and the caller
//! resolves ids in file order (`context`, `batch`). A compact record whose id the definitions
//! before its batch already name is finished here, against that read-only registry: in a v4
//! file, that is nearly every record.

use std::sync::Arc;

use tally_evidence::json;
use tally_evidence::model::{CorrelationContext, InferenceRecord, LegacyRecord, Text};

use super::MAX_LINE_BYTES;
use super::context::ContextRegistry;
use super::events::{self, ContextSource, EventParts, Fields};
use super::fields::{self, Checked, Fault};
use super::known;
use super::lines;
use super::scan::{self, PlainRefs};
use super::value::{Int, Val};
use super::wire::{self, Key, RecordWire};

/// What one line is.
#[derive(Debug)]
pub(crate) enum Decoded {
    /// A whitespace-only line: skipped, still counted.
    Blank,
    /// A legacy record or a validated embedded event.
    Record(InferenceRecord),
    /// A v4 `infer.context` definition with its validated context.
    Definition {
        /// The context id.
        id: Text,
        /// The context.
        context: Arc<CorrelationContext>,
    },
    /// A v4 compact record: its context id and its body, checked as the expanded record would be
    /// (the error, if any, counts only once the id resolves).
    Compact {
        /// The context id it names.
        id: Text,
        /// The checked body.
        event: Checked<EventParts>,
    },
    /// A compact record whose id resolved: its context and body, to be assembled into an event
    /// (in parallel) by [`Decoded::finish`].
    Resolved(Arc<CorrelationContext>, EventParts),
}

impl Decoded {
    /// The record this line holds, once resolved: a resolved compact record is assembled into an
    /// event here (its fingerprint computed). `None` for blank lines and definitions.
    pub(crate) fn finish(self) -> Option<InferenceRecord> {
        match self {
            Decoded::Record(record) => Some(record),
            Decoded::Resolved(context, parts) => Some(InferenceRecord::Event(parts.event(context))),
            Decoded::Blank | Decoded::Definition { .. } | Decoded::Compact { .. } => None,
        }
    }

    /// [`finish`](Self::finish) in place, for a resolved compact record.
    pub(crate) fn finish_in_place(&mut self) {
        if matches!(self, Decoded::Resolved(..)) {
            let record = std::mem::replace(self, Decoded::Blank).finish();
            *self = Decoded::Record(record.expect("a resolved record finishes"));
        }
    }
}

/// Decodes one physical line. `offset` is the line's byte offset in its input, for the UTF-8
/// message.
///
/// `known` holds the context definitions of the lines before this line's batch, if any: a
/// compact record whose id is already there comes back as a finished [`Decoded::Record`] (an id,
/// once defined, names the same context for good: a conflicting redefinition is an error that
/// ends the input before any later line counts). Any other compact record comes back
/// [`Decoded::Compact`], for the caller to resolve in file order.
pub(crate) fn decode_line(
    bytes: &[u8],
    offset: u64,
    known: Option<&ContextRegistry>,
) -> Checked<Decoded> {
    if bytes.len() > MAX_LINE_BYTES {
        return Err(lines::too_long());
    }
    let text = match lines::utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            return Err(Fault::Value(format!(
                "invalid UTF-8 at byte offset {}: the artifact must be UTF-8 text; re-encode it \
                 as UTF-8",
                offset + e.valid_up_to() as u64
            )));
        }
    };
    if lines::is_blank(text) {
        return Ok(Decoded::Blank);
    }

    with_json(text, |line, parsed| match line {
        None => Err(Fault::Value("record must be an object".into())),
        Some(wire) => classify(wire, text, parsed, known),
    })
}

/// How a line was parsed, besides its structure.
#[derive(Clone, Debug)]
pub(crate) struct Parsed<'r> {
    /// The line's `NaN`/`Infinity` literals were rewritten to sentinels.
    pub lenient: bool,
    /// The line's top-level `context` was a text this thread had validated: its value in the
    /// parsed line is a placeholder, and this is the context.
    pub known_context: Option<Arc<CorrelationContext>>,
    /// The references of the usual shape the scan found.
    pub plain_refs: &'r PlainRefs,
}

/// No reference of the usual shape (what lines read by `serde_json` have).
static NO_PLAIN_REFS: PlainRefs = PlainRefs::EMPTY;

/// Parses `text` as one JSON value and hands it to `then`, with the reference's parser's
/// leniency: if strict JSON fails and the text has `NaN`/`Infinity` literals, they are rewritten
/// to sentinels and the parse retried (`lenient`). A failing retry reports the strict error. A
/// known embedded context is not scanned again (see `known`).
pub(crate) fn with_json<T>(
    text: &str,
    then: impl FnOnce(Option<&RecordWire<'_>>, Parsed<'_>) -> Checked<T>,
) -> Checked<T> {
    if text.len() > wire::MAX_LINE_BYTES {
        return Err(Fault::Value(format!(
            "the line is {} bytes long; tally reads lines of at most 4 GiB: split the record",
            text.len()
        )));
    }
    if text.starts_with('\u{feff}') {
        // Python's wording (`json.loads` refuses a leading byte-order mark).
        return Err(Fault::Value(
            "Unexpected UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)".into(),
        ));
    }
    let mut scanned = scan::Scanned::new(text);
    if scan::record(text, &mut scanned).is_some() {
        let parsed = Parsed {
            lenient: false,
            known_context: scanned.known_context.take(),
            plain_refs: &scanned.plain_refs,
        };
        return then(Some(&scanned.wire), parsed);
    }
    let mut then = Some(then);
    if let Some(result) = known::with_known_context(text, |line, context| {
        let parsed = Parsed {
            lenient: false,
            known_context: Some(context),
            plain_refs: &NO_PLAIN_REFS,
        };
        (then.take().expect("called once"))(line.object(), parsed)
    }) {
        return result;
    }
    let then = then.expect("not called yet");
    let plain = Parsed {
        lenient: false,
        known_context: None,
        plain_refs: &NO_PLAIN_REFS,
    };
    let strict = match wire::parse_line(text) {
        Ok(line) => return then(line.object(), plain),
        Err(e) => e,
    };
    static NAN: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new("NaN"));
    static INFINITY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new("Infinity"));
    let special = wire::contains(&NAN, text) || wire::contains(&INFINITY, text);
    if special {
        let rewritten = json::rewrite_special_literals(text);
        if let Ok(line) = wire::parse_line(&rewritten) {
            let parsed = Parsed {
                lenient: true,
                known_context: None,
                plain_refs: &NO_PLAIN_REFS,
            };
            return then(line.object(), parsed);
        }
    }
    Err(Fault::Value(strict.to_string()))
}

/// The JSON whitespace around a line's value (what a legacy record keeps is the value's text).
fn trim_json_space(text: &str) -> &str {
    text.trim_matches(|c: char| c.is_ascii() && wire::is_json_space(c as u8))
}

/// `CorrelationRecordDecoder._expand` then `decode_event` (`docs/evidence.md#schema-versions`, `docs/evidence.md#v4-interning`).
fn classify(
    wire: &RecordWire<'_>,
    text: &str,
    parsed: Parsed<'_>,
    known: Option<&ContextRegistry>,
) -> Checked<Decoded> {
    let rec = Fields {
        wire,
        lenient: parsed.lenient,
        known_context: parsed.known_context,
        plain_refs: parsed.plain_refs,
    };
    let version = rec.val(Key::SchemaVersion);
    let definition = matches!(rec.val(Key::EventType), Some(Val::Str(t)) if t == "infer.context");
    let version_equals_4 = match &version {
        Some(Val::Int(i)) => i.value == Some(4),
        Some(Val::Float(f)) => *f == 4.0,
        _ => false,
    };
    if !(definition || wire.has(Key::ContextId) || version_equals_4) {
        return embedded_record(&rec, version, text, Decoded::Record);
    }
    if !matches!(&version, Some(Val::Int(i)) if i.value == Some(4)) {
        return Err(Fault::Value(
            "context transport requires schema_version 4".into(),
        ));
    }
    // Shared per thread: a file has few context ids, and compact records name them again and
    // again (see `CorrelationRecordDecoder::resolve`).
    let id = fields::nonempty_shared(rec.val(Key::ContextId), "context_id")?;
    if definition {
        let definition_keys = [
            Key::SchemaVersion,
            Key::EventType,
            Key::ContextId,
            Key::Context,
        ];
        let expected = definition_keys.iter().fold(0u64, |m, k| m | 1 << *k as u32);
        let exact = wire.first_unknown().is_none() && wire.present_mask() == expected;
        if !exact {
            return Err(Fault::Value(
                "infer.context requires exactly version, type, ID, context".into(),
            ));
        }
        let context = match (&rec.known_context, wire.get(Key::Context)) {
            (Some(known), _) => Ok(Arc::clone(known)),
            (None, Some(raw)) if raw.starts_with('{') => {
                fields::context(raw, rec.lenient).map(Arc::new)
            }
            _ => Err(Fault::Value("context must be an object".into())),
        };
        // Outside an event, the reference's constructor errors are bare.
        let context = context.map_err(|f| match f {
            Fault::Type(m) => Fault::Value(m),
            other => other,
        })?;
        return Ok(Decoded::Definition { id, context });
    }
    if wire.has(Key::Context) {
        return Err(Fault::Value(
            "v4 event must have context_id and no context".into(),
        ));
    }
    // The lookup error, if any, would come before the body's own; a known id has none.
    if let Some(context) = known.and_then(|registry| registry.find(&id).ok()) {
        return compact_event(&rec, |parts| {
            Decoded::Record(InferenceRecord::Event(parts.event(Arc::clone(context))))
        });
    }
    Ok(Decoded::Compact {
        id,
        event: compact_event(&rec, |parts| parts),
    })
}

/// The checks a compact record gets after its id resolves: the null-intervals rule, then the
/// expanded record's (`docs/evidence.md#v4-interning`). The parts are handed to `into` where they are made
/// (see [`embedded_record`]).
fn compact_event<T>(rec: &Fields<'_, '_>, into: impl FnOnce(EventParts) -> T) -> Checked<T> {
    let is_activity = matches!(
        rec.val(Key::EventType),
        Some(Val::Str(t)) if t == tally_evidence::model::EventType::Activity.as_str()
    );
    let intervals = rec
        .wire
        .get(Key::Metadata)
        .filter(|raw| is_activity && raw.starts_with('{'))
        .and_then(wire::intervals_of);
    if intervals.is_some_and(|raw| raw.starts_with('n')) {
        return Err(Fault::Value(
            "metadata.intervals must be a non-empty list of [offset_ns, duration_ns] pairs".into(),
        ));
    }
    let (value, digits) = if intervals.is_some() {
        (3, "3")
    } else {
        (2, "2")
    };
    let version = Val::Int(Int {
        value: Some(value),
        negative: false,
        digits,
    });
    events::embedded(
        rec,
        Some(version),
        ContextSource::Registry,
        |_, parts| into(parts),
        || unreachable!("an expanded record has version 2 or 3"),
    )
}

/// `parse_inference_record` on one record's top level; `text` is the line (for legacy records).
/// The record is handed to `into` where it is made, so that the caller's value is built in one
/// place rather than wrapped (and copied) layer by layer.
pub(crate) fn embedded_record<T>(
    rec: &Fields<'_, '_>,
    version: Option<Val<'_>>,
    text: &str,
    into: impl Fn(InferenceRecord) -> T,
) -> Checked<T> {
    events::embedded(
        rec,
        version,
        ContextSource::Embedded,
        |context, parts| {
            into(InferenceRecord::Event(
                parts.event(context.expect("an embedded event has its context")),
            ))
        },
        || {
            into(InferenceRecord::Legacy(LegacyRecord {
                json: trim_json_space(text).into(),
            }))
        },
    )
}
