//! JSON values typed the way Python's `json` module types them, from their raw text: null,
//! booleans, integers of any size (keeping their digits), floats (with the `NaN`/`Infinity`
//! sentinels of a rewritten line), strings (unescaped, lone surrogates noted) and containers.
//!
//! Only classification lives here; what a field may hold is `fields`' business, and where raw
//! texts come from is `wire`'s.

use std::borrow::Cow;
use std::fmt;

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

/// The JSON texts [`tally_evidence::json::rewrite_special_literals`] puts in place of `NaN`,
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
    let magnitude: Option<i128> = if digits.len() <= 18 {
        // Fits in u64 without overflow checks (10^18 < 2^63).
        let v = digits
            .bytes()
            .fold(0u64, |v, b| v * 10 + u64::from(b - b'0'));
        Some(i128::from(v))
    } else {
        digits.bytes().try_fold(0i128, |v, b| {
            v.checked_mul(10)?.checked_add(i128::from(b - b'0'))
        })
    };
    let value = magnitude.map(|v| if negative_sign { -v } else { v });
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
        let rewritten = tally_evidence::json::rewrite_special_literals("[NaN,Infinity,-Infinity]");
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
}
