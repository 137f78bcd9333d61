//! Streaming reader of a Chrome trace-event document: header fields plus one callback per entry
//! of `traceEvents`, without ever holding the document as a `serde_json::Value`.
//!
//! [`super::split`] finds where each value ends in a 64 KiB window of the stream; each
//! `traceEvents` entry is then read by serde from that slice into a [`RawEvent`] whose fields stay
//! borrowed raw JSON text (`ts` and `dur` are converted exactly by [`crate::decimal`], never
//! through a float), handed to the callback and dropped. Entries that are not objects are skipped,
//! as the reference does; so are the fields of events the importer never reads. Interpreting
//! events (categories, linking) belongs to the parent module.

use std::cell::Cell;
use std::fmt;
use std::io::Read;

use serde::Deserialize;
use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::split::{SplitError, Splitter};
use serde_json::value::RawValue;

use crate::error::Error;

/// One `traceEvents` entry, each field as raw JSON text (absent keys are `None`).
///
/// Once `ph` or `cat` shows that the importer has no use for the event (not a complete event, or a
/// category it never reads), its remaining fields are skipped without being copied; fields that
/// came before stay. A repeated key keeps its last value, as Python's `json` does.
#[derive(Debug, Default)]
pub struct RawEvent<'a> {
    /// Phase (`"X"` for complete events).
    pub ph: Option<&'a RawValue>,
    /// Category.
    pub cat: Option<&'a RawValue>,
    /// Name.
    pub name: Option<&'a RawValue>,
    /// Process (number or string).
    pub pid: Option<&'a RawValue>,
    /// Thread (number or string).
    pub tid: Option<&'a RawValue>,
    /// Start in µs.
    pub ts: Option<&'a RawValue>,
    /// Duration in µs.
    pub dur: Option<&'a RawValue>,
    /// Arguments object.
    pub args: Option<&'a RawValue>,
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

/// The top-level keys the importer reads; each may appear once.
const READ_KEYS: &[&str] = &[
    "traceEvents",
    "baseTimeNanoseconds",
    "host_name",
    "trace_id",
    "distributedInfo",
    "deviceProperties",
    "cupti_version",
    "vllm_version",
];

/// The per-event callback: the entry's index in `traceEvents` and the entry.
pub type OnEvent<'a> = dyn for<'e> FnMut(usize, RawEvent<'e>) -> Result<(), Error> + 'a;

/// Why reading stopped.
#[derive(Debug)]
pub enum ParseFailure {
    /// The byte stream under the JSON failed (a broken gzip stream).
    Io(std::io::Error),
    /// The JSON is broken or cut short.
    Syntax {
        /// 1-based line.
        line: u64,
        /// 1-based column.
        column: u64,
        /// What the decoder said.
        message: String,
    },
    /// Well-formed JSON that is not a trace-event document.
    NotATrace {
        /// 1-based line.
        line: u64,
        /// 1-based column.
        column: u64,
        /// What is wrong.
        message: String,
    },
    /// The callback refused an event.
    Stopped {
        /// The callback's error.
        error: Error,
        /// Line where the event starts.
        line: u64,
        /// Column where the event starts.
        column: u64,
    },
}

impl From<SplitError> for ParseFailure {
    fn from(e: SplitError) -> Self {
        match e {
            SplitError::Io(e) => Self::Io(e),
            SplitError::Syntax {
                line,
                column,
                message,
            } => Self::Syntax {
                line,
                column,
                message,
            },
        }
    }
}

/// A serde error inside a value that starts at `(line, column)`, placed in the document.
fn placed(e: &serde_json::Error, (line, column): (u64, u64)) -> ParseFailure {
    use serde_json::error::Category;
    let inner_line = e.line() as u64;
    let (line, column) = if inner_line <= 1 {
        (line, column + (e.column() as u64).saturating_sub(1))
    } else {
        (line + inner_line - 1, e.column() as u64)
    };
    let text = e.to_string();
    let message = match text.rfind(" at line ") {
        Some(at) => text[..at].to_owned(),
        None => text,
    };
    match e.classify() {
        Category::Data => ParseFailure::NotATrace {
            line,
            column,
            message,
        },
        _ => ParseFailure::Syntax {
            line,
            column,
            message,
        },
    }
}

/// Reads a whole document from `reader`, calling `on_event` for every object in `traceEvents`.
/// `index` is updated before each entry is read, so a failure can say which entry it was in.
pub fn read_document(
    reader: impl Read,
    on_event: &mut OnEvent<'_>,
    index: &Cell<usize>,
) -> Result<Header, ParseFailure> {
    let mut split = Splitter::new(reader);
    let mut header = Header::default();
    let not_a_trace = |split: &Splitter<_>, message: &str| {
        let (line, column) = split.position();
        ParseFailure::NotATrace {
            line,
            column,
            message: message.to_owned(),
        }
    };
    match split.peek()? {
        Some(b'{') => split.expect(b'{', "{")?,
        Some(_) => {
            return Err(not_a_trace(
                &split,
                "expected a JSON object with a traceEvents array",
            ));
        }
        None => return Err(split.error("EOF while expecting a JSON object").into()),
    }
    let mut first = true;
    // The keys read so far that the importer uses: a second one is refused rather than merged
    // (two `traceEvents` arrays would count their work twice) or silently replaced.
    let mut seen: Vec<String> = Vec::new();
    loop {
        match split.peek()? {
            Some(b'}') if first => {
                split.expect(b'}', "}")?;
                break;
            }
            _ if first => {}
            Some(b',') => split.expect(b',', ",")?,
            Some(b'}') => {
                split.expect(b'}', "}")?;
                break;
            }
            _ => return Err(split.error("expected `,` or `}`").into()),
        }
        first = false;
        let (bytes, at) = split.value()?;
        let key: String = serde_json::from_slice(bytes).map_err(|e| placed(&e, at))?;
        if READ_KEYS.contains(&key.as_str()) {
            if seen.contains(&key) {
                return Err(ParseFailure::NotATrace {
                    line: at.0,
                    column: at.1,
                    message: format!(
                        "the top-level key `{key}` appears twice; a trace-event document has one \
                         (merge the two values into one, or import the parts as separate files)"
                    ),
                });
            }
            seen.push(key.clone());
        }
        let len = bytes.len();
        split.consume(len);
        split.expect(b':', "`:`")?;
        if key == "traceEvents" {
            read_events(&mut split, on_event, index)?;
            header.has_events = true;
            continue;
        }
        let (bytes, at) = split.value()?;
        let parse = |bytes: &[u8]| -> Result<Option<serde_json::Value>, ParseFailure> {
            serde_json::from_slice(bytes).map_err(|e| placed(&e, at))
        };
        match key.as_str() {
            "baseTimeNanoseconds" => {
                header.base_time_ns = serde_json::from_slice(bytes).map_err(|e| placed(&e, at))?;
            }
            "host_name" => header.host_name = parse(bytes)?,
            "trace_id" => header.trace_id = parse(bytes)?,
            "distributedInfo" => header.distributed_info = parse(bytes)?,
            "deviceProperties" => header.device_properties = parse(bytes)?,
            "cupti_version" => header.cupti_version = parse(bytes)?,
            "vllm_version" => header.vllm_version = parse(bytes)?,
            _ => {
                serde_json::from_slice::<IgnoredAny>(bytes).map_err(|e| placed(&e, at))?;
            }
        }
        let len = bytes.len();
        split.consume(len);
    }
    split.finish()?;
    Ok(header)
}

fn read_events(
    split: &mut Splitter<impl Read>,
    on_event: &mut OnEvent<'_>,
    index: &Cell<usize>,
) -> Result<(), ParseFailure> {
    match split.peek()? {
        Some(b'[') => split.expect(b'[', "[")?,
        Some(_) => {
            let (line, column) = split.position();
            return Err(ParseFailure::NotATrace {
                line,
                column,
                message: "traceEvents must be an array".into(),
            });
        }
        None => return Err(split.error("EOF while expecting traceEvents").into()),
    }
    let mut next = 0usize;
    loop {
        index.set(next);
        match split.peek()? {
            Some(b']') if next == 0 => {
                split.expect(b']', "]")?;
                return Ok(());
            }
            _ if next == 0 => {}
            Some(b',') => split.expect(b',', ",")?,
            Some(b']') => {
                split.expect(b']', "]")?;
                return Ok(());
            }
            _ => return Err(split.error("expected `,` or `]` in traceEvents").into()),
        }
        let (bytes, at) = split.value()?;
        let entry: MaybeEvent<'_> = serde_json::from_slice(bytes).map_err(|e| placed(&e, at))?;
        if let Some(event) = entry.0
            && let Err(error) = on_event(next, event)
        {
            return Err(ParseFailure::Stopped {
                error,
                line: at.0,
                column: at.1,
            });
        }
        let len = bytes.len();
        split.consume(len);
        next += 1;
    }
}

/// The keys of an event the importer reads; everything else is `Other`.
enum EventKey {
    Ph,
    Cat,
    Name,
    Pid,
    Tid,
    Ts,
    Dur,
    Args,
    Other,
}

impl<'de> Deserialize<'de> for EventKey {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = EventKey;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an event key")
            }
            fn visit_str<E>(self, key: &str) -> Result<EventKey, E> {
                Ok(match key {
                    "ph" => EventKey::Ph,
                    "cat" => EventKey::Cat,
                    "name" => EventKey::Name,
                    "pid" => EventKey::Pid,
                    "tid" => EventKey::Tid,
                    "ts" => EventKey::Ts,
                    "dur" => EventKey::Dur,
                    "args" => EventKey::Args,
                    _ => EventKey::Other,
                })
            }
        }
        d.deserialize_identifier(KeyVisitor)
    }
}

fn key_is_args(key: &EventKey) -> bool {
    matches!(key, EventKey::Args)
}

/// Whether `args` may be needed: ranges never read it, GPU events and launch calls do.
fn args_wanted(event: &RawEvent) -> bool {
    event
        .cat
        .is_none_or(|cat| raw_cow(Some(cat)).is_none_or(|c| super::role(&c) != super::Role::Range))
}

/// Whether the fields read so far leave the event possibly useful.
fn useful(event: &RawEvent) -> bool {
    let ph_ok = event
        .ph
        .is_none_or(|ph| raw_cow(Some(ph)).as_deref() == Some("X"));
    let cat_ok = event.cat.is_none_or(|cat| {
        raw_cow(Some(cat)).is_some_and(|c| super::role(&c) != super::Role::Other)
    });
    ph_ok && cat_ok
}

/// An entry that is an object (read) or anything else (skipped).
struct MaybeEvent<'a>(Option<RawEvent<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for MaybeEvent<'a> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(MaybeEventVisitor(std::marker::PhantomData))
    }
}

struct MaybeEventVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for MaybeEventVisitor<'a> {
    type Value = MaybeEvent<'a>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a trace event")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MaybeEvent<'a>, A::Error> {
        let mut event = RawEvent::default();
        let mut wanted = true;
        while let Some(key) = map.next_key::<EventKey>()? {
            let decides = matches!(key, EventKey::Ph | EventKey::Cat);
            if key_is_args(&key) && !args_wanted(&event) {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            let slot = match key {
                EventKey::Ph => &mut event.ph,
                EventKey::Cat => &mut event.cat,
                EventKey::Name => &mut event.name,
                EventKey::Pid => &mut event.pid,
                EventKey::Tid => &mut event.tid,
                EventKey::Ts => &mut event.ts,
                EventKey::Dur => &mut event.dur,
                EventKey::Args => &mut event.args,
                EventKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            if !wanted && !decides {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            *slot = map.next_value::<Option<&'de RawValue>>()?;
            if decides {
                wanted = useful(&event);
            }
        }
        Ok(MaybeEvent(Some(event)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<MaybeEvent<'a>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(MaybeEvent(None))
    }
    fn visit_bool<E>(self, _: bool) -> Result<MaybeEvent<'a>, E> {
        Ok(MaybeEvent(None))
    }
    fn visit_i64<E>(self, _: i64) -> Result<MaybeEvent<'a>, E> {
        Ok(MaybeEvent(None))
    }
    fn visit_u64<E>(self, _: u64) -> Result<MaybeEvent<'a>, E> {
        Ok(MaybeEvent(None))
    }
    fn visit_f64<E>(self, _: f64) -> Result<MaybeEvent<'a>, E> {
        Ok(MaybeEvent(None))
    }
    fn visit_str<E>(self, _: &str) -> Result<MaybeEvent<'a>, E> {
        Ok(MaybeEvent(None))
    }
    fn visit_unit<E>(self) -> Result<MaybeEvent<'a>, E> {
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
