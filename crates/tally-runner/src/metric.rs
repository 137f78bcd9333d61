//! The `METRIC <name>=<value>` stdout grammar (`docs/campaign.md#one-sample`).
//!
//! Owns: recognising one line ([`parse_metric_line`]) and scanning a byte stream as it arrives
//! from a pipe ([`MetricScanner`]), with later lines overriding earlier ones. The grammar, exactly:
//!
//! * the line starts with the word `METRIC` and exactly one space (no leading whitespace; the
//!   word is case-sensitive);
//! * the rest is split at its first `=`: the name is before it, the value after it;
//! * the name is non-empty and has no whitespace (so `METRIC  a=1`, two spaces, is not a metric
//!   line); anything else is allowed in it (`tok/s`, `p50_ms`, `a.b`);
//! * the value, with surrounding whitespace (trailing spaces, a `\r` from CRLF output) trimmed,
//!   is parsed as a decimal float (`1`, `-2.5`, `1e3`, `.5`); a value that does not parse or is
//!   not finite (`nan`, `inf`) makes the line ignored;
//! * lines that are not valid UTF-8, or longer than [`MAX_LINE_BYTES`], are ignored.
//!
//! Deliberately absent: knowing which metrics are required (that is the classification in
//! [`crate::outcome`]) and any I/O.

use std::collections::BTreeMap;

/// Lines longer than this are not metric lines; the scanner stops buffering them.
pub const MAX_LINE_BYTES: usize = 4096;

/// Parses one line (without its `\n`) of the evaluate command's stdout. `None` when it is not a
/// well-formed metric line.
pub fn parse_metric_line(line: &str) -> Option<(&str, f64)> {
    let rest = line.strip_prefix("METRIC ")?;
    let (name, value) = rest.split_once('=')?;
    if name.is_empty() || name.chars().any(char::is_whitespace) {
        return None;
    }
    let value: f64 = value.trim().parse().ok()?;
    value.is_finite().then_some((name, value))
}

/// Scans stdout bytes as they arrive, keeping the last value printed for each metric name.
#[derive(Debug, Default, Clone)]
pub struct MetricScanner {
    line: Vec<u8>,
    overlong: bool,
    metrics: BTreeMap<String, f64>,
}

impl MetricScanner {
    /// An empty scanner.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds a chunk of output; chunks may split lines anywhere.
    pub fn feed(&mut self, mut bytes: &[u8]) {
        while let Some(end) = bytes.iter().position(|&b| b == b'\n') {
            self.push_partial(&bytes[..end]);
            self.end_line();
            bytes = &bytes[end + 1..];
        }
        self.push_partial(bytes);
    }

    /// The metrics seen so far, including a last line that has no `\n` yet (output that ends
    /// without a newline still counts).
    pub fn metrics(&self) -> BTreeMap<String, f64> {
        let mut metrics = self.metrics.clone();
        if let Some((name, value)) = self.pending_line() {
            metrics.insert(name.to_owned(), value);
        }
        metrics
    }

    fn push_partial(&mut self, bytes: &[u8]) {
        if self.overlong {
            return;
        }
        if self.line.len() + bytes.len() > MAX_LINE_BYTES {
            self.overlong = true;
            self.line.clear();
        } else {
            self.line.extend_from_slice(bytes);
        }
    }

    fn pending_line(&self) -> Option<(&str, f64)> {
        if self.overlong {
            return None;
        }
        parse_metric_line(std::str::from_utf8(&self.line).ok()?)
    }

    fn end_line(&mut self) {
        if let Some((name, value)) = self.pending_line() {
            self.metrics.insert(name.to_owned(), value);
        }
        self.line.clear();
        self.overlong = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_grammar_edge_cases() {
        assert_eq!(
            parse_metric_line("METRIC tok_s=1234.5"),
            Some(("tok_s", 1234.5))
        );
        assert_eq!(parse_metric_line("METRIC a=1e3"), Some(("a", 1000.0)));
        assert_eq!(parse_metric_line("METRIC a=-2"), Some(("a", -2.0)));
        assert_eq!(parse_metric_line("METRIC a=.5"), Some(("a", 0.5)));
        // Split at the first `=`: the value `b=1` is not a number.
        assert_eq!(parse_metric_line("METRIC a=b=1"), None);
        assert_eq!(parse_metric_line("METRIC =1"), None);
        assert_eq!(parse_metric_line("METRIC a=nan"), None);
        assert_eq!(parse_metric_line("METRIC a=inf"), None);
        assert_eq!(parse_metric_line("METRIC a=-inf"), None);
        assert_eq!(parse_metric_line("METRIC a=1e400"), None);
        assert_eq!(parse_metric_line("METRIC a="), None);
        assert_eq!(parse_metric_line("METRIC a"), None);
        // Exactly one space after the word; names have no whitespace.
        assert_eq!(parse_metric_line("METRIC  a=1"), None);
        assert_eq!(parse_metric_line("METRIC a b=1"), None);
        assert_eq!(parse_metric_line("METRIC a =1"), None);
        assert_eq!(parse_metric_line("METRIC\ta=1"), None);
        assert_eq!(parse_metric_line(" METRIC a=1"), None);
        assert_eq!(parse_metric_line("metric a=1"), None);
        assert_eq!(parse_metric_line("METRICS a=1"), None);
        // Trailing spaces and CR around the value are trimmed.
        assert_eq!(parse_metric_line("METRIC a=1  "), Some(("a", 1.0)));
        assert_eq!(parse_metric_line("METRIC a=1\r"), Some(("a", 1.0)));
        assert_eq!(parse_metric_line("METRIC a= 2"), Some(("a", 2.0)));
        assert_eq!(parse_metric_line("METRIC a=1 ms"), None);
        assert_eq!(parse_metric_line("METRIC a=0x10"), None);
        assert_eq!(parse_metric_line("METRIC p50/ms=3"), Some(("p50/ms", 3.0)));
    }

    #[test]
    fn later_lines_override_and_other_lines_are_ignored() {
        let mut scanner = MetricScanner::new();
        scanner.feed(b"warming up\nMETRIC a=1\nMETRIC b=2\nMETRIC a=3\nMETRIC a=nan\nbye\n");
        let metrics = scanner.metrics();
        assert_eq!(metrics.len(), 2);
        assert_eq!(metrics["a"], 3.0);
        assert_eq!(metrics["b"], 2.0);
    }

    #[test]
    fn a_last_line_without_newline_counts() {
        let mut scanner = MetricScanner::new();
        scanner.feed(b"METRIC a=1\r\nMETRIC b=5");
        assert_eq!(scanner.metrics()["a"], 1.0);
        assert_eq!(scanner.metrics()["b"], 5.0);
    }

    #[test]
    fn overlong_and_invalid_utf8_lines_are_ignored() {
        let mut scanner = MetricScanner::new();
        let mut long = b"METRIC a=1".to_vec();
        long.extend(std::iter::repeat_n(b'0', MAX_LINE_BYTES));
        long.push(b'\n');
        scanner.feed(&long);
        scanner.feed(b"METRIC \xff=1\nMETRIC b=2\n");
        let metrics = scanner.metrics();
        assert_eq!(metrics.keys().collect::<Vec<_>>(), ["b"]);
    }

    proptest! {
        #[test]
        fn chunking_does_not_change_the_result(
            lines in proptest::collection::vec(
                prop_oneof![
                    (0u8..4, -1e6f64..1e6).prop_map(|(n, v)| format!("METRIC m{n}={v}")),
                    "[ -~]{0,20}",
                ],
                0..20,
            ),
            cuts in proptest::collection::vec(0usize..400, 0..6),
        ) {
            let text = lines.join("\n");
            let bytes = text.as_bytes();
            let mut whole = MetricScanner::new();
            whole.feed(bytes);
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
            cuts.sort_unstable();
            let mut pieces = MetricScanner::new();
            let mut start = 0;
            for cut in cuts {
                pieces.feed(&bytes[start..cut]);
                start = cut;
            }
            pieces.feed(&bytes[start..]);
            prop_assert_eq!(whole.metrics(), pieces.metrics());
            // And the last value of each name wins.
            let mut expected = BTreeMap::new();
            for line in text.split('\n') {
                if let Some((name, value)) = parse_metric_line(line) {
                    expected.insert(name.to_owned(), value);
                }
            }
            prop_assert_eq!(whole.metrics(), expected);
        }

        #[test]
        fn printed_finite_values_round_trip(name in "[a-z_/.]{1,12}", value in proptest::num::f64::NORMAL) {
            let line = format!("METRIC {name}={value}");
            prop_assert_eq!(parse_metric_line(&line), Some((name.as_str(), value)));
        }
    }
}
