//! The direct scan of a record line: the same [`RecordWire`] that `wire::parse_line` builds with
//! `serde_json`, found in one pass over the bytes, for lines of the usual shape. A top-level
//! `context` object whose text this thread has already validated is recognised by comparing
//! bytes and skipped whole (see `known`).
//!
//! The scan checks the JSON grammar exactly as `serde_json` does for what it accepts (it never
//! accepts a line `serde_json` refuses), and gives up — returning `None`, so that the caller
//! parses the line with `serde_json` — on anything else: a key with an escape, nesting deeper
//! than [`MAX_DEPTH`], a value that is not JSON (the `NaN` literals included), any syntax error.
//! Errors are therefore always reported by the `serde_json` path, word for word as before. It
//! never judges values (numbers of any size are only checked for their grammar), which is
//! `value`'s business.

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::Arc;

use tally_evidence::model::CorrelationContext;

use super::known;
use super::wire::{KEY_COUNT, Key, RecordWire};

/// Nesting the scan handles (the record itself is level 1); `serde_json` allows 128.
const MAX_DEPTH: u32 = 100;

/// What the scan found on a line.
pub(crate) struct Scanned<'a> {
    /// The record's keys.
    pub wire: RecordWire<'a>,
    /// The top-level `context` (its last occurrence), when it is a text this thread validated.
    pub known_context: Option<Arc<CorrelationContext>>,
    /// The reference values of the usual shape.
    pub plain_refs: PlainRefs,
}

/// Reference values of the usual shape — exactly the keys `producer_id` and `id` (either order),
/// each once, with string values without escapes — found by the scan: for each of the eight
/// reference keys (in `events::REF_KEYS` order, the last occurrence of a key deciding), where
/// the two texts are in the line. The caller then reads them without parsing the object again.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PlainRefs {
    /// `[producer_id start, end, id start, end]` per reference key.
    spans: [[u32; 4]; 8],
    present: u8,
}

impl PlainRefs {
    /// None found.
    pub(crate) const EMPTY: Self = Self {
        spans: [[0; 4]; 8],
        present: 0,
    };

    /// `(producer_id, id)` of reference key `slot`, when it had the usual shape on `line`.
    pub(crate) fn get<'a>(&self, slot: usize, line: &'a str) -> Option<(&'a str, &'a str)> {
        if self.present & (1 << slot) == 0 {
            return None;
        }
        let [a, b, c, d] = self.spans[slot].map(|x| x as usize);
        Some((line.get(a..b)?, line.get(c..d)?))
    }
}

/// The position of a reference key in `events::REF_KEYS`.
fn ref_slot(key: Key) -> Option<usize> {
    Some(match key {
        Key::RequestRef => 0,
        Key::AttemptRef => 1,
        Key::BackendRequestRef => 2,
        Key::IterationRef => 3,
        Key::BatchRef => 4,
        Key::StageRef => 5,
        Key::ActivityRef => 6,
        Key::CorrelationScope => 7,
        _ => return None,
    })
}

impl<'a> Scanned<'a> {
    /// Nothing found yet on `line`.
    pub(crate) fn new(line: &'a str) -> Self {
        Self {
            wire: RecordWire::new(line),
            known_context: None,
            plain_refs: PlainRefs::default(),
        }
    }
}

/// The keys of the record on `line`, its known context and its plain references, into `out`
/// (made by [`Scanned::new`] for this line: the scan builds in place, a record's keys are a few
/// hundred bytes). `None`: not a line of the usual shape (the caller parses it with
/// `serde_json`, which decides what it is; `out` is then meaningless). `line` is at most
/// [`super::wire::MAX_LINE_BYTES`] long.
pub(crate) fn record<'a>(line: &'a str, out: &mut Scanned<'a>) -> Option<()> {
    let mut scan = Scan {
        bytes: line.as_bytes(),
        at: 0,
    };
    let Scanned {
        wire,
        known_context,
        plain_refs,
    } = out;
    scan.space();
    scan.eat(b'{')?;
    scan.space();
    NEXT_KEY.with_borrow_mut(|next_key| {
        members(&mut scan, line, wire, known_context, plain_refs, next_key)
    })?;
    scan.space();
    (scan.at == scan.bytes.len()).then_some(())
}

/// The members of the record object, the scan just past its `{`, up to and past its `}`.
fn members<'a>(
    scan: &mut Scan<'a>,
    line: &'a str,
    wire: &mut RecordWire<'a>,
    known_context: &mut Option<Arc<CorrelationContext>>,
    plain_refs: &mut PlainRefs,
    next_key: &mut [u8; HISTORIES],
) -> Option<()> {
    if scan.peek()? == b'}' {
        scan.at += 1;
    } else {
        let mut position: u16 = 0;
        let mut history = 0usize;
        loop {
            let (start, end, key) = match Key::ALL
                .get(usize::from(next_key[history]))
                .filter(|k| scan.is_next(k.quoted()))
            {
                Some(&key) => {
                    let start = scan.at + 1;
                    scan.at += key.quoted().len();
                    (start, scan.at - 1, Some(key))
                }
                None => {
                    let (start, end) = scan.key()?;
                    let key = Key::parse(&line[start..end]);
                    next_key[history] = key.map_or(NO_KEY, |k| k as u8);
                    (start, end, key)
                }
            };
            history = after(history, key);
            let name = &line[start..end];
            scan.space();
            scan.eat(b':')?;
            scan.space();
            let value_start = scan.at;
            match key {
                Some(Key::Context) => {
                    *known_context = scan.known_context(line);
                    if known_context.is_none() {
                        scan.value(1)?;
                    }
                }
                Some(k) if let Some(slot) = ref_slot(k) => match scan.plain_ref() {
                    Some(spans) => {
                        plain_refs.spans[slot] = spans;
                        plain_refs.present |= 1 << slot;
                    }
                    None => {
                        plain_refs.present &= !(1 << slot);
                        scan.value(1)?;
                    }
                },
                _ => scan.value(1)?,
            }
            position = position.saturating_add(1);
            let len = (scan.at - value_start) as u32;
            wire.note(
                position,
                Cow::Borrowed(name),
                key.map(|k| k as usize),
                value_start as u32,
                len,
            );
            scan.space();
            match scan.next()? {
                b',' => scan.space(),
                b'}' => break,
                _ => return None,
            }
        }
    }
    Some(())
}

/// Slots of [`NEXT_KEY`]: one per hashed history of keys (a power of two).
const HISTORIES: usize = 4096;

/// The history after `key` (`None`: a key tally does not know) followed `history`; a record's
/// history starts at 0. The keys read so far name a record's type (each type's keys come in
/// one order), so the key that comes next is known from them even where records of several
/// types are interleaved; two histories that share a slot only cost a wrong guess.
fn after(history: usize, key: Option<Key>) -> usize {
    let id = key.map_or(KEY_COUNT, |k| k as usize) + 1;
    (history.wrapping_mul(0x9e37_79b9) ^ id.wrapping_mul(0x85eb_ca6b)) >> 7 & (HISTORIES - 1)
}

/// No known key follows.
const NO_KEY: u8 = u8::MAX;

thread_local! {
    /// For each history of keys (see [`after`]), the key that followed it the last time on this
    /// thread: writers put keys in a fixed order per event type, so the next key is usually
    /// known, and checking that it is there costs less than reading and looking up its name.
    static NEXT_KEY: RefCell<[u8; HISTORIES]> = const { RefCell::new([NO_KEY; HISTORIES]) };
}

/// A position in a line's bytes.
struct Scan<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Scan<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.at += 1;
        Some(b)
    }

    /// Moves past `b`, which must be next (on `None` the position does not matter: the scan
    /// is abandoned).
    fn eat(&mut self, b: u8) -> Option<()> {
        (self.next()? == b).then_some(())
    }

    /// Whether `expected` (a quoted key name, at most 32 bytes) comes next.
    fn is_next(&self, expected: &[u8]) -> bool {
        let Some(here) = self.bytes.get(self.at..self.at + expected.len()) else {
            return false;
        };
        let n = expected.len();
        if n < 8 {
            return here.iter().zip(expected).all(|(a, b)| a == b);
        }
        // Eight-byte words from the start, and one ending at the end (overlapping the one
        // before it): every byte is compared, in at most five word comparisons.
        let word = |s: &[u8], at: usize| u64::from_le_bytes(s[at..at + 8].try_into().expect("8"));
        (0..n - 8)
            .step_by(8)
            .all(|at| word(here, at) == word(expected, at))
            && word(here, n - 8) == word(expected, n - 8)
    }

    /// JSON whitespace (what `serde_json` and Python's `json` skip).
    fn space(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    /// A key without escapes: the byte range of its text.
    fn key(&mut self) -> Option<(usize, usize)> {
        self.eat(b'"')?;
        let start = self.at;
        loop {
            match self.next()? {
                b'"' => return Some((start, self.at - 1)),
                b'\\' | 0..0x20 => return None,
                _ => {}
            }
        }
    }

    /// At a `context` value: when the object text up to its first `}` is a context this thread
    /// has validated, that text is the whole value (a valid JSON object ends where it ends), and
    /// the scan moves past it.
    fn known_context(&mut self, line: &str) -> Option<Arc<CorrelationContext>> {
        if self.peek()? != b'{' {
            return None;
        }
        let end = self.at + memchr::memchr(b'}', &self.bytes[self.at..])? + 1;
        let context = known::known(&line[self.at..end])?;
        self.at = end;
        Some(context)
    }

    /// A reference object of the usual shape (see [`PlainRefs`]): the spans of its `producer_id`
    /// and `id` texts, the scan moved past it. `None` (the position unchanged) for anything
    /// else, which the caller scans as any value.
    fn plain_ref(&mut self) -> Option<[u32; 4]> {
        let start = self.at;
        let found = self.plain_ref_members();
        if found.is_none() {
            self.at = start;
        }
        found
    }

    fn plain_ref_members(&mut self) -> Option<[u32; 4]> {
        self.eat(b'{')?;
        let (mut producer, mut id) = (None, None);
        for close in [b',', b'}'] {
            self.space();
            let slot = if self.is_next(b"\"id\"") {
                self.at += 4;
                &mut id
            } else if self.is_next(b"\"producer_id\"") {
                self.at += 13;
                &mut producer
            } else {
                return None;
            };
            self.space();
            self.eat(b':')?;
            self.space();
            self.eat(b'"')?;
            let text_start = self.at;
            loop {
                match self.next()? {
                    b'"' => break,
                    b'\\' | 0..0x20 => return None,
                    _ => {}
                }
            }
            let span = (text_start as u32, (self.at - 1) as u32);
            if slot.replace(span).is_some() {
                return None;
            }
            self.space();
            self.eat(close)?;
        }
        let ((a, b), (c, d)) = (producer?, id?);
        Some([a, b, c, d])
    }

    /// Any JSON value, checked as `serde_json` checks a value it ignores.
    fn value(&mut self, depth: u32) -> Option<()> {
        match self.peek()? {
            b'"' => self.string(),
            b'{' => self.object(depth + 1),
            b'[' => self.array(depth + 1),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.at + word.len();
        (self.bytes.get(self.at..end)? == word).then(|| self.at = end)
    }

    /// A string: no control characters; escapes are `\` and one of `"\/bfnrt`, or `\u` and four
    /// hex digits (whatever code unit they name, as `serde_json` ignores it).
    fn string(&mut self) -> Option<()> {
        self.at += 1;
        loop {
            self.skip_plain();
            match self.next()? {
                b'"' => return Some(()),
                b'\\' => match self.next()? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                    b'u' => {
                        let hex = self.bytes.get(self.at..self.at + 4)?;
                        if !hex.iter().all(u8::is_ascii_hexdigit) {
                            return None;
                        }
                        self.at += 4;
                    }
                    _ => return None,
                },
                _ => return None,
            }
        }
    }

    /// Moves past string bytes that need no attention: anything but `"`, `\` and control
    /// characters, eight bytes at a time where it can.
    fn skip_plain(&mut self) {
        const ONES: u64 = 0x0101_0101_0101_0101;
        const HIGHS: u64 = 0x8080_8080_8080_8080;
        // A byte of `x` is zero exactly when the matching bit of this is set (exact for the
        // lowest zero byte, and any set bit means some byte is zero).
        let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
        while let Some(chunk) = self.bytes.get(self.at..self.at + 8) {
            let x = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
            let quote = zero(x ^ (ONES * u64::from(b'"')));
            let backslash = zero(x ^ (ONES * u64::from(b'\\')));
            // Bytes below 0x20 (ASCII only: bytes of 0x80 and above are masked out).
            let control = x.wrapping_sub(ONES * 0x20) & !x & HIGHS;
            if quote | backslash | control != 0 {
                break;
            }
            self.at += 8;
        }
        while let Some(b) = self.peek() {
            if b == b'"' || b == b'\\' || b < 0x20 {
                return;
            }
            self.at += 1;
        }
    }

    /// A number, by the grammar only: `-`? (`0` | `[1-9][0-9]*`) (`.` digits)? (`[eE][+-]?`
    /// digits)?
    fn number(&mut self) -> Option<()> {
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        match self.next()? {
            b'0' => {}
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            self.some_digits()?;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.at += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.at += 1;
            }
            self.some_digits()?;
        }
        // `serde_json` refuses a digit right after a leading zero; so does the caller, which
        // then expects `,`, `}` or `]`.
        Some(())
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.at += 1;
        }
    }

    fn some_digits(&mut self) -> Option<()> {
        let start = self.at;
        self.digits();
        (self.at > start).then_some(())
    }

    fn array(&mut self, depth: u32) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.at += 1;
        self.space();
        if self.peek()? == b']' {
            self.at += 1;
            return Some(());
        }
        loop {
            self.value(depth)?;
            self.space();
            match self.next()? {
                b',' => self.space(),
                b']' => return Some(()),
                _ => return None,
            }
        }
    }

    fn object(&mut self, depth: u32) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.at += 1;
        self.space();
        if self.peek()? == b'}' {
            self.at += 1;
            return Some(());
        }
        loop {
            if self.peek()? != b'"' {
                return None;
            }
            self.string()?;
            self.space();
            self.eat(b':')?;
            self.space();
            self.value(depth)?;
            self.space();
            match self.next()? {
                b',' => self.space(),
                b'}' => return Some(()),
                _ => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests;
