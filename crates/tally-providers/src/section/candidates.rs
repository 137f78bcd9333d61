//! Section `candidates` (order 180, status and briefs): the latest candidates, latest first, with
//! their verdict, primary mean, the samples that mean is over, the change against the bar their
//! verdict used (and against the parent where that is another candidate) and the verdict's reason
//! (`docs/campaign.md#candidates-table`). The primary's mean is the engine's (successful
//! full-benchmark measurements under the current evaluator); the change against the bar is taken
//! over the same complete pairs the verdict compares, so it agrees with the reason's delta.

use std::collections::HashMap;

use serde_json::json;
use tally_plugin::{
    Block, CampaignData, CandidateView, Entry, MeasurementView, ParamKind, ParamSpec,
    ProviderError, ProviderInfo, Rendered, Section, SectionInput, Surface, Table,
};

use super::cells;
use crate::checks::Checks;

/// The registry entry of `candidates`.
pub(crate) fn entry() -> Entry<dyn Section> {
    Entry {
        check: None,
        info: ProviderInfo::builtin(
            "candidates",
            "the latest candidates with verdict, primary, change against the parent and reason",
            vec![ParamSpec::optional(
                "rows",
                ParamKind::Integer,
                json!(8),
                "at most this many candidates, latest first",
            )],
        )
        .shown(&[Surface::Status, Surface::Run], 180),
        build: |params| {
            let mut checks = Checks::new(params);
            let rows = checks.integer("rows", 1, 10_000, "a whole number of rows from 1 to 10000");
            checks.finish()?;
            Ok(Box::new(Candidates {
                rows: rows.map_or(8, |n| n as usize),
            }))
        },
    }
}

struct Candidates {
    rows: usize,
}

impl Section for Candidates {
    fn render(&self, input: &SectionInput<'_>) -> Result<Option<Rendered>, ProviderError> {
        let data = input.data;
        if data.candidates.is_empty() {
            return Ok(None);
        }
        let primary = cells::primary(&data.campaign).map(|m| m.name.clone());
        let samples = Samples::of(data, primary.as_deref());
        let rows = data
            .candidates
            .iter()
            .rev()
            .take(self.rows)
            .map(|c| {
                vec![
                    cells::candidate(c),
                    c.verdict.clone(),
                    samples
                        .mean(c)
                        .map_or_else(|| cells::NONE.into(), cells::metric),
                    samples.count_cell(c),
                    samples.delta_cell(c),
                    c.reason.clone().unwrap_or_default(),
                ]
            })
            .collect();
        let columns = vec![
            "candidate".into(),
            "verdict".into(),
            primary.unwrap_or_else(|| "primary".into()),
            "samples".into(),
            "Δ bar".into(),
            "reason".into(),
        ];
        Ok(Some(Rendered {
            title: "Candidates".into(),
            blocks: vec![Block::Table(Table { columns, rows })],
        }))
    }
}

/// The primary's values of the measurements that count (successful, full benchmark, under the
/// current evaluator: the engine's rule for means), by candidate.
struct Samples<'a> {
    data: &'a CampaignData,
    primary: Option<&'a str>,
    /// Counting measurements that printed the primary, by measurement id.
    counting: HashMap<u64, (&'a MeasurementView, f64)>,
}

impl<'a> Samples<'a> {
    fn of(data: &'a CampaignData, primary: Option<&'a str>) -> Self {
        let evaluator = data.campaign.evaluator.as_str();
        let counting = data
            .measurements
            .iter()
            .filter(|m| m.error.is_none() && m.rung.is_none() && m.evaluator == evaluator)
            .filter_map(|m| Some((m.id, (m, *m.metrics.get(primary?)?))))
            .collect();
        Self {
            data,
            primary,
            counting,
        }
    }

    /// The primary's mean as the engine computed it (every counting sample of the candidate).
    fn mean(&self, c: &CandidateView) -> Option<f64> {
        self.primary.and_then(|p| c.metrics.get(p).copied())
    }

    /// `3`, or `3 + 6 as bar`: the samples the primary's mean is over — the candidate's own,
    /// and those it ran as the bar of later candidates.
    fn count_cell(&self, c: &CandidateView) -> String {
        let (mut own, mut as_bar) = (0usize, 0usize);
        for (m, _) in self.counting.values().filter(|(m, _)| m.candidate == c.id) {
            if m.side == "bar" {
                as_bar += 1;
            } else {
                own += 1;
            }
        }
        match (own, as_bar) {
            (0, 0) => cells::NONE.into(),
            (own, 0) => own.to_string(),
            (own, as_bar) => format!("{own} + {as_bar} as bar"),
        }
    }

    /// The change against the bar its verdict used: over the complete pairs with that bar (the
    /// candidate's samples whose pair is a counting sample of the bar), the verdict's own
    /// comparison, or the two means when there is no pair. A parent that is not the bar follows,
    /// labelled; a candidate without a bar (pending, the baseline) shows the change against its
    /// parent, labelled.
    fn delta_cell(&self, c: &CandidateView) -> String {
        let against_bar = c
            .judged_against
            .filter(|&bar| bar != c.id)
            .and_then(|bar| self.paired(c, bar).or_else(|| self.means(c, bar)));
        let parent = c
            .parent
            .filter(|&p| Some(p) != c.judged_against)
            .and_then(|p| Some((p, self.means(c, p)?)));
        match (against_bar, parent) {
            (Some(bar), None) => bar,
            (Some(bar), Some((p, delta))) => format!("{bar}; parent #{p}: {delta}"),
            (None, Some((p, delta))) => format!("parent #{p}: {delta}"),
            (None, None) => cells::NONE.into(),
        }
    }

    /// The change over the complete pairs of `c` with `bar`.
    fn paired(&self, c: &CandidateView, bar: u64) -> Option<String> {
        let (mut cand, mut base) = (Vec::new(), Vec::new());
        let mut own: Vec<_> = self
            .counting
            .values()
            .filter(|(m, _)| m.candidate == c.id && m.side != "bar")
            .collect();
        own.sort_by_key(|(m, _)| m.id);
        // A pair is linked from either side (the second sample names the first).
        let linked_back: HashMap<u64, f64> = self
            .counting
            .values()
            .filter(|(m, _)| m.candidate == bar && m.side == "bar")
            .filter_map(|(m, value)| Some((m.pair?, *value)))
            .collect();
        for (m, value) in own {
            let partner = m
                .pair
                .and_then(|p| self.counting.get(&p))
                .filter(|(p, _)| p.candidate == bar && p.side == "bar")
                .map(|(_, v)| *v)
                .or_else(|| linked_back.get(&m.id).copied());
            if let Some(partner) = partner {
                cand.push(*value);
                base.push(partner);
            }
        }
        // Summed in measurement order and divided, as the verdict's paired means are.
        let mean = |values: &[f64]| values.iter().sum::<f64>() / values.len() as f64;
        (!cand.is_empty()).then(|| cells::delta(mean(&cand), mean(&base)))
    }

    /// The change of `c`'s mean against candidate `other`'s.
    fn means(&self, c: &CandidateView, other: u64) -> Option<String> {
        let other = self.data.candidates.iter().find(|o| o.id == other)?;
        Some(cells::delta(self.mean(c)?, self.mean(other)?))
    }
}
