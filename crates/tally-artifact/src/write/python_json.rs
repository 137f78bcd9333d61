//! JSON text exactly as Python's `json.dumps(..., ensure_ascii=True)` writes it.
//!
//! The reference serialises every row with `json.dumps(row, sort_keys=True)`, so a byte-identical
//! writer needs Python's string escaping (every character outside printable ASCII as `\uXXXX` in
//! lowercase hex, astral characters as surrogate pairs), Python's `repr` of floats, the literals
//! `NaN`/`Infinity`/`-Infinity`. Both separator styles are here: the default `", "`/`": "` of
//! written rows and the compact `,`/`:` of the context-id hash.
//!
//! This module only appends scalars to a `Vec<u8>`; objects are assembled by
//! [`super::record`] and [`super::canonical`]. No I/O.

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
    push_str_body(out, s);
    out.push(b'"');
}

/// Appends the escaped characters of `s` without the quotes.
pub(crate) fn push_str_body(out: &mut Vec<u8>, s: &str) {
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
}

/// Appends `\uXXXX` (lowercase hex) for one UTF-16 code unit.
pub(crate) fn push_u_escape(out: &mut Vec<u8>, unit: u16) {
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
