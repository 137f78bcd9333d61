//! Re-serialising JSON text as Python's `json.dumps(json.loads(text), sort_keys=True)` would.
//!
//! Metadata objects and legacy records are kept as their JSON text; writing them back must give
//! the bytes the reference writes after reading them. Going through `serde_json::Value` would
//! not: it turns `-0` into `-0.0`, integers beyond 64 bits into floats, and refuses lone UTF-16
//! surrogates (`"\ud800"`), all of which Python reads and writes back exactly. So this module
//! parses the text itself, keeping what Python keeps:
//!
//! - integers (no fraction, no exponent) are copied digit for digit, `-0` becoming `0`;
//! - other numbers are parsed as `f64` (correctly rounded, as Python's `float`) and written as
//!   Python's `repr` (`1e400` overflows to `Infinity`, as in Python);
//! - the literals `NaN`, `Infinity` and `-Infinity` are accepted and written back;
//! - strings are decoded to code points (surrogate pairs joined, lone surrogates kept) and
//!   re-escaped with `ensure_ascii`;
//! - object keys are sorted by code point; of duplicate keys the last value wins.
//!
//! It does not validate beyond what it needs: input that is not JSON is an error, nothing more.

use std::cmp::Ordering;

use super::python_json::{self, Separators};

/// Appends the canonical form of the JSON `text` to `out`.
pub(crate) fn reserialize(out: &mut Vec<u8>, text: &str, seps: Separators) -> Result<(), String> {
    let mut parser = Parser {
        text,
        bytes: text.as_bytes(),
        pos: 0,
        seps,
    };
    parser.skip_ws();
    parser.value(out)?;
    parser.skip_ws();
    if parser.pos != parser.bytes.len() {
        return Err(parser.error("extra data after the JSON value"));
    }
    Ok(())
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    seps: Separators,
}

impl<'a> Parser<'a> {
    fn error(&self, what: &str) -> String {
        format!("{what} at byte {}", self.pos)
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, literal: &[u8]) -> bool {
        if self.bytes[self.pos..].starts_with(literal) {
            self.pos += literal.len();
            true
        } else {
            false
        }
    }

    fn value(&mut self, out: &mut Vec<u8>) -> Result<(), String> {
        match self.bytes.get(self.pos) {
            Some(b'{') => self.object(out),
            Some(b'[') => self.array(out),
            Some(b'"') => {
                let s = self.string_token()?;
                s.push(out);
                Ok(())
            }
            Some(b'-' | b'0'..=b'9') => {
                if self.eat(b"-Infinity") {
                    out.extend_from_slice(b"-Infinity");
                    Ok(())
                } else {
                    self.number(out)
                }
            }
            _ => {
                for literal in [&b"null"[..], b"true", b"false", b"NaN", b"Infinity"] {
                    if self.eat(literal) {
                        out.extend_from_slice(literal);
                        return Ok(());
                    }
                }
                Err(self.error("expected a JSON value"))
            }
        }
    }

    fn object(&mut self, out: &mut Vec<u8>) -> Result<(), String> {
        self.pos += 1;
        let base = out.len();
        out.push(b'{');
        // Each member is written as it is read; `members` holds its key and byte range.
        let mut members: Vec<(Token<'a>, usize, usize)> = Vec::new();
        self.skip_ws();
        if !self.eat(b"}") {
            loop {
                self.skip_ws();
                if self.bytes.get(self.pos) != Some(&b'"') {
                    return Err(self.error("expected an object key"));
                }
                let key = self.string_token()?;
                self.skip_ws();
                if !self.eat(b":") {
                    return Err(self.error("expected ':'"));
                }
                self.skip_ws();
                if !members.is_empty() {
                    out.extend_from_slice(self.seps.item());
                }
                let start = out.len();
                key.push(out);
                out.extend_from_slice(self.seps.key());
                self.value(out)?;
                members.push((key, start, out.len()));
                self.skip_ws();
                if self.eat(b",") {
                    continue;
                }
                if self.eat(b"}") {
                    break;
                }
                return Err(self.error("expected ',' or '}'"));
            }
        }
        out.push(b'}');
        let in_order = members
            .windows(2)
            .all(|w| w[0].0.cmp_code_points(&w[1].0) == Ordering::Less);
        if in_order {
            return Ok(());
        }
        // Re-emit in key order. The sort is stable, so of equal keys the last one read is the
        // last of its run: that is the one Python's dict keeps.
        let region = out[base..].to_vec();
        out.truncate(base);
        members.sort_by(|a, b| a.0.cmp_code_points(&b.0));
        out.push(b'{');
        let mut first = true;
        for k in 0..members.len() {
            let next_equal = members
                .get(k + 1)
                .is_some_and(|next| next.0.cmp_code_points(&members[k].0) == Ordering::Equal);
            if next_equal {
                continue;
            }
            if !first {
                out.extend_from_slice(self.seps.item());
            }
            first = false;
            let (_, start, end) = &members[k];
            out.extend_from_slice(&region[start - base..end - base]);
        }
        out.push(b'}');
        Ok(())
    }

    fn array(&mut self, out: &mut Vec<u8>) -> Result<(), String> {
        self.pos += 1;
        out.push(b'[');
        self.skip_ws();
        if !self.eat(b"]") {
            let mut first = true;
            loop {
                if !first {
                    out.extend_from_slice(self.seps.item());
                }
                first = false;
                self.skip_ws();
                self.value(out)?;
                self.skip_ws();
                if self.eat(b",") {
                    continue;
                }
                if self.eat(b"]") {
                    break;
                }
                return Err(self.error("expected ',' or ']'"));
            }
        }
        out.push(b']');
        Ok(())
    }

    fn number(&mut self, out: &mut Vec<u8>) -> Result<(), String> {
        let start = self.pos;
        self.eat(b"-");
        let digits = |p: &mut Self| {
            let from = p.pos;
            while p.bytes.get(p.pos).is_some_and(u8::is_ascii_digit) {
                p.pos += 1;
            }
            p.pos > from
        };
        if self.eat(b"0") {
            // JSON allows no further integer digits after a leading zero.
        } else if !digits(self) {
            return Err(self.error("expected digits"));
        }
        let mut integer = true;
        if self.bytes.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            integer = false;
            if !digits(self) {
                return Err(self.error("expected fraction digits"));
            }
        }
        if let Some(b'e' | b'E') = self.bytes.get(self.pos) {
            self.pos += 1;
            integer = false;
            if let Some(b'+' | b'-') = self.bytes.get(self.pos) {
                self.pos += 1;
            }
            if !digits(self) {
                return Err(self.error("expected exponent digits"));
            }
        }
        let token = std::str::from_utf8(&self.bytes[start..self.pos]).expect("ASCII");
        if integer {
            out.extend_from_slice(if token == "-0" {
                b"0"
            } else {
                token.as_bytes()
            });
        } else {
            let value: f64 = token.parse().map_err(|_| self.error("bad number"))?;
            python_json::push_f64(out, value);
        }
        Ok(())
    }

    /// A string literal: its raw text when it has no escapes (the common case), else decoded.
    fn string_token(&mut self) -> Result<Token<'a>, String> {
        let start = self.pos + 1;
        let mut end = start;
        while let Some(&b) = self.bytes.get(end) {
            match b {
                b'"' => {
                    self.pos = end + 1;
                    return Ok(Token::Raw(&self.text[start..end]));
                }
                b'\\' => return self.string().map(Token::Decoded),
                _ => end += 1,
            }
        }
        Err(self.error("unterminated string"))
    }

    /// A string literal, decoded to code points (lone surrogates kept as themselves).
    fn string(&mut self) -> Result<Vec<u32>, String> {
        self.pos += 1;
        let mut units: Vec<u32> = Vec::new();
        loop {
            let Some(&b) = self.bytes.get(self.pos) else {
                return Err(self.error("unterminated string"));
            };
            match b {
                b'"' => {
                    self.pos += 1;
                    return Ok(units);
                }
                b'\\' => {
                    let escape = *self.bytes.get(self.pos + 1).ok_or("unterminated escape")?;
                    self.pos += 2;
                    let unit = match escape {
                        b'"' => 0x22,
                        b'\\' => 0x5c,
                        b'/' => 0x2f,
                        b'b' => 0x08,
                        b'f' => 0x0c,
                        b'n' => 0x0a,
                        b'r' => 0x0d,
                        b't' => 0x09,
                        b'u' => self.hex4()?,
                        _ => return Err(self.error("invalid escape")),
                    };
                    // Join a high surrogate with an escaped low one, as Python does.
                    // (A high surrogate can only be the last unit if it came from an escape
                    // right before: raw UTF-8 holds no surrogates.)
                    if let Some(&high) = units.last()
                        && escape == b'u'
                        && (0xd800..0xdc00).contains(&high)
                        && (0xdc00..0xe000).contains(&unit)
                    {
                        units.pop();
                        units.push(0x10000 + ((high - 0xd800) << 10) + (unit - 0xdc00));
                        continue;
                    }
                    units.push(unit);
                }
                _ => {
                    let rest = std::str::from_utf8(&self.bytes[self.pos..])
                        .map_err(|_| self.error("invalid UTF-8"))?;
                    let ch = rest.chars().next().expect("not at the end");
                    units.push(u32::from(ch));
                    self.pos += ch.len_utf8();
                }
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let digits = self
            .bytes
            .get(self.pos..self.pos + 4)
            .and_then(|d| std::str::from_utf8(d).ok())
            .and_then(|d| u32::from_str_radix(d, 16).ok())
            .ok_or_else(|| self.error("invalid \\u escape"))?;
        self.pos += 4;
        Ok(digits)
    }
}

/// A string as read: raw UTF-8 text without escapes, or decoded code points.
enum Token<'a> {
    Raw(&'a str),
    Decoded(Vec<u32>),
}

impl Token<'_> {
    /// Appends it as a quoted string, escaped like Python's `ensure_ascii=True`.
    fn push(&self, out: &mut Vec<u8>) {
        match self {
            Token::Raw(s) => python_json::push_str(out, s),
            Token::Decoded(points) => push_code_points(out, points),
        }
    }

    /// Python's string order: by code point. For raw UTF-8 that is byte order.
    fn cmp_code_points(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Token::Raw(a), Token::Raw(b)) => a.as_bytes().cmp(b.as_bytes()),
            _ => self.code_points().cmp(&other.code_points()),
        }
    }

    fn code_points(&self) -> Vec<u32> {
        match self {
            Token::Raw(s) => s.chars().map(u32::from).collect(),
            Token::Decoded(points) => points.clone(),
        }
    }
}

/// Appends a string given as code points, escaped like Python's `ensure_ascii=True`.
fn push_code_points(out: &mut Vec<u8>, points: &[u32]) {
    out.push(b'"');
    let mut run = String::with_capacity(points.len());
    for &cp in points {
        match char::from_u32(cp) {
            Some(ch) => run.push(ch),
            None => {
                // A lone surrogate: Python writes it as its own escape.
                python_json::push_str_body(out, &run);
                run.clear();
                python_json::push_u_escape(out, cp as u16);
            }
        }
    }
    python_json::push_str_body(out, &run);
    out.push(b'"');
}
