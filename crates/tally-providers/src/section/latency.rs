//! Section `latency` (`docs/campaign.md#latency`; order 175, status and briefs): a table of the latency
//! metrics of the latest candidates, so an implementer sees what its predecessors did to the
//! tail, not only to the primary.
//!
//! Columns `candidate`, `verdict`, then one per metric; one row per candidate with successful
//! full-benchmark (`rung` null) measurements under the current evaluator, latest first, at most
//! `rows`; each cell the mean over those measurements (an exactly rounded sum over the count, as
//! Python's `statistics.fmean`) rounded to 2 decimals, `—` where the metric was not printed. It
//! is shown whenever a candidate has such measurements, even before any latency metric was
//! printed (every cell `—`), so the table's place never moves; with no measurement it is left
//! out. It does not judge or compare the values.

use std::collections::BTreeMap;

use serde_json::json;
use tally_plugin::{
    Block, Entry, MeasurementView, ParamKind, ParamSpec, ProviderError, ProviderInfo, Rendered,
    Section, SectionInput, Surface, Table,
};

use tally_stats::fmean;

use super::cells;
use crate::checks::Checks;

/// The registry entry of `latency`.
pub(crate) fn entry() -> Entry<dyn Section> {
    Entry {
        check: None,
        info: ProviderInfo::builtin(
            "latency",
            "a table of latency metrics for the latest candidates",
            vec![
                ParamSpec::optional(
                    "metrics",
                    ParamKind::StringList,
                    json!(["p50_ms", "p95_ms"]),
                    "the metrics shown, one column each",
                ),
                ParamSpec::optional(
                    "rows",
                    ParamKind::Integer,
                    json!(5),
                    "at most this many candidates, latest first",
                ),
            ],
        )
        .shown(&[Surface::Status, Surface::Run], 175),
        build: |params| {
            let mut checks = Checks::new(params);
            let rows = checks.integer("rows", 1, 10_000, "a whole number of rows from 1 to 10000");
            let metrics = params
                .strings("metrics")
                .unwrap_or_else(|| vec!["p50_ms".into(), "p95_ms".into()]);
            if metrics.is_empty() || metrics.iter().any(|m| m.trim().is_empty()) {
                checks.problem(
                    "metrics",
                    "expected a list of metric names, such as [\"p50_ms\", \"p95_ms\"]",
                );
            }
            checks.finish()?;
            Ok(Box::new(Latency {
                metrics,
                rows: rows.map_or(5, |n| n as usize),
            }))
        },
    }
}

/// `latency` with checked parameters.
struct Latency {
    metrics: Vec<String>,
    rows: usize,
}

impl Latency {
    /// The mean of `metric` over `measurements` that have it, to 2 decimals; `—` when none.
    fn cell(&self, metric: &str, measurements: &[&MeasurementView]) -> String {
        let values: Vec<f64> = measurements
            .iter()
            .filter_map(|m| m.metrics.get(metric).copied())
            .filter(|v| v.is_finite())
            .collect();
        fmean(&values).map_or_else(|| cells::NONE.into(), cells::two_decimals)
    }
}

impl Section for Latency {
    fn render(&self, input: &SectionInput<'_>) -> Result<Option<Rendered>, ProviderError> {
        let data = input.data;
        let evaluator = &data.campaign.evaluator;
        let mut measured: BTreeMap<u64, Vec<&MeasurementView>> = BTreeMap::new();
        for m in &data.measurements {
            if m.error.is_none() && m.rung.is_none() && &m.evaluator == evaluator {
                measured.entry(m.candidate).or_default().push(m);
            }
        }
        let rows: Vec<Vec<String>> = data
            .candidates
            .iter()
            .rev()
            .filter_map(|c| Some((c, measured.get(&c.id)?)))
            .take(self.rows)
            .map(|(c, measurements)| {
                let verdict = if c.verdict.is_empty() {
                    "pending".to_string()
                } else {
                    c.verdict.clone()
                };
                let mut row = vec![cells::candidate(c), verdict];
                row.extend(self.metrics.iter().map(|m| self.cell(m, measurements)));
                row
            })
            .collect();
        if rows.is_empty() {
            return Ok(None);
        }
        let mut columns = vec!["candidate".to_string(), "verdict".to_string()];
        columns.extend(self.metrics.iter().cloned());
        Ok(Some(Rendered {
            title: "Latency".into(),
            blocks: vec![Block::Table(Table { columns, rows })],
        }))
    }
}
