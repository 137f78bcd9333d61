//! The canonical byte encoding that fingerprints hash, and the canonical encoding of a JSON
//! object text with the reference's value equality.
//!
//! Every value is tagged and length-prefixed, so distinct value sequences never encode to the
//! same bytes. A JSON text is encoded by value: object keys sorted (the last of duplicate keys
//! wins), numbers by numeric value across integers, floats and booleans, `NaN` equal to `NaN`.
//! Two paths produce the same bytes: a direct scan for the common shapes (integers of up to 18
//! digits, strings without escapes, any nesting), and a `serde_json::Value` parse for everything
//! else (floats, escapes, the `NaN`/`Infinity` literals). The scan gives up, and the parse runs,
//! on anything it does not handle, so it never has to judge an error.
//!
//! Only encoding lives here; which values make up a fingerprint is [`super`]'s business.

use std::cell::Cell;

use serde_json::Value;
use xxhash_rust::xxh3::xxh3_128;

use super::Fingerprint;
use crate::json::{parse_lenient, special_float};
use crate::model::{EntityRef, Nanos};

/// A canonical encoder: bytes appended to a buffer, hashed once at the end.
pub(super) struct Canon {
    buf: Vec<u8>,
    /// Scratch for object members while their keys are sorted: `(key start, key end, encoding
    /// start, encoding end)`, the key in the JSON text, the encoding in `buf`.
    members: Vec<(u32, u32, u32, u32)>,
    /// Scratch for reordered member encodings.
    reordered: Vec<u8>,
}

thread_local! {
    static ENCODER: Cell<Canon> = const { Cell::new(Canon::new()) };
}

/// Buffers larger than this are not kept for the next fingerprint.
const KEPT_CAPACITY: usize = 1 << 16;

/// Encodes with `f` and hashes the bytes (128-bit XXH3), reusing this thread's buffers.
pub(super) fn hashed(f: impl FnOnce(&mut Canon)) -> Fingerprint {
    let mut canon = ENCODER.take();
    canon.buf.clear();
    f(&mut canon);
    let fingerprint = xxh3_128(&canon.buf);
    if canon.buf.capacity() <= KEPT_CAPACITY && canon.reordered.capacity() <= KEPT_CAPACITY {
        ENCODER.set(canon);
    }
    fingerprint
}

impl Default for Canon {
    fn default() -> Self {
        Self::new()
    }
}

impl Canon {
    const fn new() -> Self {
        Self {
            buf: Vec::new(),
            members: Vec::new(),
            reordered: Vec::new(),
        }
    }
    pub(super) fn tag(&mut self, t: u8) {
        self.buf.push(t);
    }
    fn len(&mut self, n: usize) {
        self.buf.extend_from_slice(&(n as u64).to_le_bytes());
    }
    pub(super) fn str(&mut self, s: &str) {
        self.tag(b's');
        self.len(s.len());
        self.buf.extend_from_slice(s.as_bytes());
    }
    pub(super) fn opt_str(&mut self, s: Option<&str>) {
        match s {
            None => self.tag(b'n'),
            Some(s) => self.str(s),
        }
    }
    pub(super) fn int(&mut self, v: i128) {
        self.tag(b'i');
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub(super) fn opt_u64(&mut self, v: Option<u64>) {
        match v {
            None => self.tag(b'n'),
            Some(v) => self.int(i128::from(v)),
        }
    }
    pub(super) fn opt_ns(&mut self, v: Option<Nanos>) {
        match v {
            None => self.tag(b'n'),
            Some(v) => self.int(i128::from(v)),
        }
    }
    pub(super) fn entity(&mut self, r: &EntityRef) {
        self.tag(b'r');
        self.str(&r.producer_id);
        self.str(&r.id);
    }
    pub(super) fn opt_entity(&mut self, r: Option<&EntityRef>) {
        match r {
            None => self.tag(b'n'),
            Some(r) => self.entity(r),
        }
    }
    /// A nested fingerprint, under its own tag.
    pub(super) fn fingerprint(&mut self, t: u8, fingerprint: Fingerprint) {
        self.tag(t);
        self.buf.extend_from_slice(&fingerprint.to_le_bytes());
    }
    /// A list of strings.
    pub(super) fn strs<S: AsRef<str>>(&mut self, list: &[S]) {
        self.tag(b'a');
        self.len(list.len());
        for s in list {
            self.str(s.as_ref());
        }
    }

    /// The JSON value in `text` by value; text that is not JSON (which the reader never makes)
    /// is encoded as a string, so that it is at least stable.
    pub(super) fn json_text(&mut self, text: &str) {
        let start = self.buf.len();
        let mut scan = Scan {
            text,
            bytes: text.as_bytes(),
            at: 0,
            canon: self,
        };
        if scan.document().is_some() {
            return;
        }
        self.buf.truncate(start);
        self.members.clear();
        match parse_lenient(text) {
            Ok(v) => self.json(&v),
            Err(_) => self.str(text),
        }
    }

    /// A parsed JSON value (the reference's equality; see the module docs).
    fn json(&mut self, v: &Value) {
        match v {
            Value::Null => self.tag(b'n'),
            Value::Bool(b) => self.int(i128::from(*b)),
            Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    self.int(i128::from(i))
                } else if let Some(u) = n.as_u64() {
                    self.int(i128::from(u))
                } else {
                    self.float(n.as_f64().unwrap_or(f64::NAN))
                }
            }
            Value::String(s) => match special_float(s) {
                Some(special) => self.float(special),
                None => self.str(s),
            },
            Value::Array(items) => {
                self.tag(b'a');
                self.len(items.len());
                for item in items {
                    self.json(item);
                }
            }
            Value::Object(map) => {
                // Sorted by key whatever order the map keeps (serde_json's default map is
                // already sorted; this does not depend on it).
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
                self.tag(b'o');
                self.len(entries.len());
                for (k, v) in entries {
                    self.str(k);
                    self.json(v);
                }
            }
        }
    }

    fn float(&mut self, f: f64) {
        if f.is_nan() {
            self.tag(b'N');
        } else if f.is_finite() && f.fract() == 0.0 && f.abs() < 1.7e38 {
            // Integral floats equal the integer of the same value (Python: 1 == 1.0).
            self.int(f as i128)
        } else {
            self.tag(b'f');
            self.buf.extend_from_slice(&f.to_bits().to_le_bytes());
        }
    }
}

/// Nesting the direct scan handles (`serde_json` refuses more than 128 levels; deeper text goes
/// to it).
const MAX_DEPTH: u32 = 100;

/// The direct scan of a JSON text into canonical bytes. Every method returns `None` for what it
/// does not handle, invalid JSON included; the caller then falls back to `serde_json`.
struct Scan<'t, 'c> {
    text: &'t str,
    bytes: &'t [u8],
    at: usize,
    canon: &'c mut Canon,
}

impl Scan<'_, '_> {
    fn document(&mut self) -> Option<()> {
        self.space();
        self.value(0)?;
        self.space();
        (self.at == self.bytes.len()).then_some(())
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.at + word.len();
        (self.bytes.get(self.at..end)? == word).then(|| self.at = end)
    }

    fn value(&mut self, depth: u32) -> Option<()> {
        match self.peek()? {
            b'{' => self.object(depth + 1),
            b'[' => self.array(depth + 1),
            b'"' => {
                let (start, end) = self.string()?;
                let text = self.text;
                self.canon.str(&text[start..end]);
                Some(())
            }
            b't' => self.literal(b"true").map(|()| self.canon.int(1)),
            b'f' => self.literal(b"false").map(|()| self.canon.int(0)),
            b'n' => self.literal(b"null").map(|()| self.canon.tag(b'n')),
            b'-' | b'0'..=b'9' => self.integer(),
            _ => None,
        }
    }

    /// A string without escapes or control characters: the byte range of its contents.
    fn string(&mut self) -> Option<(usize, usize)> {
        let start = self.at + 1;
        let mut i = start;
        loop {
            match *self.bytes.get(i)? {
                b'"' => break,
                b'\\' | 0..0x20 => return None,
                _ => i += 1,
            }
        }
        self.at = i + 1;
        Some((start, i))
    }

    /// An integer of at most 18 digits (it fits `i64`); floats and longer integers are `None`.
    fn integer(&mut self) -> Option<()> {
        let negative = self.peek() == Some(b'-');
        if negative {
            self.at += 1;
        }
        let start = self.at;
        match self.peek()? {
            b'0' => self.at += 1,
            b'1'..=b'9' => {
                while matches!(self.peek(), Some(b'0'..=b'9')) {
                    self.at += 1;
                }
            }
            _ => return None,
        }
        if matches!(self.peek(), Some(b'.' | b'e' | b'E')) || self.at - start > 18 {
            return None;
        }
        let magnitude = self.bytes[start..self.at]
            .iter()
            .fold(0i64, |v, b| v * 10 + i64::from(b - b'0'));
        self.canon
            .int(i128::from(if negative { -magnitude } else { magnitude }));
        Some(())
    }

    fn array(&mut self, depth: u32) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.at += 1;
        self.canon.tag(b'a');
        let count_at = self.canon.buf.len();
        self.canon.len(0);
        self.space();
        let mut count = 0u64;
        if self.peek()? == b']' {
            self.at += 1;
        } else {
            loop {
                self.value(depth)?;
                count += 1;
                self.space();
                match self.peek()? {
                    b',' => {
                        self.at += 1;
                        self.space();
                    }
                    b']' => {
                        self.at += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        self.canon.buf[count_at..count_at + 8].copy_from_slice(&count.to_le_bytes());
        Some(())
    }

    fn object(&mut self, depth: u32) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.at += 1;
        self.canon.tag(b'o');
        let count_at = self.canon.buf.len();
        self.canon.len(0);
        let first_member = self.canon.members.len();
        self.space();
        if self.peek()? == b'}' {
            self.at += 1;
            return Some(());
        }
        loop {
            if self.peek()? != b'"' {
                return None;
            }
            let (key_start, key_end) = self.string()?;
            self.space();
            if self.peek()? != b':' {
                return None;
            }
            self.at += 1;
            self.space();
            let encoded_start = self.canon.buf.len();
            let text = self.text;
            self.canon.str(&text[key_start..key_end]);
            self.value(depth)?;
            let encoded_end = self.canon.buf.len();
            self.canon.members.push((
                key_start as u32,
                key_end as u32,
                encoded_start as u32,
                encoded_end as u32,
            ));
            self.space();
            match self.peek()? {
                b',' => {
                    self.at += 1;
                    self.space();
                }
                b'}' => {
                    self.at += 1;
                    break;
                }
                _ => return None,
            }
        }
        let count = self.sort_members(first_member, count_at + 8);
        self.canon.buf[count_at..count_at + 8].copy_from_slice(&(count as u64).to_le_bytes());
        self.canon.members.truncate(first_member);
        Some(())
    }

    /// Puts the encoded members of the object whose members start at `first` in key order,
    /// keeping the last of equal keys; returns the number of distinct keys. The members'
    /// encodings start at `encoded_start` in the buffer and are contiguous.
    fn sort_members(&mut self, first: usize, encoded_start: usize) -> usize {
        let bytes = self.bytes;
        let key = |m: &(u32, u32, u32, u32)| &bytes[m.0 as usize..m.1 as usize];
        let members = &mut self.canon.members[first..];
        if members.windows(2).all(|w| key(&w[0]) < key(&w[1])) {
            return members.len();
        }
        // Stable: among equal keys the last written stays last, and is the one kept.
        members.sort_by(|a, b| key(a).cmp(key(b)));
        let reordered = &mut self.canon.reordered;
        reordered.clear();
        let mut count = 0;
        for (i, m) in members.iter().enumerate() {
            if members.get(i + 1).is_some_and(|next| key(next) == key(m)) {
                continue;
            }
            reordered.extend_from_slice(&self.canon.buf[m.2 as usize..m.3 as usize]);
            count += 1;
        }
        self.canon.buf.truncate(encoded_start);
        self.canon.buf.extend_from_slice(reordered);
        count
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// The direct scan's encoding, or `None` where it gives up.
    fn scanned(text: &str) -> Option<Vec<u8>> {
        let mut canon = Canon::default();
        let mut scan = Scan {
            text,
            bytes: text.as_bytes(),
            at: 0,
            canon: &mut canon,
        };
        scan.document()?;
        assert!(canon.members.is_empty(), "scratch left behind for {text}");
        Some(canon.buf)
    }

    /// The `serde_json` encoding.
    fn parsed(text: &str) -> Option<Vec<u8>> {
        let mut canon = Canon::default();
        canon.json(&parse_lenient(text).ok()?);
        Some(canon.buf)
    }

    #[test]
    fn the_scan_encodes_as_the_parse_does() {
        for text in [
            "{}",
            " { } ",
            r#"{"a":1,"b":2}"#,
            r#"{"b":2,"a":1}"#,
            r#"{"a":1,"a":2}"#,
            r#"{"b":{"y":[1,{"q":null,"p":true}],"x":false},"a":[],"b":-0}"#,
            r#"{"a" : "x y é" , "c":[ 1 , -5 , 999999999999999999 ], "b":"", "a":"z"}"#,
            "{\"k\":1,\"j\":{\"z\":1,\"z\":[2],\"a\":{}},\"k\":[]}\n",
            r#"[1,"two",[3]]"#,
            "7",
        ] {
            assert_eq!(scanned(text), parsed(text), "{text}");
            assert!(scanned(text).is_some(), "{text}");
        }
    }

    #[test]
    fn the_scan_leaves_the_rest_to_the_parse() {
        let deep = format!("{}{}", "[".repeat(120), "]".repeat(120));
        for text in [
            r#"{"a":1.5}"#,
            r#"{"a":1e3}"#,
            r#"{"a":1E3}"#,
            r#"{"a":"x\"y"}"#,
            r#"{"a\u0041":1}"#,
            r#"{"a":1234567890123456789}"#,
            r#"{"a":NaN}"#,
            r#"{"a":-Infinity}"#,
            r#"{"a":01}"#,
            r#"{"a":-}"#,
            r#"{"a":1,}"#,
            r#"{"a":1 "b":2}"#,
            r#"{"a"}"#,
            r#"{1:1}"#,
            "{\"a\":\"\t\"}",
            r#"[1 2]"#,
            "[1,]",
            "{} x",
            "",
            "tru",
            "nul",
            &deep,
        ] {
            assert_eq!(scanned(text), None, "{text}");
        }
    }

    /// JSON texts with repeated keys and varied spacing; `scannable` leaves out what the scan
    /// gives up on (floats, long integers, escapes).
    fn json_text(scannable: bool) -> impl Strategy<Value = String> {
        let simple = prop_oneof![
            Just("null".to_string()),
            Just("true".to_string()),
            Just("false".to_string()),
            (-99_999_999_999_999_999i64..99_999_999_999_999_999).prop_map(|v| v.to_string()),
            (0u64..3).prop_map(|v| v.to_string()),
            Just("-0".to_string()),
            "[a-c é]{0,3}".prop_map(|s| serde_json::to_string(&s).unwrap()),
        ];
        let other = prop_oneof![
            any::<i64>().prop_map(|v| v.to_string()),
            Just("1.0".to_string()),
            Just("2.5e1".to_string()),
            Just("18446744073709551615".to_string()),
            "[a-c é\"\\\\]{0,3}".prop_map(|s| serde_json::to_string(&s).unwrap()),
        ];
        let leaf = if scannable {
            simple.boxed()
        } else {
            prop_oneof![simple, other].boxed()
        };
        leaf.prop_recursive(4, 32, 5, |inner| {
            prop_oneof![
                (prop::collection::vec(inner.clone(), 0..5), " ?").prop_map(|(items, sp)| {
                    format!("[{sp}{}{sp}]", items.join(&format!("{sp},{sp}")))
                }),
                (prop::collection::vec(("[abc]{1,2}", inner), 0..5), " ?",).prop_map(
                    |(members, sp)| {
                        let members: Vec<String> = members
                            .into_iter()
                            .map(|(k, v)| format!("\"{k}\"{sp}:{sp}{v}"))
                            .collect();
                        format!("{{{sp}{}{sp}}}", members.join(","))
                    }
                ),
            ]
        })
    }

    proptest! {
        #[test]
        fn the_scan_agrees_with_the_parse_wherever_it_answers(text in json_text(false)) {
            let parsed = parsed(&text);
            prop_assert!(parsed.is_some(), "generated text parses: {}", text);
            if let Some(scanned) = scanned(&text) {
                prop_assert_eq!(Some(scanned), parsed, "{}", text);
            }
        }

        #[test]
        fn the_scan_answers_for_common_shapes(text in json_text(true)) {
            prop_assert_eq!(scanned(&text), parsed(&text), "{}", text);
        }
    }
}
