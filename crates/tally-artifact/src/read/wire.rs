//! Permissive deserialisation of one JSON line: which keys a record has, in which order, and the
//! raw JSON text of each value, parsed once by `serde_json` without any judgement.
//!
//! A line is read with a hand-written [`Visitor`] that matches key names and keeps every known
//! key's value as a borrowed [`RawValue`] text (the last occurrence wins, as in Python's `dict`),
//! its first position (Python keeps a key where it first appeared) and the first unknown key.
//! Values are classified later, on demand, by `value::classify`, which tells null, booleans, integers
//! (of any size, keeping their digits), floats, strings, lists and objects apart exactly as
//! Python's `json` module would type them. Keeping raw text is what makes the rest exact: a
//! `serde_json` visitor cannot tell `1e21` from the integer `1000000000000000000000`, and a raw
//! value can.
//!
//! Deliberately not here: any rule of the format (see `validate`), and the `NaN`/`Infinity`
//! literals, which the caller rewrites before a second attempt (see `decode`). When it does, the
//! rewritten sentinels are classified as floats (`lenient` below).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

macro_rules! keys {
    ($($variant:ident = $name:literal,)*) => {
        /// The keys a correlation record may have at its top level.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(u8)]
        pub(crate) enum Key { $($variant,)* }

        impl Key {
            /// All keys, in declaration order (`Key as usize` indexes it).
            pub(crate) const ALL: &'static [Key] = &[$(Key::$variant,)*];

            const NAMES: &'static [&'static str] = &[$($name,)*];

            const QUOTED: &'static [&'static str] = &[$(concat!("\"", $name, "\""),)*];

            /// The key with this name: one hash-table probe and one comparison.
            pub(crate) fn parse(name: &str) -> Option<Key> {
                let slot = KEY_TABLE[key_hash(name.as_bytes())?];
                let key = *Key::ALL.get(usize::from(slot).checked_sub(1)?)?;
                // Names are short: an inline comparison beats a call to `memcmp`.
                let (a, b) = (key.name().as_bytes(), name.as_bytes());
                (a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)).then_some(key)
            }

            /// The wire name.
            pub(crate) fn name(self) -> &'static str {
                match self { $(Key::$variant => $name,)* }
            }

            /// The wire name in quotes, as a key is written.
            pub(crate) fn quoted(self) -> &'static [u8] {
                Key::QUOTED[self as usize].as_bytes()
            }
        }
    };
}

keys! {
    SchemaVersion = "schema_version",
    EventType = "event_type",
    Context = "context",
    ContextId = "context_id",
    EventId = "event_id",
    Metadata = "metadata",
    ArtifactKind = "artifact_kind",
    CreatedAtNs = "created_at_ns",
    RequestRef = "request_ref",
    AttemptRef = "attempt_ref",
    BackendRequestRef = "backend_request_ref",
    IterationRef = "iteration_ref",
    BatchRef = "batch_ref",
    StageRef = "stage_ref",
    ActivityRef = "activity_ref",
    CorrelationScope = "correlation_scope",
    StartNs = "start_ns",
    EndNs = "end_ns",
    Status = "status",
    InputTokens = "input_tokens",
    OutputTokens = "output_tokens",
    KvBytes = "kv_bytes",
    Name = "name",
    Role = "role",
    ActivityKind = "activity_kind",
    AttributionStatus = "attribution_status",
    ActivityDomain = "activity_domain",
    TraceAttachmentId = "trace_attachment_id",
    RuntimeCorrelationId = "runtime_correlation_id",
    CudaCorrelationId = "cuda_correlation_id",
    StreamId = "stream_id",
    GraphId = "graph_id",
    Component = "component",
    Available = "available",
    Supported = "supported",
    Enabled = "enabled",
    Collected = "collected",
    FromClockDomain = "from_clock_domain",
    ToClockDomain = "to_clock_domain",
    OffsetNs = "offset_ns",
    UncertaintyNs = "uncertainty_ns",
    ValidFromNs = "valid_from_ns",
    ValidToNs = "valid_to_ns",
}

/// Number of [`Key`]s.
pub(crate) const KEY_COUNT: usize = Key::ALL.len();

/// A hash of a key name that has no collision among the [`Key`] names (checked at compile time
/// by [`KEY_TABLE`]); `None` for names too short to be a key.
const fn key_hash(name: &[u8]) -> Option<usize> {
    if name.len() < 2 {
        return None;
    }
    let h = name.len() * 3
        + name[0] as usize * 21
        + name[1] as usize * 27
        + name[name.len() - 1] as usize;
    Some(h % 128)
}

/// `1 + Key as usize` at each name's hash, 0 elsewhere.
const KEY_TABLE: [u8; 128] = {
    let mut table = [0u8; 128];
    let mut i = 0;
    while i < Key::NAMES.len() {
        let Some(h) = key_hash(Key::NAMES[i].as_bytes()) else {
            panic!("key names are at least two bytes long")
        };
        assert!(table[h] == 0, "two key names share a hash: change key_hash");
        table[h] = (i + 1) as u8;
        i += 1;
    }
    table
};

/// The keys of a JSON object as read: for each slot (a known key's index), where the raw text of
/// its last value lies and the position where the key first appeared; plus the first key no slot
/// knows. Filled in place by one pass of `serde_json` and small enough to live on the stack.
#[derive(Debug)]
pub(crate) struct ObjectWire<'a, const N: usize> {
    text: &'a str,
    /// `(offset, length)` in `text` of each slot's raw value; length 0 when absent (a JSON value
    /// is never empty).
    spans: [(u32, u32); N],
    /// 1-based position of the key's first occurrence (saturating); 0 when absent.
    positions: [u16; N],
    /// Bit `i` set when slot `i` is present.
    present: u64,
    first_unknown: Option<(u16, Cow<'a, str>)>,
}

impl<'a, const N: usize> ObjectWire<'a, N> {
    /// An object with no keys yet, read from `text` (at most [`MAX_LINE_BYTES`] long).
    pub(crate) fn new(text: &'a str) -> Self {
        const { assert!(N <= 64, "slots fit a u64 mask") };
        Self {
            text,
            spans: [(0, 0); N],
            positions: [0; N],
            present: 0,
            first_unknown: None,
        }
    }
    /// Notes the key `name` at `position` (1-based, in order of appearance), filling `slot`
    /// (`None`: a key no slot knows) with the value at `offset..offset + len` of the text. The
    /// last value of a key wins; its first position stays, as in a Python `dict`.
    pub(crate) fn note(
        &mut self,
        position: u16,
        name: Cow<'a, str>,
        slot: Option<usize>,
        offset: u32,
        len: u32,
    ) {
        match slot {
            Some(i) => {
                self.spans[i] = (offset, len);
                if self.positions[i] == 0 {
                    self.positions[i] = position;
                    self.present |= 1 << i;
                }
            }
            None => {
                if self.first_unknown.is_none() {
                    self.first_unknown = Some((position, name));
                }
            }
        }
    }
    /// The text the object was read from.
    pub(crate) fn text(&self) -> &'a str {
        self.text
    }
    /// The raw JSON text of slot `i`, when the key is present (`"null"` for an explicit null).
    pub(crate) fn raw(&self, i: usize) -> Option<&'a str> {
        let (offset, len) = self.spans[i];
        (len != 0).then(|| &self.text[offset as usize..(offset + len) as usize])
    }
    /// The byte offset in the object's text where slot `i`'s raw value starts, when present.
    pub(crate) fn offset(&self, i: usize) -> Option<usize> {
        let (offset, len) = self.spans[i];
        (len != 0).then_some(offset as usize)
    }
    /// Where slot `i`'s key first appeared (1-based), or 0 when absent.
    pub(crate) fn position(&self, i: usize) -> u16 {
        self.positions[i]
    }
    /// Bit `i` is set when slot `i` is present.
    pub(crate) fn present_mask(&self) -> u64 {
        self.present
    }
    /// The first key that no slot knows, with its position.
    pub(crate) fn first_unknown(&self) -> Option<(u16, &str)> {
        self.first_unknown.as_ref().map(|(p, k)| (*p, k.as_ref()))
    }
}

/// A record's top level.
pub(crate) type RecordWire<'a> = ObjectWire<'a, KEY_COUNT>;

impl<'a> RecordWire<'a> {
    /// The raw text of `key`'s value, when present.
    pub(crate) fn get(&self, key: Key) -> Option<&'a str> {
        self.raw(key as usize)
    }
    /// Whether `key` is present (with any value, null included).
    pub(crate) fn has(&self, key: Key) -> bool {
        self.present & (1 << key as u32) != 0
    }
}

/// The 19 keys of a context object, in the reference's field order.
pub(crate) const CONTEXT_KEYS: [&str; 19] = [
    "run_id",
    "session_id",
    "producer_id",
    "source",
    "clock_domain",
    "clock_kind",
    "collection_mode",
    "provenance",
    "source_version",
    "engine",
    "engine_version",
    "backend",
    "backend_version",
    "host",
    "pid",
    "device_uuid",
    "rank",
    "local_rank",
    "world_size",
];

/// A context object as read (slots in [`CONTEXT_KEYS`] order).
pub(crate) type ContextWire<'a> = ObjectWire<'a, 19>;

/// An entity reference object as read (slots `producer_id`, `id`).
pub(crate) type RefWire<'a> = ObjectWire<'a, 2>;

/// Which slot a key name fills, for each kind of object.
trait SlotNames {
    fn slot(name: &str) -> Option<usize>;
}

struct RecordSlots;
impl SlotNames for RecordSlots {
    fn slot(name: &str) -> Option<usize> {
        Key::parse(name).map(|k| k as usize)
    }
}

struct ContextSlots;
impl SlotNames for ContextSlots {
    fn slot(name: &str) -> Option<usize> {
        CONTEXT_KEYS.iter().position(|k| *k == name)
    }
}

struct RefSlots;
impl SlotNames for RefSlots {
    fn slot(name: &str) -> Option<usize> {
        match name {
            "producer_id" => Some(0),
            "id" => Some(1),
            _ => None,
        }
    }
}

/// A key name, borrowed from the input when it has no escapes.
struct KeyName<'a>(Cow<'a, str>);

impl<'de> de::Deserialize<'de> for KeyName<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = KeyName<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(KeyName(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(KeyName(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(KeyName(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// Fills an [`ObjectWire`] in place from a JSON object.
struct InPlace<'w, 'a, S, const N: usize>(&'w mut ObjectWire<'a, N>, std::marker::PhantomData<S>);

impl<'de, S: SlotNames, const N: usize> Visitor<'de> for InPlace<'_, 'de, S, N> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let wire = self.0;
        let base = wire.text.as_ptr() as usize;
        let mut position: u16 = 0;
        while let Some(KeyName(name)) = map.next_key::<KeyName<'de>>()? {
            position = position.saturating_add(1);
            let value = map.next_value::<&'de RawValue>()?.get();
            // The value is a slice of `wire.text`, shorter than 4 GiB (checked by the caller),
            // so both fit in u32.
            let offset = (value.as_ptr() as usize - base) as u32;
            let slot = S::slot(&name);
            wire.note(position, name, slot, offset, value.len() as u32);
        }
        Ok(())
    }
}

fn object<'a, S: SlotNames, const N: usize>(
    text: &'a str,
) -> Result<ObjectWire<'a, N>, serde_json::Error> {
    let mut wire = ObjectWire::new(text);
    let mut de = serde_json::Deserializer::from_str(text);
    de.deserialize_map(InPlace::<S, N>(&mut wire, std::marker::PhantomData))?;
    de.end()?;
    Ok(wire)
}

/// One line, as JSON.
#[allow(clippy::large_enum_variant)] // lives on the stack for one line; a box would cost an allocation
pub(crate) enum Line<'a> {
    /// A JSON object: a record.
    Object(RecordWire<'a>),
    /// Any other JSON value.
    NotObject,
}

impl<'a> Line<'a> {
    /// The record's keys, when the line is an object.
    pub(crate) fn object(&self) -> Option<&RecordWire<'a>> {
        match self {
            Line::Object(wire) => Some(wire),
            Line::NotObject => None,
        }
    }
}

/// The JSON whitespace Python's `json.loads` skips around a value.
pub(crate) fn is_json_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// Longest line tally reads (values are located by 32-bit offsets).
pub(crate) const MAX_LINE_BYTES: usize = u32::MAX as usize;

/// Parses one line's JSON text (the whole line must be one JSON value, JSON whitespace around it).
/// The caller refuses lines longer than [`MAX_LINE_BYTES`].
pub(crate) fn parse_line(text: &str) -> Result<Line<'_>, serde_json::Error> {
    debug_assert!(text.len() <= MAX_LINE_BYTES);
    let first = text.bytes().find(|b| !is_json_space(*b));
    if first == Some(b'{') {
        Ok(Line::Object(object::<RecordSlots, KEY_COUNT>(text)?))
    } else {
        // A raw value checks the syntax without judging number sizes, as Python does.
        serde_json::from_str::<&RawValue>(text)?;
        Ok(Line::NotObject)
    }
}

/// Reads a context object from the raw text of a value known to be an object.
pub(crate) fn context_wire(raw: &str) -> ContextWire<'_> {
    object::<ContextSlots, 19>(raw).expect("raw object text re-parses")
}

/// Reads an entity reference object from the raw text of a value known to be an object.
pub(crate) fn ref_wire(raw: &str) -> RefWire<'_> {
    object::<RefSlots, 2>(raw).expect("raw object text re-parses")
}

/// The usual shape of an entity reference, read without `serde_json`: exactly the keys
/// `producer_id` and `id` (either order), each once, with string values without escapes.
/// Returns `(producer_id, id)`; `None` for anything else, which [`ref_wire`] then reads.
pub(crate) fn simple_ref(raw_object: &str) -> Option<(&str, &str)> {
    let bytes = raw_object.as_bytes();
    let mut i = 0;
    let skip = |i: &mut usize| {
        while bytes.get(*i).is_some_and(|b| is_json_space(*b)) {
            *i += 1;
        }
    };
    let expect = |i: &mut usize, c: u8| {
        skip(i);
        let ok = bytes.get(*i) == Some(&c);
        *i += 1;
        ok
    };
    let string = |i: &mut usize| -> Option<&str> {
        skip(i);
        if bytes.get(*i) != Some(&b'"') {
            return None;
        }
        let start = *i + 1;
        let end = start + memchr::memchr(b'"', &bytes[start..])?;
        if memchr::memchr(b'\\', &bytes[start..end]).is_some() {
            return None;
        }
        *i = end + 1;
        Some(&raw_object[start..end])
    };
    let (mut producer_id, mut id) = (None, None);
    if !expect(&mut i, b'{') {
        return None;
    }
    for close in [b',', b'}'] {
        let key = string(&mut i)?;
        if !expect(&mut i, b':') {
            return None;
        }
        let value = string(&mut i)?;
        let slot = match key {
            "producer_id" => &mut producer_id,
            "id" => &mut id,
            _ => return None,
        };
        if slot.replace(value).is_some() || !expect(&mut i, close) {
            return None;
        }
    }
    skip(&mut i);
    (i == bytes.len()).then_some(())?;
    Some((producer_id?, id?))
}

/// Finds `needle` in `haystack` with a searcher built once per program.
pub(crate) fn contains(
    finder: &'static std::sync::LazyLock<memchr::memmem::Finder<'static>>,
    haystack: &str,
) -> bool {
    finder.find(haystack.as_bytes()).is_some()
}

static INTERVALS: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new("intervals"));

/// Whether the raw text of an object has the key `intervals`, and the raw text of its (last)
/// value.
pub(crate) fn intervals_of(raw_object: &str) -> Option<&str> {
    // Most metadata objects never mention intervals; skip the parse for them. A key written with
    // escapes (`"\u0069ntervals"`) has a backslash, so those still get the full parse.
    if !contains(&INTERVALS, raw_object) && memchr::memchr(b'\\', raw_object.as_bytes()).is_none() {
        return None;
    }
    struct Intervals;
    impl<'de> Visitor<'de> for Intervals {
        type Value = Option<&'de str>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut found = None;
            while let Some(KeyName(name)) = map.next_key::<KeyName<'de>>()? {
                if name == "intervals" {
                    found = Some(map.next_value::<&'de RawValue>()?.get());
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok(found)
        }
    }
    let mut de = serde_json::Deserializer::from_str(raw_object);
    de.deserialize_map(Intervals)
        .expect("raw object text re-parses")
}

/// The raw texts of the items of a JSON array, from the raw text of a value known to be one.
pub(crate) fn list_items(raw_list: &str) -> Vec<&str> {
    struct Items;
    impl<'de> Visitor<'de> for Items {
        type Value = Vec<&'de str>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON array")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut items = Vec::new();
            while let Some(item) = seq.next_element_seed(RawSeed)? {
                items.push(item);
            }
            Ok(items)
        }
    }
    let mut de = serde_json::Deserializer::from_str(raw_list);
    de.deserialize_seq(Items).expect("raw array text re-parses")
}

struct RawSeed;
impl<'de> DeserializeSeed<'de> for RawSeed {
    type Value = &'de str;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        <&'de RawValue as de::Deserialize<'de>>::deserialize(d).map(RawValue::get)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_keep_first_positions_and_last_values() {
        let Line::Object(w) =
            parse_line(r#"{"event_id":"a","zz":1,"yy":2,"event_id":"b"}"#).unwrap()
        else {
            panic!()
        };
        assert_eq!(w.get(Key::EventId), Some(r#""b""#));
        assert_eq!(w.position(Key::EventId as usize), 1);
        assert!(w.has(Key::EventId) && !w.has(Key::Context));
        assert_eq!(w.first_unknown(), Some((2, "zz")));
        assert!(matches!(parse_line(" [1, 2] ").unwrap(), Line::NotObject));
        assert!(matches!(parse_line("1e400").unwrap(), Line::NotObject));
        assert!(parse_line("{} x").is_err());
        assert!(parse_line("\u{feff}{}").is_err());
    }

    #[test]
    fn simple_refs_are_read_directly_and_others_left_to_serde() {
        assert_eq!(
            simple_ref(r#"{"id": "I1", "producer_id": "eng"}"#),
            Some(("eng", "I1"))
        );
        assert_eq!(
            simple_ref(r#"{ "producer_id":"p" ,"id":"" } "#),
            Some(("p", ""))
        );
        for other in [
            r#"{"id": "I1"}"#,
            r#"{"id": "I1", "id": "I2"}"#,
            r#"{"id": "I\"1", "producer_id": "eng"}"#,
            r#"{"id": 1, "producer_id": "eng"}"#,
            r#"{"id": "I1", "producer_id": "eng", "x": 1}"#,
            r#"{"id": "I1", "producer_id": "eng",}"#,
            r#"{"id": "I1" "producer_id": "eng"}"#,
            r#"{"\u0069d": "I1", "producer_id": "eng"}"#,
            "{}",
        ] {
            assert_eq!(simple_ref(other), None, "{other}");
        }
    }

    #[test]
    fn every_key_name_is_found() {
        for key in Key::ALL {
            assert_eq!(Key::parse(key.name()), Some(*key));
        }
        for name in ["", "x", "contexts", "Context", "event_idx", "zz"] {
            assert_eq!(Key::parse(name), None, "{name}");
        }
    }

    #[test]
    fn metadata_intervals_are_found_by_key() {
        assert_eq!(intervals_of(r#"{"a":1}"#), None);
        assert_eq!(intervals_of(r#"{"x":"intervals"}"#), None);
        assert_eq!(
            intervals_of(r#"{"intervals":[[0,1]],"b":2}"#),
            Some("[[0,1]]")
        );
        assert_eq!(intervals_of(r#"{"\u0069ntervals":null}"#), Some("null"));
        assert_eq!(list_items("[1, [2,3] ,\"x\"]"), ["1", "[2,3]", "\"x\""]);
        assert_eq!(list_items("[]"), Vec::<&str>::new());
    }
}
