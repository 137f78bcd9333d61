//! Section `evaluations` (order 170, status): how many evaluations ran, how many failed, how long
//! one takes (the median, and the first five against the latest five, to see a benchmark
//! drifting), and how many candidates wait. An evaluation is the set of measurements sharing
//! `MeasurementView::evaluation` (both sides, every attempt); measurements outside any
//! evaluation (reports added by hand) are not counted. It does not show single samples.

use std::collections::BTreeMap;

use tally_plugin::{
    Block, CampaignData, Entry, Figure, ProviderError, ProviderInfo, Rendered, Section,
    SectionInput, Surface,
};

use crate::gpu_hours::median;

/// The registry entry of `evaluations`.
pub(crate) fn entry() -> Entry<dyn Section> {
    Entry {
        info: ProviderInfo::builtin(
            "evaluations",
            "evaluations run and failed, their median minutes, first five against latest five, candidates waiting",
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
    }
    out
}

fn minutes(seconds: &[Evaluation]) -> Option<f64> {
    median(seconds.iter().map(|e| e.seconds / 60.0).collect())
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
        let waiting = input
            .data
            .candidates
            .iter()
            .filter(|c| c.verdict == "pending")
            .count();
        if all.is_empty() && waiting == 0 {
            return Ok(None);
        }
        let failed = all.iter().filter(|e| e.failed).count();
        let mut figures = vec![
            figure("evaluations", all.len().to_string(), ""),
            figure("failed", failed.to_string(), ""),
        ];
        if let Some(m) = minutes(&all) {
            figures.push(figure("median", format!("{m:.1}"), "min"));
        }
        if all.len() > 5
            && let (Some(first), Some(latest)) =
                (minutes(&all[..5]), minutes(&all[all.len() - 5..]))
        {
            figures.push(figure(
                "first 5 → latest 5",
                format!("{first:.1} → {latest:.1}"),
                "min",
            ));
        }
        figures.push(figure("waiting", waiting.to_string(), ""));
        Ok(Some(Rendered {
            title: "Evaluations".into(),
            blocks: vec![Block::Figures(figures)],
        }))
    }
}
