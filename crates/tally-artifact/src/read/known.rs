//! Contexts this thread has already validated, kept by the exact text they were read from:
//! records of one producer share one `Arc<CorrelationContext>` and skip the context checks, and a
//! line whose embedded context is such a text is parsed without scanning it again.
//!
//! The skip works on the line's text before JSON parsing: the first `"context":` member whose
//! object text (up to its first `}`) is a known context is replaced by the placeholder `0`, the
//! shorter line is parsed, and the result is used only when the placeholder turns out to be the
//! value of the top-level `context` key (the last one, where keys repeat). Anything else (a
//! nested or quoted `"context":`, a context with a `}` inside a string, a JSON error) falls back
//! to parsing the line as written, so results and errors are the same either way. The cache is
//! per thread (no locking in the parallel parse) and bounded (cleared when full).

use std::cell::{Cell, RefCell};
use std::hash::Hasher;
use std::sync::{Arc, LazyLock};

use hashbrown::HashTable;
use memchr::memmem::Finder;

use tally_evidence::model::CorrelationContext;

use super::fields::{self, Checked};
use super::wire::{self, Key, Line};

const CAPACITY: usize = 256;

thread_local! {
    static CACHE: RefCell<HashTable<(Box<str>, Arc<CorrelationContext>)>> =
        const { RefCell::new(HashTable::new()) };
    static BUFFER: Cell<String> = const { Cell::new(String::new()) };
}

/// A hash of a context's text from its length and eight words spread over it: contexts differ
/// in a few values each, and hashing every byte of a long text would cost more than the lookup
/// it serves. Equal hashes are told apart by comparing the texts.
fn sampled_hash(text: &str) -> u64 {
    let bytes = text.as_bytes();
    let mut h = rustc_hash::FxHasher::default();
    h.write_usize(bytes.len());
    if bytes.len() >= 8 {
        let last = bytes.len() - 8;
        for k in 0..8 {
            let at = last * k / 7;
            let word: [u8; 8] = bytes[at..at + 8].try_into().expect("eight bytes");
            h.write_u64(u64::from_le_bytes(word));
        }
    } else {
        h.write(bytes);
    }
    h.finish()
}

/// The context read from `raw_object` (the text of an object), validated once per thread and
/// text.
pub(crate) fn shared_context(raw_object: &str, lenient: bool) -> Checked<Arc<CorrelationContext>> {
    if lenient {
        // Sentinel strings mean different things with and without the rewrite: do not mix.
        return fields::context(raw_object, lenient).map(Arc::new);
    }
    if let Some(hit) = known(raw_object) {
        return Ok(hit);
    }
    let ctx = Arc::new(fields::context(raw_object, lenient)?);
    CACHE.with_borrow_mut(|cache| {
        if cache.len() >= CAPACITY {
            cache.clear();
        }
        let entry = (Box::from(raw_object), Arc::clone(&ctx));
        cache.insert_unique(sampled_hash(raw_object), entry, |(text, _)| {
            sampled_hash(text)
        });
    });
    Ok(ctx)
}

/// The context validated on this thread from exactly the text `raw_object`, if any.
pub(crate) fn known(raw_object: &str) -> Option<Arc<CorrelationContext>> {
    CACHE.with_borrow(|cache| {
        cache
            .find(sampled_hash(raw_object), |(text, _)| **text == *raw_object)
            .map(|(_, ctx)| Arc::clone(ctx))
    })
}

static CONTEXT_MEMBER: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new("\"context\":"));

/// The placeholder put where a known context stood.
const PLACEHOLDER: &str = "0";

/// Parses `line` with its embedded context replaced by [`PLACEHOLDER`] when that context is
/// known on this thread, and hands the parsed line and the context to `then`. Returns `None`
/// (without calling `then`) when the skip does not apply; the caller then parses the line as
/// written.
pub(crate) fn with_known_context<T>(
    line: &str,
    then: impl FnOnce(Line<'_>, Arc<CorrelationContext>) -> T,
) -> Option<T> {
    let bytes = line.as_bytes();
    let member = CONTEXT_MEMBER.find(bytes)?;
    let mut start = member + "\"context\":".len();
    while bytes.get(start).is_some_and(|b| wire::is_json_space(*b)) {
        start += 1;
    }
    if bytes.get(start) != Some(&b'{') {
        return None;
    }
    let end = start + memchr::memchr(b'}', &bytes[start..])? + 1;
    let context = known(&line[start..end])?;
    let mut shorter = BUFFER.take();
    shorter.clear();
    shorter.push_str(&line[..start]);
    shorter.push_str(PLACEHOLDER);
    shorter.push_str(&line[end..]);
    let result = match wire::parse_line(&shorter) {
        Ok(parsed @ Line::Object(_)) if placeholder_at(&parsed, start) => {
            Some(then(parsed, context))
        }
        _ => None,
    };
    BUFFER.set(shorter);
    result
}

/// Whether the top-level `context` value of `parsed` is the placeholder put at `start`.
fn placeholder_at(parsed: &Line<'_>, start: usize) -> bool {
    match parsed {
        Line::Object(wire) => {
            wire.offset(Key::Context as usize) == Some(start)
                && wire.get(Key::Context) == Some(PLACEHOLDER)
        }
        Line::NotObject => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CTX: &str = r#"{"run_id":"r","session_id":"s","producer_id":"p","source":"x","clock_domain":"d","clock_kind":"wall","collection_mode":"active","provenance":"observed"}"#;

    fn skipped(line: &str) -> bool {
        with_known_context(line, |_, _| ()).is_some()
    }

    #[test]
    fn only_the_top_level_context_is_skipped() {
        let ctx = shared_context(CTX, false).unwrap();
        let line = format!(r#"{{"a":1,"context": {CTX},"b":2}}"#);
        let got = with_known_context(&line, |parsed, c| {
            let Line::Object(w) = parsed else { panic!() };
            assert_eq!(w.get(Key::Context), Some("0"));
            assert!(Arc::ptr_eq(&c, &ctx));
        });
        assert!(got.is_some());
        // Nested, repeated (the last one wins), quoted, unknown, or not an object: parsed as written.
        assert!(!skipped(&format!(
            r#"{{"metadata":{{"context":{CTX}}},"context":{CTX}}}"#
        )));
        assert!(!skipped(&format!(r#"{{"context":{CTX},"context":5}}"#)));
        assert!(!skipped(&format!(r#"{{"x":"\"context\":{CTX}"}}"#)));
        assert!(!skipped(&format!(
            r#"{{"context":{}}}"#,
            CTX.replace("wall", "device")
        )));
        assert!(!skipped(r#"{"context":[1]}"#));
        // A line that is not JSON after the context is parsed as written (for its own error).
        assert!(!skipped(&format!(r#"{{"context":{CTX},}}"#)));
    }
}
