//! The text of one Kineto trace file: header, `traceEvents` entries and footer, laid out as the
//! PyTorch profiler writes them.
//!
//! [`EventWriter`] appends entries to an open `traceEvents` array one at a time (so a file of any
//! size is written without being held), counting the bytes it has written. Times are integer
//! nanoseconds on the trace's clock and are written as microseconds with exactly three decimals,
//! so every nanosecond survives a reader that converts the decimal text exactly. Each entry uses
//! the profiler's own layout: two-space indentation, `ph`/`cat`/`name`/`pid`/`tid` on one line,
//! `ts`/`dur` on the next, then `args`.
//!
//! This module decides nothing about *which* events a trace holds or when (that is the parent
//! module's job); it only spells them.

use std::fmt;
use std::io::{self, Write};

/// A sink that counts the bytes written through it.
pub(crate) struct Counted<W> {
    inner: W,
    bytes: u64,
}

impl<W: Write> Counted<W> {
    pub(crate) fn new(inner: W) -> Self {
        Self { inner, bytes: 0 }
    }

    /// Bytes written so far.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    pub(crate) fn into_inner(self) -> W {
        self.inner
    }
}

impl<W: Write> Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Integer nanoseconds written as microseconds with three decimals (`1234.567`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Micros(pub i64);

impl fmt::Display for Micros {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let abs = self.0.unsigned_abs();
        write!(f, "{sign}{}.{:03}", abs / 1000, abs % 1000)
    }
}

/// A JSON string literal of `text`.
pub(crate) struct JsonStr<'a>(pub &'a str);

impl fmt::Display for JsonStr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"")?;
        if !self.0.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
            f.write_str(self.0)?;
            return f.write_str("\"");
        }
        for c in self.0.chars() {
            match c {
                '"' => f.write_str("\\\"")?,
                '\\' => f.write_str("\\\\")?,
                c if u32::from(c) < 0x20 => write!(f, "\\u{:04x}", u32::from(c))?,
                c => write!(f, "{c}")?,
            }
        }
        f.write_str("\"")
    }
}

/// Where a complete (`ph: "X"`) event sits: category, name, process, thread and times.
pub(crate) struct Slice<'a> {
    pub cat: &'a str,
    pub name: &'a str,
    pub pid: u64,
    pub tid: u64,
    pub ts_ns: i64,
    pub dur_ns: i64,
}

/// Appends `traceEvents` entries to one trace file.
pub(crate) struct EventWriter<W> {
    out: Counted<W>,
    entries: u64,
}

impl<W: Write> EventWriter<W> {
    /// Writes `header` (the fields before `traceEvents`, each line ending in `,\n`) and opens
    /// the array.
    pub(crate) fn start(inner: W, header: &str) -> io::Result<Self> {
        let mut out = Counted::new(inner);
        write!(out, "{{\n{header}  \"traceEvents\": [\n")?;
        Ok(Self { out, entries: 0 })
    }

    /// Bytes written so far.
    pub(crate) fn bytes(&self) -> u64 {
        self.out.bytes()
    }

    /// Entries written so far.
    pub(crate) fn entries(&self) -> u64 {
        self.entries
    }

    fn separator(&mut self) -> io::Result<()> {
        self.entries += 1;
        if self.entries > 1 {
            self.out.write_all(b",\n")?;
        }
        Ok(())
    }

    /// A complete event; `args` writes the body of its `args` object (may write nothing).
    pub(crate) fn complete(
        &mut self,
        slice: &Slice,
        args: impl FnOnce(&mut Counted<W>) -> io::Result<()>,
    ) -> io::Result<()> {
        self.separator()?;
        write!(
            self.out,
            "  {{\n    \"ph\": \"X\", \"cat\": \"{}\", \"name\": {}, \"pid\": {}, \"tid\": {},\n    \"ts\": {}, \"dur\": {},\n    \"args\": {{\n      ",
            slice.cat,
            JsonStr(slice.name),
            slice.pid,
            slice.tid,
            Micros(slice.ts_ns),
            Micros(slice.dur_ns),
        )?;
        args(&mut self.out)?;
        self.out.write_all(b"\n    }\n  }")
    }

    /// A flow event of the launch-to-GPU (`ac2g`) arrow: `start` on the launch call, otherwise
    /// the finish on the GPU event.
    pub(crate) fn flow(
        &mut self,
        start: bool,
        id: u64,
        pid: u64,
        tid: u64,
        ts_ns: i64,
    ) -> io::Result<()> {
        self.separator()?;
        let (ph, bp) = if start {
            ("s", "")
        } else {
            ("f", ", \"bp\": \"e\"")
        };
        write!(
            self.out,
            "  {{\n    \"ph\": \"{ph}\", \"id\": {id}, \"pid\": {pid}, \"tid\": {tid}, \"ts\": {},\n    \"cat\": \"ac2g\", \"name\": \"ac2g\"{bp}\n  }}",
            Micros(ts_ns)
        )
    }

    /// A metadata event (`process_name`, `thread_name`, ...) whose `args` has one `key`.
    pub(crate) fn metadata(
        &mut self,
        name: &str,
        pid: u64,
        tid: u64,
        ts_ns: i64,
        key: &str,
        value: &str,
    ) -> io::Result<()> {
        self.separator()?;
        write!(
            self.out,
            "  {{\n    \"name\": \"{name}\", \"ph\": \"M\", \"ts\": {}, \"pid\": {pid}, \"tid\": {tid},\n    \"args\": {{\n      \"{key}\": {value}\n    }}\n  }}",
            Micros(ts_ns)
        )
    }

    /// Any other entry, written verbatim (a JSON object, without separator or trailing comma).
    pub(crate) fn raw(&mut self, entry: &str) -> io::Result<()> {
        self.separator()?;
        self.out.write_all(entry.as_bytes())
    }

    /// Closes the array, writes `footer` (the fields after `traceEvents`, each preceded by
    /// `,\n`) and the closing brace; returns the sink and the total bytes written.
    pub(crate) fn finish(mut self, footer: &str) -> io::Result<(W, u64)> {
        write!(self.out, "\n  ]{footer}\n}}\n")?;
        let bytes = self.out.bytes();
        Ok((self.out.into_inner(), bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micros_keep_every_nanosecond() {
        assert_eq!(Micros(0).to_string(), "0.000");
        assert_eq!(Micros(7).to_string(), "0.007");
        assert_eq!(
            Micros(1_712_195_495_505_582_988).to_string(),
            "1712195495505582.988"
        );
        assert_eq!(Micros(-1_500).to_string(), "-1.500");
    }

    #[test]
    fn json_strings_are_escaped() {
        assert_eq!(JsonStr("a\"b\\c\n").to_string(), r#""a\"b\\c\u000a""#);
        assert_eq!(
            JsonStr("act_and_mul_kernel<silu>").to_string(),
            "\"act_and_mul_kernel<silu>\""
        );
    }

    #[test]
    fn entries_are_separated_and_the_document_closes() {
        let mut w = EventWriter::start(Vec::new(), "  \"schemaVersion\": 1,\n").unwrap();
        let slice = Slice {
            cat: "kernel",
            name: "k",
            pid: 0,
            tid: 7,
            ts_ns: 1_000_001,
            dur_ns: 2_500,
        };
        w.complete(&slice, |o| write!(o, "\"correlation\": 5"))
            .unwrap();
        w.flow(false, 5, 0, 7, 1_000_001).unwrap();
        let (bytes, n) = w.finish(",\n  \"displayTimeUnit\": \"ms\"").unwrap();
        assert_eq!(n, bytes.len() as u64);
        let value: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        let events = value["traceEvents"].as_array().unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!(events[0]["ts"].to_string(), "1000.001");
        assert_eq!(events[0]["dur"].to_string(), "2.5");
        assert_eq!(events[0]["args"]["correlation"], 5);
        assert_eq!(events[1]["bp"], "e");
        assert!(
            String::from_utf8(bytes)
                .unwrap()
                .contains("\"ts\": 1000.001, \"dur\": 2.500")
        );
    }
}
