//! Arbitrary bytes as the report of `tally measurement add --report FILE`: read from a file by
//! `tally_runner::report::read_report` (its bound and UTF-8 check), and its duration converted as
//! the engine converts it. It must never panic; what it accepts has only finite metrics.
#![no_main]

use std::io::Write;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use tally_runner::report::{MAX_REPORT_BYTES, parse_report, read_report};

/// One directory per fuzzing process, its file rewritten for each input (cheaper than a fresh
/// directory each time).
static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();

fn make_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

fuzz_target!(|data: &[u8]| {
    let path = DIR.get_or_init(make_dir).path().join("report.json");
    std::fs::File::create(&path)
        .and_then(|mut f| f.write_all(data))
        .expect("the report is written");
    let read = read_report(&path);
    match std::str::from_utf8(data) {
        // From a file or from the text, the same verdict.
        Ok(text) if data.len() as u64 <= MAX_REPORT_BYTES => {
            assert_eq!(read, parse_report(text));
        }
        _ => assert!(read.is_err()),
    }
    if let Ok(report) = read {
        assert!(report.metrics.values().all(|v| v.is_finite()));
        if let Some(seconds) = report.seconds {
            if let Some(ns) = tally_model::nanos_from_seconds(seconds) {
                assert!(seconds >= 0.0 && ns <= i64::MAX as u64);
            }
        }
    }
});
