//! Section `candidates` (order 180, status and briefs): the latest candidates, latest first, with
//! their verdict, primary mean, change against their parent and the verdict's reason. It shows
//! the means the engine computed (successful full-benchmark measurements under the current
//! evaluator); it does not recompute them or show measurements.

use serde_json::json;
use tally_plugin::{
    Block, CandidateView, Entry, ParamKind, ParamSpec, ProviderError, ProviderInfo, Rendered,
    Section, SectionInput, Surface, Table,
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
        let mean = |c: &CandidateView| primary.as_ref().and_then(|p| c.metrics.get(p).copied());
        let rows = data
            .candidates
            .iter()
            .rev()
            .take(self.rows)
            .map(|c| {
                let parent = c
                    .parent
                    .and_then(|id| data.candidates.iter().find(|p| p.id == id));
                let delta = match (mean(c), parent.and_then(mean)) {
                    (Some(value), Some(base)) => cells::delta(value, base),
                    _ => cells::NONE.into(),
                };
                vec![
                    cells::candidate(c),
                    c.verdict.clone(),
                    mean(c).map_or_else(|| cells::NONE.into(), cells::metric),
                    delta,
                    c.reason.clone().unwrap_or_default(),
                ]
            })
            .collect();
        let columns = vec![
            "candidate".into(),
            "verdict".into(),
            primary.unwrap_or_else(|| "primary".into()),
            "Δ parent".into(),
            "reason".into(),
        ];
        Ok(Some(Rendered {
            title: "Candidates".into(),
            blocks: vec![Block::Table(Table { columns, rows })],
        }))
    }
}
