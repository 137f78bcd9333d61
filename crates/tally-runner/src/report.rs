//! The report of a measurement taken outside `tally run` (`tally measurement add ID --report
//! FILE`, `docs/campaign.md`): `{"metrics": {"name": number}, "seconds": number|null, "error":
//! null|"text", "evidence": null|"path"}`, read and checked.
//!
//! Owns: the report's shape (unknown keys refused, every metric a finite number) and its bound: a
//! report holds at most [`MAX_REPORT_BYTES`], and reading stops one byte past it whatever the
//! file is (`/dev/zero`, a pipe), so an endless input costs bounded memory. Every reason is one
//! clause starting `line N: ` when a place in the text is to blame; the caller adds the file.
//!
//! Deliberately absent: what the values mean (the engine records the measurement and checks
//! `seconds`; the binary resolves and accounts the evidence path).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The most a report may hold: 1 MiB (a report is a few metrics and a sentence).
pub const MAX_REPORT_BYTES: u64 = 1 << 20;

/// The shape a report is refused against, as its reasons say it.
const SHAPE: &str = "{\"metrics\": {\"name\": number}, \"seconds\": number|null, \"error\": \
                     null|\"text\", \"evidence\": null|\"path\"}";

/// A measurement report, checked.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Report {
    /// Metric name → value, every one finite.
    pub metrics: BTreeMap<String, f64>,
    /// The measurement's duration in seconds, when the report gives one (the engine checks it).
    #[serde(default)]
    pub seconds: Option<f64>,
    /// Why the measurement failed, for a failed one.
    #[serde(default)]
    pub error: Option<String>,
    /// The evidence artifact behind it, relative to the report's directory.
    #[serde(default)]
    pub evidence: Option<PathBuf>,
}

/// Parses and checks a report's text. `Err` is one clause: ``line 3: unknown field `x`, ...;
/// expected {...}`` or ``metrics.tok_s = NaN: expected a finite number``.
pub fn parse_report(text: &str) -> Result<Report, String> {
    let report: Report = serde_json::from_str(text)
        .map_err(|err| format!("line {}: {err}; expected {SHAPE}", err.line()))?;
    if let Some((metric, value)) = report.metrics.iter().find(|(_, v)| !v.is_finite()) {
        return Err(format!(
            "metrics.{metric} = {value}: expected a finite number"
        ));
    }
    Ok(report)
}

/// Reads the report at `path` (any file a command line may name: a pipe from `<(...)` too) and
/// parses it. A report that holds more than [`MAX_REPORT_BYTES`] is refused at the line where
/// it passes the bound, after reading one byte past it.
pub fn read_report(path: &Path) -> Result<Report, String> {
    let file =
        std::fs::File::open(path).map_err(|err| format!("cannot read the report ({err})"))?;
    let mut bytes = Vec::new();
    file.take(MAX_REPORT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| format!("cannot read the report ({err})"))?;
    if bytes.len() as u64 > MAX_REPORT_BYTES {
        let line = 1 + newlines(&bytes[..MAX_REPORT_BYTES as usize]);
        return Err(format!(
            "line {line}: the report holds more than 1 MiB ({MAX_REPORT_BYTES} bytes), the most \
             a report may hold; expected {SHAPE}"
        ));
    }
    let text = String::from_utf8(bytes).map_err(|err| {
        let at = err.utf8_error().valid_up_to();
        let line = 1 + newlines(&err.as_bytes()[..at]);
        format!("line {line}: the report is not UTF-8 text (invalid byte at offset {at})")
    })?;
    parse_report(&text)
}

fn newlines(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b == b'\n').count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_reads_with_its_defaults() {
        let report = parse_report(r#"{"metrics": {"tok_s": 1.5}}"#).unwrap();
        assert_eq!(report.metrics["tok_s"], 1.5);
        assert_eq!(
            (report.seconds, report.error, report.evidence),
            (None, None, None)
        );
        let report = parse_report(
            r#"{"metrics": {}, "seconds": 2, "error": "boom", "evidence": "e.jsonl"}"#,
        )
        .unwrap();
        assert_eq!(report.seconds, Some(2.0));
        assert_eq!(report.evidence, Some(PathBuf::from("e.jsonl")));
    }

    #[test]
    fn each_refusal_says_where_and_what_was_expected() {
        let err = parse_report("{\n\"metrics\": {},\n\"x\": 1}").unwrap_err();
        assert!(err.starts_with("line 3: unknown field `x`"), "{err}");
        assert!(err.ends_with(&format!("expected {SHAPE}")), "{err}");
        // JSON has no infinity, and a number beyond `f64` is refused where it is.
        let err = parse_report(r#"{"metrics": {"a": 1e999}}"#).unwrap_err();
        assert!(err.starts_with("line 1: number out of range"), "{err}");
    }

    #[test]
    fn an_endless_report_is_refused_after_the_bound() {
        let err = read_report(Path::new("/dev/zero")).unwrap_err();
        assert_eq!(
            err,
            format!(
                "line 1: the report holds more than 1 MiB (1048576 bytes), the most a report \
                 may hold; expected {SHAPE}"
            )
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        std::fs::write(&path, b"{\n\"error\": \"\xff\"}").unwrap();
        assert_eq!(
            read_report(&path).unwrap_err(),
            "line 2: the report is not UTF-8 text (invalid byte at offset 12)"
        );
    }
}
