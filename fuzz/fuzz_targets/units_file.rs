//! Arbitrary bytes as the units file an evaluate command hands over (`TALLY_UNITS_FILE`), taken
//! as tally takes it: written to a file, opened by the hand-over rules (non-blocking, a regular
//! file, read up to a bound that the first byte picks, so the size refusal is reached too), and
//! checked against the metrics the sample printed. The printed metrics are the file's own sums
//! (so the sum check passes as often as it fails), nudged by the first byte. It must never
//! panic, and what it accepts must hold the rules of `docs/evaluate-protocol.md` §4.
#![no_main]

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use tally_runner::handover::{open_regular, read_bounded};
use tally_runner::units::parse_units;

/// One directory per fuzzing process, its file rewritten for each input (cheaper than a fresh
/// directory each time).
static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();

fn make_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

fuzz_target!(|data: &[u8]| {
    let (first, body) = match data {
        [first, rest @ ..] => (*first, rest),
        [] => (0, data),
    };
    let path = DIR.get_or_init(make_dir).path().join("units.json");
    std::fs::File::create(&path)
        .and_then(|mut f| f.write_all(body))
        .expect("the units file is written");
    let (file, meta) = open_regular(&path)
        .expect("a regular file is accepted")
        .expect("the file is there");
    assert_eq!(meta.len(), body.len() as u64);
    let max = u64::from(first) * 16;
    let bytes = match read_bounded(&file, max, "a units file") {
        Ok(bytes) => bytes,
        Err(_) => {
            assert!(body.len() as u64 > max);
            return;
        }
    };
    assert_eq!(bytes, body);
    let Ok(text) = std::str::from_utf8(&bytes) else {
        return;
    };
    let printed = printed_sums(text, first);
    if let Ok(units) = parse_units(text, &printed) {
        for (metric, values) in &units {
            assert!(printed.contains_key(metric), "{metric} was not printed");
            assert!(!values.is_empty(), "{metric} has no units");
            assert!(values.values().all(|v| v.is_finite()));
            let sum: f64 = values.values().sum();
            let value = printed[metric];
            assert!((sum - value).abs() <= 1e-3 * sum.abs().max(value.abs()));
        }
    }
});

/// Each metric's sum of numbers in `text`, when it is a units file's shape; the first byte's
/// low bit drops the first metric (a metric with units that was not printed), its second bit
/// moves every value by 1 %.
fn printed_sums(text: &str, first: u8) -> BTreeMap<String, f64> {
    let mut printed = BTreeMap::new();
    let Ok(serde_json::Value::Object(metrics)) = serde_json::from_str::<serde_json::Value>(text)
    else {
        return printed;
    };
    for (metric, units) in metrics.iter().skip(usize::from(first & 1)) {
        let sum: f64 = units
            .as_object()
            .map(|u| u.values().filter_map(serde_json::Value::as_f64).sum())
            .unwrap_or(1.0);
        let nudge = if first & 2 == 0 { 1.0 } else { 1.01 };
        printed.insert(metric.clone(), sum * nudge);
    }
    printed
}
