//! A structural splitter for one JSON document read from a stream: it finds where each value
//! ends without interpreting it, so the caller can hand complete values (one trace event at a
//! time) to `serde_json::from_slice`, which validates and borrows from them.
//!
//! serde_json's own `from_reader` reads byte by byte through `io::Read` and cannot borrow; on
//! trace files that costs about half the import time. The splitter keeps a window of the stream
//! (64 KiB, grown only when one value is larger), scans strings and brackets with plain loops, and
//! tracks the line and column of its position for error messages. It validates only the structure
//! between values (`{`, `:`, `,`, `]`...); the values themselves are validated by serde.

use std::io::{self, Read};

/// Where a problem is, and what it is.
#[derive(Debug)]
pub enum SplitError {
    /// The stream under the splitter failed (a broken gzip stream).
    Io(io::Error),
    /// Invalid JSON structure, or the end of input inside a value.
    Syntax {
        /// 1-based line.
        line: u64,
        /// 1-based column.
        column: u64,
        /// What was expected.
        message: String,
    },
}

/// A window over a byte stream with a cursor and its text position.
pub struct Splitter<R> {
    reader: R,
    buf: Vec<u8>,
    /// Cursor into `buf`.
    pos: usize,
    /// End of valid bytes in `buf`.
    end: usize,
    eof: bool,
    /// 1-based line of the cursor.
    line: u64,
    /// 1-based column of the cursor.
    column: u64,
}

const CHUNK: usize = 1 << 16;

impl<R: Read> Splitter<R> {
    /// A splitter at the start of `reader`.
    pub fn new(reader: R) -> Self {
        Self {
            reader,
            buf: vec![0; CHUNK],
            pos: 0,
            end: 0,
            eof: false,
            line: 1,
            column: 1,
        }
    }

    /// The cursor's line and column.
    pub fn position(&self) -> (u64, u64) {
        (self.line, self.column)
    }

    /// A syntax error at the cursor.
    pub fn error(&self, message: impl Into<String>) -> SplitError {
        SplitError::Syntax {
            line: self.line,
            column: self.column,
            message: message.into(),
        }
    }

    /// Reads more input so that at least `want` bytes are available from the cursor (or EOF).
    fn fill(&mut self, want: usize) -> Result<(), SplitError> {
        while self.end - self.pos < want && !self.eof {
            if self.pos > 0 {
                self.buf.copy_within(self.pos..self.end, 0);
                self.end -= self.pos;
                self.pos = 0;
            }
            if self.end == self.buf.len() {
                let grown = self.buf.len() * 2;
                self.buf.resize(grown, 0);
            }
            match self.reader.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(SplitError::Io(e)),
            }
        }
        Ok(())
    }

    /// The next byte after whitespace, without consuming it; `None` at the end of input.
    pub fn peek(&mut self) -> Result<Option<u8>, SplitError> {
        loop {
            self.fill(1)?;
            if self.pos == self.end {
                return Ok(None);
            }
            let byte = self.buf[self.pos];
            match byte {
                b' ' | b'\t' | b'\r' => {
                    self.pos += 1;
                    self.column += 1;
                }
                b'\n' => {
                    self.pos += 1;
                    self.line += 1;
                    self.column = 1;
                }
                _ => return Ok(Some(byte)),
            }
        }
    }

    /// Consumes `byte` (after whitespace) or fails with `expected`.
    pub fn expect(&mut self, byte: u8, expected: &str) -> Result<(), SplitError> {
        match self.peek()? {
            Some(b) if b == byte => {
                self.advance(1);
                Ok(())
            }
            Some(_) => Err(self.error(format!("expected {expected}"))),
            None => Err(self.error(format!("EOF while expecting {expected}"))),
        }
    }

    /// Moves the cursor over `n` available bytes, keeping line and column (in characters).
    fn advance(&mut self, n: usize) {
        let bytes = &self.buf[self.pos..self.pos + n];
        let tail = match memchr::memrchr(b'\n', bytes) {
            Some(last) => {
                self.line += memchr::memchr_iter(b'\n', bytes).count() as u64;
                self.column = 1;
                &bytes[last + 1..]
            }
            None => bytes,
        };
        self.column += tail.iter().filter(|&&b| b & 0xC0 != 0x80).count() as u64;
        self.pos += n;
    }

    /// Finds the next complete value (after whitespace) and returns its bytes; the cursor moves
    /// past it only when [`Self::consume`] is called with the returned length.
    pub fn value(&mut self) -> Result<(&[u8], (u64, u64)), SplitError> {
        let first = self
            .peek()?
            .ok_or_else(|| self.error("EOF while expecting a value"))?;
        let start_position = (self.line, self.column);
        let mut scanned = 0usize; // bytes of the value known so far, from pos
        let mut depth = 0usize;
        let mut in_string = false;
        let len = loop {
            if self.pos + scanned == self.end {
                let before = self.end - self.pos;
                self.fill(before + 1)?;
                if self.end - self.pos == before {
                    // End of input: a scalar may end here; anything else is cut short.
                    if depth == 0 && !in_string && scanned > 0 && first != b'"' {
                        break scanned;
                    }
                    return Err(SplitError::Syntax {
                        line: start_position.0,
                        column: start_position.1,
                        message: "EOF while parsing a value".into(),
                    });
                }
            }
            if in_string {
                // Jump to the next quote or backslash.
                let window = &self.buf[self.pos + scanned..self.end];
                match memchr::memchr2(b'"', b'\\', window) {
                    None => {
                        scanned += window.len();
                        continue;
                    }
                    Some(at) => scanned += at,
                }
                if self.pos + scanned + 1 >= self.end && self.buf[self.pos + scanned] == b'\\' {
                    // An escape at the window's end: read on before deciding.
                    let before = self.end - self.pos;
                    self.fill(before + 1)?;
                    if self.end - self.pos == before {
                        return Err(SplitError::Syntax {
                            line: start_position.0,
                            column: start_position.1,
                            message: "EOF while parsing a string".into(),
                        });
                    }
                }
                if self.buf[self.pos + scanned] == b'\\' {
                    scanned += 2;
                    continue;
                }
                scanned += 1;
                in_string = false;
                if depth == 0 {
                    break scanned;
                }
                continue;
            }
            let byte = self.buf[self.pos + scanned];
            scanned += 1;
            match byte {
                b'"' => in_string = true,
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    if depth == 0 {
                        // The end of the enclosing container: a scalar ended just before.
                        break scanned - 1;
                    }
                    depth -= 1;
                    if depth == 0 {
                        break scanned;
                    }
                }
                b',' | b' ' | b'\t' | b'\r' | b'\n' | b':' if depth == 0 => break scanned - 1,
                _ => {}
            }
        };
        if len == 0 {
            return Err(self.error("expected a value"));
        }
        Ok((&self.buf[self.pos..self.pos + len], start_position))
    }

    /// Moves past a value of `len` bytes returned by [`Self::value`].
    pub fn consume(&mut self, len: usize) {
        self.advance(len);
    }

    /// Fails unless only whitespace remains.
    pub fn finish(&mut self) -> Result<(), SplitError> {
        match self.peek()? {
            None => Ok(()),
            Some(_) => Err(self.error("trailing characters")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(text: &str) -> Vec<String> {
        let mut s = Splitter::new(text.as_bytes());
        s.expect(b'[', "[").unwrap();
        let mut out = Vec::new();
        loop {
            if s.peek().unwrap() == Some(b']') {
                break;
            }
            let (bytes, _) = s.value().unwrap();
            let owned = String::from_utf8(bytes.to_vec()).unwrap();
            let len = bytes.len();
            s.consume(len);
            out.push(owned);
            if s.peek().unwrap() == Some(b',') {
                s.expect(b',', ",").unwrap();
            }
        }
        out
    }

    #[test]
    fn splits_values_of_every_kind() {
        assert_eq!(
            values(r#"[1, -2.5e3 ,"a\"]b", {"x": [1, "}"]}, [[]], true,null]"#),
            [
                "1",
                "-2.5e3",
                r#""a\"]b""#,
                r#"{"x": [1, "}"]}"#,
                "[[]]",
                "true",
                "null"
            ]
        );
    }

    #[test]
    fn cut_values_are_errors_with_positions() {
        let mut s = Splitter::new(&b"\n\n  {\"a\": [1, 2"[..]);
        match s.value() {
            Err(SplitError::Syntax {
                line,
                column,
                message,
            }) => {
                assert_eq!((line, column), (3, 3));
                assert!(message.contains("EOF"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn values_larger_than_the_window_grow_it() {
        let big = format!("[\"{}\"]", "x".repeat(3 * CHUNK));
        assert_eq!(values(&big)[0].len(), 3 * CHUNK + 2);
    }
}
