//! Streaming reader of a Chrome trace-event document: header fields plus one callback per entry
//! of `traceEvents`, without ever holding the document (or an event) as a `serde_json::Value`.
//!
//! The document is read through serde with a `DeserializeSeed` visitor: header keys are kept,
//! each `traceEvents` entry is read into a [`RawEvent`] whose fields stay as raw JSON text
//! (`ts` and `dur` are converted exactly by [`crate::decimal`], never through a float), handed to
//! the callback and dropped. Entries that are not objects are skipped, as the reference does.
//! Interpreting events (categories, linking) belongs to the parent module.

use std::cell::Cell;
use std::fmt;
use std::io::Read;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::error::Error;

/// One `traceEvents` entry, each field as raw JSON text (absent keys are `None`).
#[derive(Debug, Default, Deserialize)]
pub struct RawEvent {
    /// Phase (`"X"` for complete events).
    pub ph: Option<Box<RawValue>>,
    /// Category.
    pub cat: Option<Box<RawValue>>,
    /// Name.
    pub name: Option<Box<RawValue>>,
    /// Process (number or string).
    pub pid: Option<Box<RawValue>>,
    /// Thread (number or string).
    pub tid: Option<Box<RawValue>>,
    /// Start in µs.
    pub ts: Option<Box<RawValue>>,
    /// Duration in µs.
    pub dur: Option<Box<RawValue>>,
    /// Arguments object.
    pub args: Option<Box<RawValue>>,
}

/// The `args` keys the importer reads, as raw JSON text.
#[derive(Debug, Default, Deserialize)]
pub struct RawArgs<'a> {
    /// Device index.
    #[serde(borrow)]
    pub device: Option<&'a RawValue>,
    /// Stream.
    #[serde(borrow)]
    pub stream: Option<&'a RawValue>,
    /// CUPTI correlation id.
    #[serde(borrow)]
    pub correlation: Option<&'a RawValue>,
    /// CUDA graph id.
    #[serde(borrow, rename = "graph id")]
    pub graph_id: Option<&'a RawValue>,
}

/// The header keys the importer reads (any order; `baseTimeNanoseconds` often follows the events).
#[derive(Debug, Default)]
pub struct Header {
    /// Whether a `traceEvents` array was present.
    pub has_events: bool,
    /// `baseTimeNanoseconds`, raw.
    pub base_time_ns: Option<Box<RawValue>>,
    /// `host_name`.
    pub host_name: Option<serde_json::Value>,
    /// `trace_id`.
    pub trace_id: Option<serde_json::Value>,
    /// `distributedInfo` (small object).
    pub distributed_info: Option<serde_json::Value>,
    /// `deviceProperties` (small array).
    pub device_properties: Option<serde_json::Value>,
    /// `cupti_version`.
    pub cupti_version: Option<serde_json::Value>,
    /// `vllm_version`.
    pub vllm_version: Option<serde_json::Value>,
}

/// The per-event callback: the entry's index in `traceEvents` and the entry.
pub type OnEvent<'a> = dyn FnMut(usize, RawEvent) -> Result<(), Error> + 'a;

/// Why reading stopped.
pub enum ParseFailure {
    /// The JSON (or the byte stream under it) is broken, or the shape is not a trace.
    Json(serde_json::Error),
    /// The callback refused an event.
    Stopped {
        /// The callback's error.
        error: Error,
        /// Line of the decoder when it stopped (1-based).
        line: usize,
        /// Column of the decoder when it stopped.
        column: usize,
    },
}

/// Reads a whole document from `reader`, calling `on_event` for every object in `traceEvents`.
/// `index` is updated before each entry is read, so a failure can say which entry it was in.
pub fn read_document(
    reader: impl Read,
    on_event: &mut OnEvent<'_>,
    index: &Cell<usize>,
) -> Result<Header, ParseFailure> {
    let mut stash: Option<Error> = None;
    let mut de = serde_json::Deserializer::from_reader(reader);
    let result = DocumentSeed {
        on_event,
        stash: &mut stash,
        index,
    }
    .deserialize(&mut de)
    .and_then(|header| de.end().map(|()| header));
    match result {
        Ok(header) => Ok(header),
        Err(error) => match stash {
            Some(stashed) => Err(ParseFailure::Stopped {
                error: stashed,
                line: error.line(),
                column: error.column(),
            }),
            None => Err(ParseFailure::Json(error)),
        },
    }
}

struct DocumentSeed<'a, 'b> {
    on_event: &'a mut OnEvent<'b>,
    stash: &'a mut Option<Error>,
    index: &'a Cell<usize>,
}

impl<'de> DeserializeSeed<'de> for DocumentSeed<'_, '_> {
    type Value = Header;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Header, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for DocumentSeed<'_, '_> {
    type Value = Header;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object with a traceEvents array (not a Kineto trace)")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Header, A::Error> {
        let mut header = Header::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "traceEvents" => {
                    map.next_value_seed(EventsSeed {
                        on_event: &mut *self.on_event,
                        stash: &mut *self.stash,
                        index: self.index,
                    })?;
                    header.has_events = true;
                }
                "baseTimeNanoseconds" => header.base_time_ns = map.next_value()?,
                "host_name" => header.host_name = map.next_value()?,
                "trace_id" => header.trace_id = map.next_value()?,
                "distributedInfo" => header.distributed_info = map.next_value()?,
                "deviceProperties" => header.device_properties = map.next_value()?,
                "cupti_version" => header.cupti_version = map.next_value()?,
                "vllm_version" => header.vllm_version = map.next_value()?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(header)
    }
}

struct EventsSeed<'a, 'b> {
    on_event: &'a mut OnEvent<'b>,
    stash: &'a mut Option<Error>,
    index: &'a Cell<usize>,
}

impl<'de> DeserializeSeed<'de> for EventsSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for EventsSeed<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("traceEvents to be an array")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut next = 0usize;
        loop {
            self.index.set(next);
            let Some(entry) = seq.next_element::<MaybeEvent>()? else {
                return Ok(());
            };
            if let Some(event) = entry.0
                && let Err(error) = (self.on_event)(next, event)
            {
                *self.stash = Some(error);
                return Err(de::Error::custom("import stopped"));
            }
            next += 1;
        }
    }
}

/// An entry that is an object (read) or anything else (skipped).
struct MaybeEvent(Option<RawEvent>);

impl<'de> Deserialize<'de> for MaybeEvent {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(MaybeEventVisitor)
    }
}

struct MaybeEventVisitor;

impl<'de> Visitor<'de> for MaybeEventVisitor {
    type Value = MaybeEvent;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a trace event")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<MaybeEvent, A::Error> {
        RawEvent::deserialize(de::value::MapAccessDeserializer::new(map))
            .map(|e| MaybeEvent(Some(e)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<MaybeEvent, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(MaybeEvent(None))
    }
    fn visit_bool<E>(self, _: bool) -> Result<MaybeEvent, E> {
        Ok(MaybeEvent(None))
    }
    fn visit_i64<E>(self, _: i64) -> Result<MaybeEvent, E> {
        Ok(MaybeEvent(None))
    }
    fn visit_u64<E>(self, _: u64) -> Result<MaybeEvent, E> {
        Ok(MaybeEvent(None))
    }
    fn visit_f64<E>(self, _: f64) -> Result<MaybeEvent, E> {
        Ok(MaybeEvent(None))
    }
    fn visit_str<E>(self, _: &str) -> Result<MaybeEvent, E> {
        Ok(MaybeEvent(None))
    }
    fn visit_unit<E>(self) -> Result<MaybeEvent, E> {
        Ok(MaybeEvent(None))
    }
}

/// A raw JSON string's content without copying when it has no escapes; `None` when the value is
/// not a string.
pub fn raw_cow(raw: Option<&RawValue>) -> Option<std::borrow::Cow<'_, str>> {
    let text = raw?.get();
    let inner = text.strip_prefix('"')?.strip_suffix('"')?;
    if inner.contains('\\') {
        serde_json::from_str::<String>(text)
            .ok()
            .map(std::borrow::Cow::Owned)
    } else {
        Some(std::borrow::Cow::Borrowed(inner))
    }
}

/// A raw JSON string's content, or `None` when the value is not a string.
pub fn raw_str(raw: Option<&RawValue>) -> Option<String> {
    let raw = raw?;
    if raw.get().starts_with('"') {
        serde_json::from_str(raw.get()).ok()
    } else {
        None
    }
}

/// A lenient integer: a JSON integer, an integral number, or a string holding a decimal or
/// `0x` hexadecimal integer. Booleans, junk and fractions give `None`.
pub fn raw_int(raw: Option<&RawValue>) -> Option<i64> {
    let raw = raw?;
    let text = raw.get();
    let owned;
    let text = if text.starts_with('"') {
        owned = serde_json::from_str::<String>(text).ok()?;
        owned.trim()
    } else {
        text
    };
    if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        return i64::from_str_radix(hex, 16).ok();
    }
    if let Ok(v) = text.parse::<i64>() {
        return Some(v);
    }
    let femtos = crate::decimal::parse_micros(text).ok()?;
    let micro = 1_000_000_000i128;
    (femtos % micro == 0)
        .then(|| i64::try_from(femtos / micro).ok())
        .flatten()
}

/// A thread or process label: integers in decimal, strings as they are.
pub fn raw_label(raw: Option<&RawValue>) -> Option<String> {
    raw_int(raw).map(|v| v.to_string()).or_else(|| raw_str(raw))
}
