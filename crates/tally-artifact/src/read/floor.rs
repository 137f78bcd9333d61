//! The floor under the reader's time: every line of an input parsed as JSON — the reader's first
//! step, with the same scanner and the same `serde_json` fallback — on all cores, and nothing
//! more (no field is read, no record built, no context remembered).
//!
//! It exists to measure how close reading comes to parsing (`tally trace parse-only
//! --json-only`); it decides nothing about records.

use rayon::prelude::*;

use tally_evidence::error::{Origin, Result};
use tally_evidence::model::Text;

use super::context::located;
use super::decode::with_json;
use super::fields::{Checked, Fault};
use super::input::{Source, read_error};
use super::lines::{self, LineSpan, split_lines};

/// Whether the line holds a JSON value (`false`: a blank line).
fn json_line(bytes: &[u8], offset: u64) -> Checked<bool> {
    if bytes.len() > super::MAX_LINE_BYTES {
        return Err(lines::too_long());
    }
    let text = lines::utf8(bytes).map_err(|e| {
        Fault::Value(format!(
            "invalid UTF-8 at byte offset {}: the artifact must be UTF-8 text",
            offset + e.valid_up_to() as u64
        ))
    })?;
    if lines::is_blank(text) {
        return Ok(false);
    }
    with_json(text, |_, _| Ok(()))?;
    Ok(true)
}

/// The number of non-blank lines of `source`, each parsed as JSON; the first line (in file
/// order) that is not JSON is the error.
pub(crate) fn json_lines(mut source: Source<'_>, name: &Text) -> Result<u64> {
    let (mut line, mut offset, mut values) = (1u64, 0u64, 0u64);
    let mut spans: Vec<LineSpan> = Vec::new();
    while let Some(chunk) = source.next_chunk().map_err(|e| read_error(name, line, e))? {
        chunk.prefault();
        spans.clear();
        split_lines(&chunk, &mut spans);
        let (count, failure) = spans
            .par_iter()
            .enumerate()
            .with_min_len(64)
            .map(
                |(i, s)| match json_line(&chunk[s.start..s.end], offset + s.start as u64) {
                    Ok(value) => (u64::from(value), None),
                    Err(fault) => (0, Some((i, fault))),
                },
            )
            .reduce(
                || (0, None),
                |(a, x), (b, y)| {
                    let first = match (x, y) {
                        (Some(x), Some(y)) => Some(if x.0 <= y.0 { x } else { y }),
                        (x, y) => x.or(y),
                    };
                    (a + b, first)
                },
            );
        if let Some((i, fault)) = failure {
            return Err(located(fault, Origin::at(name.clone(), line + i as u64)));
        }
        values += count;
        line += spans.len() as u64;
        offset += chunk.len() as u64;
    }
    Ok(values)
}
