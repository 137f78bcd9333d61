//! All terminal output goes through here (uv's `Printer` idea): results on standard output,
//! diagnostics on standard error, one decision about where each kind of text goes.
//!
//! Writes use explicit handles so a closed pipe surfaces as an `io::Error` (which `main` turns
//! into a quiet exit) instead of a panic inside `println!`.

use std::io::{self, Write};

/// Writes a result text to standard output.
pub fn out(text: &str) -> io::Result<()> {
    let mut stdout = io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()
}

/// Writes a result line (adds the newline) to standard output.
pub fn out_line(text: &str) -> io::Result<()> {
    let mut stdout = io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.write_all(b"\n")?;
    stdout.flush()
}

/// Writes a value as one line of compact JSON to standard output, streamed through a buffer
/// (`tally status --json` on a large campaign is tens of megabytes: no copy of it in memory).
pub fn out_json_line(value: &impl serde::Serialize) -> io::Result<()> {
    let mut stdout = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    serde_json::to_writer(&mut stdout, value)?;
    stdout.write_all(b"\n")?;
    stdout.flush()
}

/// Writes `error: <message>` on standard error.
pub fn error(message: &str) {
    let mut stderr = io::stderr().lock();
    let _ = writeln!(stderr, "error: {message}");
}

/// Writes a note for the user on standard error (progress, hints); never mixed into results.
#[allow(dead_code)]
pub fn note(message: &str) {
    let mut stderr = io::stderr().lock();
    let _ = writeln!(stderr, "{message}");
}
