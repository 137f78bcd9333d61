//! The physical layer of `docs/evidence.md#physical-layer`: where lines end, which lines are blank, and where a
//! batch of bytes may be cut.
//!
//! A line ends at `\n`, at `\r\n` or at a lone `\r` (Python's universal newlines), line numbers are
//! 1-based and count every physical line, and a line whose text is only whitespace in Python's
//! `str.strip()` sense is skipped. This module works on bytes and never decodes JSON; it does not
//! check UTF-8 either (the line decoder does, per line, so the error can name the line).

use memchr::{memchr2, memrchr2};

use super::MAX_LINE_BYTES;
use super::fields::Fault;

/// The bytes a window may hold without a usable line end before its first line is known to be
/// longer than [`MAX_LINE_BYTES`]: the line, and a `\r` at the window's end whose `\n` may
/// follow. A window of this many bytes without a cut ([`cut_at_line_end`]) starts with a line
/// that is too long.
pub(crate) const LONGEST_WINDOW: usize = MAX_LINE_BYTES + 2;

/// Why a line longer than [`MAX_LINE_BYTES`] is refused (a value the reference would read, but
/// tally will not hold: reported as out of range, with the line).
pub(crate) fn too_long() -> Fault {
    Fault::Range(format!(
        "the line is longer than {} MiB ({MAX_LINE_BYTES} bytes), the longest line tally reads \
         (one record per line); is this a JSONL evidence artifact?",
        MAX_LINE_BYTES >> 20
    ))
}

/// One physical line inside a batch: the byte range of its text, terminator excluded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LineSpan {
    /// First byte of the line.
    pub start: usize,
    /// One past its last byte (before the terminator).
    pub end: usize,
}

/// Appends the physical lines of `bytes` to `out`, in order. A last line without a terminator
/// counts when it is not empty; a terminator at the very end starts no further line (Python's
/// file iteration gives `"a\n"` one line, `"a\n\n"` two).
///
/// `bytes` must not split a `\r\n` pair: batches are cut with [`cut_at_line_end`].
pub(crate) fn split_lines(bytes: &[u8], out: &mut Vec<LineSpan>) {
    let mut start = 0;
    while start < bytes.len() {
        match memchr2(b'\n', b'\r', &bytes[start..]) {
            Some(rel) => {
                let end = start + rel;
                out.push(LineSpan { start, end });
                start = if bytes[end] == b'\r' && bytes.get(end + 1) == Some(&b'\n') {
                    end + 2
                } else {
                    end + 1
                };
            }
            None => {
                out.push(LineSpan {
                    start,
                    end: bytes.len(),
                });
                break;
            }
        }
    }
}

/// Where a window of bytes may be cut so that the part before the cut holds whole lines only:
/// just after the last line terminator whose meaning is known inside the window. A `\r` in the
/// window's last byte is not used, because a `\n` may follow it outside the window (the batch
/// then ends at the terminator before it).
///
/// Returns `None` when no such terminator exists (the window holds part of one long line; the
/// caller must look at more bytes). At the end of the input (`at_end`) the whole window is taken.
pub(crate) fn cut_at_line_end(window: &[u8], at_end: bool) -> Option<usize> {
    if at_end {
        return Some(window.len());
    }
    let last = memrchr2(b'\n', b'\r', window)?;
    if window[last] == b'\r' && last + 1 == window.len() {
        // A `\n` may follow outside the window: end the batch at the terminator before.
        return memrchr2(b'\n', b'\r', &window[..last]).map(|prev| prev + 1);
    }
    // The terminator is `\n`, or a `\r` whose next byte is known and (being after the last
    // terminator) is not `\n`.
    Some(last + 1)
}

/// Whether `c` is whitespace for Python's `str.isspace()` (hence skipped by `str.strip()`):
/// Rust's `char::is_whitespace` plus the ASCII separators `\x1c`–`\x1f`.
pub(crate) fn is_python_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// The line as text: the SIMD check (several times faster on long ASCII lines), and the
/// standard one only on failure, to say where the bad byte is (`valid_up_to`).
pub(crate) fn utf8(line: &[u8]) -> Result<&str, std::str::Utf8Error> {
    simdutf8::basic::from_utf8(line).or_else(|_| std::str::from_utf8(line))
}

/// Whether a line holds only whitespace (Python `not line.strip()`), the empty line included.
pub(crate) fn is_blank(line: &str) -> bool {
    // Fast path: records start with `{`; whitespace is almost always ASCII.
    for (i, &b) in line.as_bytes().iter().enumerate() {
        match b {
            b' ' | b'\t' | 0x0b | 0x0c | 0x1c..=0x1f => {}
            0x80.. => return line[i..].chars().all(is_python_space),
            _ => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<&str> {
        let mut spans = Vec::new();
        split_lines(text.as_bytes(), &mut spans);
        spans.iter().map(|s| &text[s.start..s.end]).collect()
    }

    #[test]
    fn universal_newlines() {
        assert_eq!(lines("a\nb\r\nc\rd"), ["a", "b", "c", "d"]);
        assert_eq!(lines("a\n"), ["a"]);
        assert_eq!(lines("a\n\n"), ["a", ""]);
        assert_eq!(lines("\r\r\n\n"), ["", "", ""]);
        assert_eq!(lines(""), Vec::<&str>::new());
        assert_eq!(lines("\r"), [""]);
        assert_eq!(lines("x\n\ry"), ["x", "", "y"]);
    }

    #[test]
    fn cuts_keep_crlf_together() {
        assert_eq!(cut_at_line_end(b"ab\r\ncd", false), Some(4));
        assert_eq!(cut_at_line_end(b"ab\rcd", false), Some(3));
        // The `\r` is the last byte: its meaning is unknown, so cut before its line.
        assert_eq!(cut_at_line_end(b"ab\ncd\r", false), Some(3));
        assert_eq!(cut_at_line_end(b"ab\r\n", false), Some(4));
        assert_eq!(cut_at_line_end(b"ab\n", false), Some(3));
        assert_eq!(cut_at_line_end(b"abcd", false), None);
        assert_eq!(cut_at_line_end(b"", false), None);
        assert_eq!(cut_at_line_end(b"\r", false), None);
        assert_eq!(cut_at_line_end(b"\r\r", false), Some(1));
        assert_eq!(cut_at_line_end(b"abcd", true), Some(4));
    }

    #[test]
    fn python_whitespace() {
        assert!(is_blank(""));
        assert!(is_blank(" \t\x0b\x0c\x1c\x1d\x1e\x1f"));
        assert!(is_blank(
            "\u{85}\u{a0}\u{1680}\u{2000}\u{200a}\u{2028}\u{2029}\u{202f}\u{205f}\u{3000}"
        ));
        assert!(!is_blank(" {}"));
        assert!(!is_blank("\u{feff}"));
        assert!(!is_blank("\u{200b}"));
        assert!(!is_blank("\u{180e}"));
        assert!(!is_blank("\x00"));
    }
}
