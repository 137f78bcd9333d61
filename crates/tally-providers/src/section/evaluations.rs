//! Section `evaluations` (order 170, status): how many evaluations ran, how many failed, how long
//! one takes (the median, and the first five against the latest five, to see a benchmark
//! drifting), and how many candidates wait. An evaluation is the set of measurements sharing
//! `MeasurementView::evaluation` (both sides, every attempt); measurements outside any
//! evaluation (reports added by hand) are not counted. It does not show single samples.
//!
//! When evaluations handed evidence over (`TALLY_EVIDENCE_FILE`), it also shows the GPU busy time
//! behind them: the median per evaluation (over evaluations with accounted evidence) and the
//! busy time as a share of the wall time of the samples that have it (above 100 % when a sample
//! keeps several GPUs busy).

use std::collections::BTreeMap;

use tally_plugin::{
    Block, CampaignData, Entry, Figure, ProviderError, ProviderInfo, Rendered, Section,
    SectionInput, Surface,
};

use crate::gpu_hours::median;

/// The registry entry of `evaluations`.
pub(crate) fn entry() -> Entry<dyn Section> {
    Entry {
        check: None,
        info: ProviderInfo::builtin(
            "evaluations",
            "evaluations run and failed, their median duration, first five against latest five, GPU busy time from their evidence, candidates waiting",
            vec![],
        )
        .shown(&[Surface::Status], 170),
        build: |_| Ok(Box::new(Evaluations)),
    }
}

struct Evaluations;

/// One evaluation's summed seconds and whether any of its samples failed.
#[derive(Clone, Copy, Default)]
struct Evaluation {
    seconds: f64,
    failed: bool,
    /// Σ GPU busy seconds of its samples with accounted evidence; `None` when none has any.
    busy: Option<f64>,
    /// Σ wall seconds of those samples.
    busy_wall: f64,
}

/// The evaluations in the order their first measurement appears.
fn evaluations(data: &CampaignData) -> Vec<Evaluation> {
    let mut position: BTreeMap<u64, usize> = BTreeMap::new();
    let mut out: Vec<Evaluation> = Vec::new();
    for m in &data.measurements {
        let Some(id) = m.evaluation else {
            continue;
        };
        let at = *position.entry(id).or_insert_with(|| {
            out.push(Evaluation::default());
            out.len() - 1
        });
        out[at].seconds += m.seconds.filter(|s| s.is_finite()).unwrap_or(0.0);
        out[at].failed |= m.error.is_some();
        if let Some(busy) = m.gpu_busy_seconds.filter(|b| b.is_finite()) {
            *out[at].busy.get_or_insert(0.0) += busy;
            out[at].busy_wall += m.seconds.filter(|s| s.is_finite()).unwrap_or(0.0);
        }
    }
    out
}

/// A duration in the largest unit (min, s, ms) in which it is at least 1, one decimal: a short
/// benchmark's evaluations and GPU time are seconds or milliseconds, a long one's minutes.
fn duration(seconds: f64) -> (String, &'static str) {
    let unit = unit_of(seconds);
    (in_unit(seconds, unit), unit)
}

/// The largest unit (min, s, ms) in which `seconds` is at least 1.
fn unit_of(seconds: f64) -> &'static str {
    if seconds >= 60.0 {
        "min"
    } else if seconds >= 1.0 {
        "s"
    } else {
        "ms"
    }
}

/// `seconds` in `unit` (one of [`unit_of`]'s), one decimal.
fn in_unit(seconds: f64, unit: &str) -> String {
    let scale = match unit {
        "min" => 1.0 / 60.0,
        "s" => 1.0,
        _ => 1000.0,
    };
    format!("{:.1}", seconds * scale)
}

/// The median of the evaluations' summed seconds.
fn median_seconds(evaluations: &[Evaluation]) -> Option<f64> {
    median(evaluations.iter().map(|e| e.seconds).collect())
}

fn figure(label: &str, value: String, unit: &str) -> Figure {
    Figure {
        label: label.into(),
        value,
        unit: unit.into(),
    }
}

impl Section for Evaluations {
    fn render(&self, input: &SectionInput<'_>) -> Result<Option<Rendered>, ProviderError> {
        let all = evaluations(input.data);
        // Pending candidates, and those with an evaluation queued or unfinished (an interrupted
        // re-measurement): the next `tally run` measures each.
        let queued = &input.data.campaign.queued;
        let waiting = input
            .data
            .candidates
            .iter()
            .filter(|c| c.verdict == "pending" || queued.contains(&c.id))
            .count();
        if all.is_empty() && waiting == 0 {
            return Ok(None);
        }
        let failed = all.iter().filter(|e| e.failed).count();
        let mut figures = vec![
            figure("evaluations", all.len().to_string(), ""),
            figure("failed", failed.to_string(), ""),
        ];
        if let Some(m) = median_seconds(&all) {
            let (value, unit) = duration(m);
            figures.push(figure("median", value, unit));
        }
        if all.len() > 5
            && let (Some(first), Some(latest)) = (
                median_seconds(&all[..5]),
                median_seconds(&all[all.len() - 5..]),
            )
        {
            // Both in the unit of the larger, so the two read as one comparison.
            let unit = unit_of(first.max(latest));
            figures.push(figure(
                "first 5 → latest 5",
                format!("{} → {}", in_unit(first, unit), in_unit(latest, unit)),
                unit,
            ));
        }
        let busy: Vec<f64> = all.iter().filter_map(|e| e.busy).collect();
        let busy_total: f64 = busy.iter().sum();
        if let Some(median_busy) = median(busy) {
            let (value, unit) = duration(median_busy);
            figures.push(figure("GPU busy", value, unit));
            let wall: f64 = all.iter().map(|e| e.busy_wall).sum();
            if wall > 0.0 {
                figures.push(figure(
                    "GPU busy / wall",
                    format!("{:.0}", 100.0 * busy_total / wall),
                    "%",
                ));
            }
        }
        figures.push(figure("waiting", waiting.to_string(), ""));
        Ok(Some(Rendered {
            title: "Evaluations".into(),
            blocks: vec![Block::Figures(figures)],
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::{duration, in_unit};

    #[test]
    fn a_duration_is_shown_in_the_largest_unit_it_fills() {
        let shown = |s: f64| {
            let (value, unit) = duration(s);
            format!("{value} {unit}")
        };
        assert_eq!(shown(90.0), "1.5 min");
        assert_eq!(shown(60.0), "1.0 min");
        assert_eq!(shown(25.5), "25.5 s");
        assert_eq!(shown(1.0), "1.0 s");
        assert_eq!(shown(0.015), "15.0 ms");
        assert_eq!(shown(0.0), "0.0 ms");
        assert_eq!(in_unit(90.0, "s"), "90.0");
        assert_eq!(in_unit(30.0, "min"), "0.5");
    }
}
