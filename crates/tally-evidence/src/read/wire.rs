//! Permissive deserialisation of one JSON line: which keys a record has, in which order, and the
//! raw JSON text of each value, parsed once by `serde_json` without any judgement.
//!
//! A line is read with a hand-written [`Visitor`] that matches key names and keeps every known
//! key's value as a borrowed [`RawValue`] text (the last occurrence wins, as in Python's `dict`),
//! its first position (Python keeps a key where it first appeared) and the first unknown key.
//! Values are classified later, on demand, by [`classify`], which tells null, booleans, integers
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

            /// The key with this name.
            pub(crate) fn parse(name: &str) -> Option<Key> {
                match name {
                    $($name => Some(Key::$variant),)*
                    _ => None,
                }
            }

            /// The wire name.
            pub(crate) fn name(self) -> &'static str {
                match self { $(Key::$variant => $name,)* }
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

/// The keys of a JSON object as read: for each slot (a known key's index), the raw text of its
/// last value and the position where the key first appeared; plus the first key no slot knows.
#[derive(Debug)]
pub(crate) struct ObjectWire<'a, const N: usize> {
    values: [Option<&'a str>; N],
    /// 1-based position of the key's first occurrence; 0 when absent.
    positions: [u32; N],
    first_unknown: Option<(u32, Cow<'a, str>)>,
}

impl<'a, const N: usize> ObjectWire<'a, N> {
    fn new() -> Self {
        Self {
            values: [None; N],
            positions: [0; N],
            first_unknown: None,
        }
    }
    /// The raw JSON text of slot `i`, when the key is present (`"null"` for an explicit null).
    pub(crate) fn raw(&self, i: usize) -> Option<&'a str> {
        self.values[i]
    }
    /// Where slot `i`'s key first appeared (1-based), or 0 when absent.
    pub(crate) fn position(&self, i: usize) -> u32 {
        self.positions[i]
    }
    /// The first key that no slot knows, with its position.
    pub(crate) fn first_unknown(&self) -> Option<(u32, &str)> {
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
        self.positions[key as usize] != 0
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

struct ObjectVisitor<S, const N: usize>(std::marker::PhantomData<S>);

impl<'de, S: SlotNames, const N: usize> Visitor<'de> for ObjectVisitor<S, N> {
    type Value = ObjectWire<'de, N>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut wire = ObjectWire::new();
        let mut position: u32 = 0;
        while let Some(KeyName(name)) = map.next_key::<KeyName<'de>>()? {
            position = position.saturating_add(1);
            let value: &'de RawValue = map.next_value()?;
            match S::slot(&name) {
                Some(i) => {
                    wire.values[i] = Some(value.get());
                    if wire.positions[i] == 0 {
                        wire.positions[i] = position;
                    }
                }
                None => {
                    if wire.first_unknown.is_none() {
                        wire.first_unknown = Some((position, name));
                    }
                }
            }
        }
        Ok(wire)
    }
}

fn object<'a, S: SlotNames, const N: usize>(
    text: &'a str,
) -> Result<ObjectWire<'a, N>, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let wire = de.deserialize_map(ObjectVisitor::<S, N>(std::marker::PhantomData))?;
    de.end()?;
    Ok(wire)
}

/// One line, as JSON.
pub(crate) enum Line<'a> {
    /// A JSON object: a record.
    Object(Box<RecordWire<'a>>),
    /// Any other JSON value.
    NotObject,
}

/// The JSON whitespace Python's `json.loads` skips around a value.
pub(crate) fn is_json_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// Parses one line's JSON text (the whole line must be one JSON value, JSON whitespace around it).
pub(crate) fn parse_line(text: &str) -> Result<Line<'_>, serde_json::Error> {
    let first = text.bytes().find(|b| !is_json_space(*b));
    if first == Some(b'{') {
        Ok(Line::Object(Box::new(object::<RecordSlots, KEY_COUNT>(
            text,
        )?)))
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

/// Whether the raw text of an object has the key `intervals`, and the raw text of its (last)
/// value.
pub(crate) fn intervals_of(raw_object: &str) -> Option<&str> {
    // Most metadata objects never mention intervals; skip the parse for them. A key written with
    // escapes (`"\u0069ntervals"`) has a backslash, so those still get the full parse.
    if memchr::memmem::find(raw_object.as_bytes(), b"intervals").is_none()
        && memchr::memchr(b'\\', raw_object.as_bytes()).is_none()
    {
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

/// A JSON integer of any size, as Python's `int` would hold it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Int<'a> {
    /// The value, when it fits in `i128` (every integer up to 38 digits does).
    pub value: Option<i128>,
    /// Whether it is below zero (`-0` is not).
    pub negative: bool,
    /// The literal's text.
    pub digits: &'a str,
}

impl fmt::Display for Int<'_> {
    /// As Python's `str(int)`: `-0` is `0`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.value {
            Some(v) => write!(f, "{v}"),
            None => f.write_str(self.digits),
        }
    }
}

/// A JSON value typed the way Python's `json` module types it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Val<'a> {
    /// `null`.
    Null,
    /// `true`/`false` (never an integer here: the reference checks `bool` first).
    Bool(bool),
    /// An integer literal (no fraction, no exponent); `-0` is the integer 0.
    Int(Int<'a>),
    /// A number with a fraction or an exponent, or one of `NaN`, `Infinity`, `-Infinity`.
    Float(f64),
    /// A string, unescaped.
    Str(Cow<'a, str>),
    /// A string with a `\\u` escape of a lone surrogate, which Python keeps but UTF-8 cannot
    /// hold: its text with U+FFFD in place of each such escape, and the first such code unit.
    /// It compares as the text it is; checks that keep string values refuse it.
    LossyStr(String, u16),
    /// An array (Python `list`).
    List,
    /// An object (Python `dict`).
    Dict,
}

impl Val<'_> {
    /// Python's type name, as `unhashable type: '...'` messages print it.
    pub(crate) fn python_type(&self) -> &'static str {
        match self {
            Val::Null => "NoneType",
            Val::Bool(_) => "bool",
            Val::Int(_) => "int",
            Val::Float(_) => "float",
            Val::Str(_) | Val::LossyStr(..) => "str",
            Val::List => "list",
            Val::Dict => "dict",
        }
    }
}

/// The JSON texts [`crate::fingerprint::rewrite_special_literals`] puts in place of `NaN`,
/// `Infinity` and `-Infinity`, with the float each stands for.
pub(crate) const SPECIAL_SENTINELS: [(&str, f64); 3] = [
    ("\"\\u0000tally:NaN\"", f64::NAN),
    ("\"\\u0000tally:Infinity\"", f64::INFINITY),
    ("\"\\u0000tally:-Infinity\"", f64::NEG_INFINITY),
];

/// Types the raw text of a JSON value. With `lenient` (the line had `NaN`/`Infinity` literals
/// rewritten), the rewrite's sentinel strings are the floats they replaced.
pub(crate) fn classify(raw: &str, lenient: bool) -> Val<'_> {
    match raw.as_bytes()[0] {
        b'n' => Val::Null,
        b't' => Val::Bool(true),
        b'f' => Val::Bool(false),
        b'[' => Val::List,
        b'{' => Val::Dict,
        b'"' => {
            if lenient
                && raw.as_bytes().get(1) == Some(&b'\\')
                && let Some((_, f)) = SPECIAL_SENTINELS.iter().find(|(s, _)| *s == raw)
            {
                return Val::Float(*f);
            }
            match unescape(&raw[1..raw.len() - 1]) {
                (text, None) => Val::Str(text),
                (text, Some(unit)) => Val::LossyStr(text.into_owned(), unit),
            }
        }
        _ => number(raw),
    }
}

fn number(raw: &str) -> Val<'_> {
    if raw.bytes().any(|b| matches!(b, b'.' | b'e' | b'E')) {
        // Rust's parser is correctly rounded like Python's `float()`; overflow gives infinity.
        return Val::Float(raw.parse().unwrap_or(f64::NAN));
    }
    let (negative_sign, digits) = match raw.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, raw),
    };
    let mut value: Option<i128> = Some(0);
    for b in digits.bytes() {
        value = value
            .and_then(|v| v.checked_mul(10))
            .and_then(|v| v.checked_add(i128::from(b - b'0')));
    }
    let value = value.map(|v| if negative_sign { -v } else { v });
    let negative = match value {
        Some(v) => v < 0,
        None => negative_sign,
    };
    Val::Int(Int {
        value,
        negative,
        digits: raw,
    })
}

/// The text of a JSON string body (between the quotes), already checked by `serde_json`, and
/// the first lone surrogate escape in it (replaced by U+FFFD, as Python's scanner would keep it
/// alone: a high surrogate not followed by a low one leaves the next escape untouched).
fn unescape(body: &str) -> (Cow<'_, str>, Option<u16>) {
    let Some(first) = memchr::memchr(b'\\', body.as_bytes()) else {
        return (Cow::Borrowed(body), None);
    };
    let mut lone = None;
    let bytes = body.as_bytes();
    let mut out = String::with_capacity(body.len());
    out.push_str(&body[..first]);
    let mut i = first;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            let next = memchr::memchr(b'\\', &bytes[i..]).map_or(bytes.len(), |r| i + r);
            out.push_str(&body[i..next]);
            i = next;
            continue;
        }
        let escape = bytes[i + 1];
        i += 2;
        match escape {
            b'"' => out.push('"'),
            b'\\' => out.push('\\'),
            b'/' => out.push('/'),
            b'b' => out.push('\u{8}'),
            b'f' => out.push('\u{c}'),
            b'n' => out.push('\n'),
            b'r' => out.push('\r'),
            b't' => out.push('\t'),
            _ => {
                let unit = hex4(&body[i..i + 4]);
                i += 4;
                let low = (body.get(i..i + 2) == Some("\\u"))
                    .then(|| hex4(&body[i + 2..i + 6]))
                    .filter(|low| (0xdc00..0xe000).contains(low));
                let c = match (unit, low) {
                    (0xd800..=0xdbff, Some(low)) => {
                        i += 6;
                        0x10000 + ((u32::from(unit) - 0xd800) << 10) + (u32::from(low) - 0xdc00)
                    }
                    (0xd800..=0xdfff, _) => {
                        lone.get_or_insert(unit);
                        0xfffd
                    }
                    _ => u32::from(unit),
                };
                out.push(char::from_u32(c).expect("a valid scalar value"));
            }
        }
    }
    (Cow::Owned(out), lone)
}

fn hex4(text: &str) -> u16 {
    u16::from_str_radix(text, 16).expect("serde_json checked the escape")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn val(raw: &str) -> Val<'_> {
        classify(raw, false)
    }

    #[test]
    fn numbers_are_typed_as_python_types_them() {
        assert!(matches!(val("1.0"), Val::Float(f) if f == 1.0));
        assert!(matches!(val("1e3"), Val::Float(f) if f == 1000.0));
        assert!(matches!(val("1e400"), Val::Float(f) if f.is_infinite()));
        let Val::Int(zero) = val("-0") else { panic!() };
        assert_eq!(
            (zero.value, zero.negative, zero.to_string()),
            (Some(0), false, "0".into())
        );
        let Val::Int(big) = val("1180591620717411303424") else {
            panic!()
        };
        assert_eq!(big.value, Some(1 << 70));
        let huge = "9".repeat(60);
        let Val::Int(h) = val(&huge) else { panic!() };
        assert_eq!(
            (h.value, h.negative, h.to_string()),
            (None, false, huge.clone())
        );
        let neg = format!("-{huge}");
        let Val::Int(n) = val(&neg) else { panic!() };
        assert!(n.negative && n.value.is_none());
        assert_eq!(val("true"), Val::Bool(true));
    }

    #[test]
    fn strings_unescape_and_refuse_lone_surrogates() {
        assert_eq!(val(r#""abc""#), Val::Str(Cow::Borrowed("abc")));
        assert_eq!(
            val(r#""a\"b\\c\/\n\u00e9\ud83d\ude00""#),
            Val::Str(Cow::Owned("a\"b\\c/\n\u{e9}\u{1f600}".into()))
        );
        assert_eq!(
            val(r#""\ud800x""#),
            Val::LossyStr("\u{fffd}x".into(), 0xd800)
        );
        assert_eq!(val(r#""\udc00""#), Val::LossyStr("\u{fffd}".into(), 0xdc00));
        assert_eq!(
            val(r#""\ud800\u0041""#),
            Val::LossyStr("\u{fffd}A".into(), 0xd800)
        );
    }

    #[test]
    fn sentinels_match_the_fingerprint_rewrite() {
        let rewritten = crate::fingerprint::rewrite_special_literals("[NaN,Infinity,-Infinity]");
        let expected = format!(
            "[{},{},{}]",
            SPECIAL_SENTINELS[0].0, SPECIAL_SENTINELS[1].0, SPECIAL_SENTINELS[2].0
        );
        assert_eq!(rewritten, expected);
        assert!(matches!(classify(SPECIAL_SENTINELS[0].0, true), Val::Float(f) if f.is_nan()));
        assert!(matches!(
            classify(SPECIAL_SENTINELS[0].0, false),
            Val::Str(_)
        ));
    }

    #[test]
    fn records_keep_first_positions_and_last_values() {
        let Line::Object(w) =
            parse_line(r#"{"event_id":"a","zz":1,"yy":2,"event_id":"b"}"#).unwrap()
        else {
            panic!()
        };
        assert_eq!(w.get(Key::EventId), Some(r#""b""#));
        assert_eq!(w.position(Key::EventId as usize), 1);
        assert_eq!(w.first_unknown(), Some((2, "zz")));
        assert!(matches!(parse_line(" [1, 2] ").unwrap(), Line::NotObject));
        assert!(matches!(parse_line("1e400").unwrap(), Line::NotObject));
        assert!(parse_line("{} x").is_err());
        assert!(parse_line("\u{feff}{}").is_err());
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
