//! JSON text exactly as Python's `json.dumps(..., ensure_ascii=True)` writes it.
//!
//! The reference serialises every row with `json.dumps(row, sort_keys=True)`, so a byte-identical
//! writer needs Python's string escaping (every character outside printable ASCII as `\uXXXX` in
//! lowercase hex, astral characters as surrogate pairs), Python's `repr` of floats, the literals
//! `NaN`/`Infinity`/`-Infinity`, and objects with sorted keys. Both separator styles are here:
//! the default `", "`/`": "` of written rows and the compact `,`/`:` of the context-id hash.
//!
//! This module only appends bytes to a `Vec<u8>`; it knows nothing of records (see
//! [`super::record`]) and does no I/O.

use std::sync::LazyLock;

use serde_json::Value;

use crate::fingerprint;

/// Which separators to put between items and between a key and its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Separators {
    /// Python's defaults: `", "` and `": "` (rows of a written artifact).
    Spaced,
    /// `","` and `":"` (the canonical text hashed into a context id).
    Compact,
}

impl Separators {
    pub(crate) fn item(self) -> &'static [u8] {
        match self {
            Self::Spaced => b", ",
            Self::Compact => b",",
        }
    }
    pub(crate) fn key(self) -> &'static [u8] {
        match self {
            Self::Spaced => b": ",
            Self::Compact => b":",
        }
    }
}

/// Bytes that cannot be copied verbatim into a Python `ensure_ascii` string: controls, `"`, `\`,
/// DEL and every byte of a multi-byte UTF-8 sequence.
const NEEDS_ESCAPE: [bool; 256] = {
    let mut table = [false; 256];
    let mut i = 0;
    while i < 256 {
        table[i] = i < 0x20 || i == b'"' as usize || i == b'\\' as usize || i >= 0x7f;
        i += 1;
    }
    table
};

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Appends `s` as a quoted JSON string, escaped like Python's `ensure_ascii=True`.
pub(crate) fn push_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        if !NEEDS_ESCAPE[bytes[i] as usize] {
            i += 1;
            continue;
        }
        out.extend_from_slice(&bytes[start..i]);
        let b = bytes[i];
        if b < 0x80 {
            match b {
                b'"' => out.extend_from_slice(b"\\\""),
                b'\\' => out.extend_from_slice(b"\\\\"),
                b'\n' => out.extend_from_slice(b"\\n"),
                b'\r' => out.extend_from_slice(b"\\r"),
                b'\t' => out.extend_from_slice(b"\\t"),
                0x08 => out.extend_from_slice(b"\\b"),
                0x0c => out.extend_from_slice(b"\\f"),
                _ => push_u_escape(out, u16::from(b)),
            }
            i += 1;
        } else {
            // `s` is valid UTF-8, so a lead byte here starts a whole character.
            let ch = s[i..].chars().next().expect("a character starts here");
            let mut units = [0u16; 2];
            for unit in ch.encode_utf16(&mut units) {
                push_u_escape(out, *unit);
            }
            i += ch.len_utf8();
        }
        start = i;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

fn push_u_escape(out: &mut Vec<u8>, unit: u16) {
    out.extend_from_slice(&[
        b'\\',
        b'u',
        HEX[usize::from(unit >> 12)],
        HEX[usize::from((unit >> 8) & 0xf)],
        HEX[usize::from((unit >> 4) & 0xf)],
        HEX[usize::from(unit & 0xf)],
    ]);
}

/// Appends an unsigned integer in decimal.
pub(crate) fn push_u64(out: &mut Vec<u8>, mut v: u64) {
    let mut digits = [0u8; 20];
    let mut n = digits.len();
    loop {
        n -= 1;
        digits[n] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[n..]);
}

/// Appends a signed integer in decimal.
pub(crate) fn push_i64(out: &mut Vec<u8>, v: i64) {
    if v < 0 {
        out.push(b'-');
    }
    push_u64(out, v.unsigned_abs());
}

/// Appends a float as Python's `json.dumps` does: `float.__repr__` for finite values (shortest
/// round-trip digits; scientific notation with a signed, at least two-digit exponent when the
/// decimal exponent is below -4 or above 15; otherwise positional with at least one decimal), and
/// `NaN`, `Infinity`, `-Infinity` for the rest.
pub(crate) fn push_f64(out: &mut Vec<u8>, f: f64) {
    if f.is_nan() {
        out.extend_from_slice(b"NaN");
        return;
    }
    if f.is_infinite() {
        out.extend_from_slice(if f > 0.0 { b"Infinity" } else { b"-Infinity" });
        return;
    }
    // `{:e}` gives the shortest round-trip digits as `-d.ddde-x`.
    let sci = format!("{f:e}");
    let (mantissa, exponent) = sci.split_once('e').expect("`{:e}` has an exponent");
    let exponent: i32 = exponent.parse().expect("`{:e}` exponent is an integer");
    let (negative, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, mantissa),
    };
    let digits: Vec<u8> = mantissa.bytes().filter(|b| *b != b'.').collect();
    if negative {
        out.push(b'-');
    }
    // Python's `repr` switches to exponent form when decpt <= -4 or decpt > 16, where the value
    // is 0.DIGITS x 10^decpt.
    let decpt = exponent + 1;
    if decpt <= -4 || decpt > 16 {
        out.push(digits[0]);
        if digits.len() > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        out.push(b'e');
        out.push(if exponent < 0 { b'-' } else { b'+' });
        let magnitude = exponent.unsigned_abs();
        if magnitude < 10 {
            out.push(b'0');
        }
        push_u64(out, u64::from(magnitude));
    } else if decpt <= 0 {
        out.extend_from_slice(b"0.");
        out.extend(std::iter::repeat_n(b'0', decpt.unsigned_abs() as usize));
        out.extend_from_slice(&digits);
    } else {
        let decpt = decpt as usize;
        if decpt >= digits.len() {
            out.extend_from_slice(&digits);
            out.extend(std::iter::repeat_n(b'0', decpt - digits.len()));
            out.extend_from_slice(b".0");
        } else {
            out.extend_from_slice(&digits[..decpt]);
            out.push(b'.');
            out.extend_from_slice(&digits[decpt..]);
        }
    }
}

/// Appends a JSON value with sorted object keys at every level. Strings that
/// [`fingerprint::parse_lenient`] made out of the literals `NaN`, `Infinity` and `-Infinity` are
/// written back as those literals.
pub(crate) fn push_value(out: &mut Vec<u8>, value: &Value, seps: Separators) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                push_u64(out, u);
            } else if let Some(i) = n.as_i64() {
                push_i64(out, i);
            } else {
                push_f64(out, n.as_f64().unwrap_or(f64::NAN));
            }
        }
        Value::String(s) => match special_float(s) {
            Some(special) => push_f64(out, special),
            None => push_str(out, s),
        },
        Value::Array(items) => {
            out.push(b'[');
            for (k, item) in items.iter().enumerate() {
                if k > 0 {
                    out.extend_from_slice(seps.item());
                }
                push_value(out, item, seps);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            out.push(b'{');
            let sorted = map.keys().zip(map.keys().skip(1)).all(|(a, b)| a < b);
            if sorted {
                push_members(out, map.iter(), seps);
            } else {
                let mut members: Vec<(&String, &Value)> = map.iter().collect();
                members.sort_unstable_by(|a, b| a.0.cmp(b.0));
                push_members(out, members.into_iter(), seps);
            }
            out.push(b'}');
        }
    }
}

/// The float a sentinel string of [`fingerprint::parse_lenient`] stands for. The sentinels are
/// learnt from `parse_lenient` itself, so this stays right if their spelling changes.
fn special_float(s: &str) -> Option<f64> {
    static SENTINELS: LazyLock<Vec<(String, f64)>> = LazyLock::new(|| {
        let parsed = fingerprint::parse_lenient("[NaN, Infinity, -Infinity]")
            .expect("the reference's special literals parse");
        let values = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY];
        parsed
            .as_array()
            .into_iter()
            .flatten()
            .zip(values)
            .filter_map(|(sentinel, value)| Some((sentinel.as_str()?.to_owned(), value)))
            .collect()
    });
    SENTINELS
        .iter()
        .find(|(sentinel, _)| sentinel == s)
        .map(|(_, value)| *value)
}

fn push_members<'a>(
    out: &mut Vec<u8>,
    members: impl Iterator<Item = (&'a String, &'a Value)>,
    seps: Separators,
) {
    for (k, (key, value)) in members.enumerate() {
        if k > 0 {
            out.extend_from_slice(seps.item());
        }
        push_str(out, key);
        out.extend_from_slice(seps.key());
        push_value(out, value, seps);
    }
}
