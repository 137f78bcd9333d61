//! The non-standard JSON literals `NaN`, `Infinity` and `-Infinity`, which Python's `json` module
//! reads and writes: [`parse_lenient`] parses text that may hold them, by way of
//! [`rewrite_special_literals`], which replaces them (outside strings) by sentinel strings; and
//! [`Metadata`]'s JSON value ([`Metadata::to_map`], [`Metadata::from_map`]), which the model keeps
//! as text.
//!
//! Only the rewrite, the sentinels and the metadata's value live here; how the sentinels compare
//! is [`crate::fingerprint`]'s business, and the reader's own use of the rewrite is
//! `tally-artifact`'s (`read::decode`). All of it works on text in memory.

use serde_json::{Map, Value};

use crate::model::Metadata;

impl Metadata {
    /// Metadata from a JSON object value.
    pub fn from_map(map: &Map<String, Value>) -> Self {
        if map.is_empty() {
            Self::empty()
        } else {
            Self::from_json_text(&serde_json::to_string(map).expect("a JSON map serialises"))
        }
    }

    /// Parses the object. Metadata read by tally's reader always parses: it keeps the text as
    /// written, and the non-standard literals `NaN`/`Infinity`/`-Infinity` come back as the
    /// sentinel strings of [`parse_lenient`].
    pub fn to_map(&self) -> Map<String, Value> {
        if self.is_empty() {
            return Map::new();
        }
        match parse_lenient(self.json_text()) {
            Ok(Value::Object(map)) => map,
            _ => Map::new(),
        }
    }
}

/// The sentinel strings [`parse_lenient`] puts where the input had the non-standard literals.
pub(crate) const NAN_SENTINEL: &str = "\u{0}tally:NaN";
pub(crate) const INF_SENTINEL: &str = "\u{0}tally:Infinity";
pub(crate) const NEG_INF_SENTINEL: &str = "\u{0}tally:-Infinity";

/// The float a sentinel string stands for.
pub(crate) fn special_float(s: &str) -> Option<f64> {
    if !s.starts_with('\u{0}') {
        return None;
    }
    match s {
        NAN_SENTINEL => Some(f64::NAN),
        INF_SENTINEL => Some(f64::INFINITY),
        NEG_INF_SENTINEL => Some(f64::NEG_INFINITY),
        _ => None,
    }
}

/// Parses JSON text as the reference's parser does, also accepting the literals `NaN`, `Infinity`
/// and `-Infinity` (which Python's `json` module reads and writes). Those literals come back as
/// sentinel strings that [`fingerprint`](crate::fingerprint) compares as the floats they stand for.
pub fn parse_lenient(text: &str) -> Result<Value, serde_json::Error> {
    match serde_json::from_str(text) {
        Ok(v) => Ok(v),
        Err(e) => {
            if !(text.contains("NaN") || text.contains("Infinity")) {
                return Err(e);
            }
            serde_json::from_str(&rewrite_special_literals(text)).map_err(|_| e)
        }
    }
}

/// Replaces bare `NaN`, `Infinity` and `-Infinity` tokens outside strings by sentinel strings.
pub fn rewrite_special_literals(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len() + 32);
    let mut i = 0;
    let mut in_string = false;
    while i < bytes.len() {
        let c = bytes[i];
        if in_string {
            if c == b'\\' && i + 1 < bytes.len() {
                // The escaped character may be multi-byte (an invalid escape such as `\é`).
                let end = i + 1 + utf8_len(bytes[i + 1]);
                out.push_str(&text[i..end]);
                i = end;
                continue;
            }
            if c == b'"' {
                in_string = false;
            }
            let ch_len = utf8_len(c);
            out.push_str(&text[i..i + ch_len]);
            i += ch_len;
            continue;
        }
        let rest = &text[i..];
        let (token, sentinel) = if rest.starts_with("NaN") {
            ("NaN", NAN_SENTINEL)
        } else if rest.starts_with("-Infinity") {
            ("-Infinity", NEG_INF_SENTINEL)
        } else if rest.starts_with("Infinity") {
            ("Infinity", INF_SENTINEL)
        } else {
            ("", "")
        };
        if !token.is_empty() {
            out.push_str(&serde_json::to_string(sentinel).expect("string serialises"));
            i += token.len();
            continue;
        }
        if c == b'"' {
            in_string = true;
        }
        let ch_len = utf8_len(c);
        out.push_str(&text[i..i + ch_len]);
        i += ch_len;
    }
    out
}

fn utf8_len(first: u8) -> usize {
    match first {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        _ => 4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_literals_are_rewritten_outside_strings_only() {
        let v = parse_lenient(r#"{"a":NaN,"b":"NaN","c":[-Infinity]}"#).unwrap();
        assert_eq!(v["b"], "NaN");
        assert_eq!(v["a"], NAN_SENTINEL);
        assert_eq!(v["c"][0], NEG_INF_SENTINEL);
    }
}
