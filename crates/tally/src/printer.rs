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

/// Writes a long result produced piecewise (`tally status --json` on a large campaign is tens
/// of megabytes) to standard output through a buffer, with no copy of it in memory, then a
/// newline.
pub fn out_streamed(
    write: impl FnOnce(&mut io::BufWriter<io::StdoutLock<'static>>) -> io::Result<()>,
) -> io::Result<()> {
    let mut stdout = io::BufWriter::with_capacity(1 << 16, io::stdout().lock());
    write(&mut stdout)?;
    stdout.write_all(b"\n")?;
    stdout.flush()
}

/// Writes `error: <message>` on standard error.
pub fn error(message: &str) {
    let mut stderr = io::stderr().lock();
    let _ = writeln!(stderr, "error: {message}");
}

/// Writes a note for the user on standard error (progress, hints); never mixed into results.
pub fn note(message: &str) {
    let mut stderr = io::stderr().lock();
    let _ = writeln!(stderr, "{message}");
}
