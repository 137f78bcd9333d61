//! Section `headline` (order 100, status and briefs): the campaign's state and why it is held or
//! stopped, the head and its primary, the head's gain over the baseline, keeps and candidates,
//! and every fact an active fact source supplied (so `gpu_hours` shows the GPU-hours and dollars
//! spent). It does not show the host's own counters beyond keeps and candidates, nor history.

use tally_plugin::{
    Block, CandidateView, Entry, Figure, ProviderError, ProviderInfo, Rendered, Section,
    SectionInput, Surface,
};
use tally_stats::format_sig4;

use super::cells;

/// The registry entry of `headline`.
pub(crate) fn entry() -> Entry<dyn Section> {
    Entry {
        check: None,
        info: ProviderInfo::builtin(
            "headline",
            "the state, the head and its gain over the baseline, keeps, candidates and facts",
            vec![],
        )
        .shown(&[Surface::Status, Surface::Run], 100),
        build: |_| Ok(Box::new(Headline)),
    }
}

struct Headline;

fn figure(label: &str, value: String, unit: &str) -> Figure {
    Figure {
        label: label.into(),
        value,
        unit: unit.into(),
    }
}

impl Section for Headline {
    fn render(&self, input: &SectionInput<'_>) -> Result<Option<Rendered>, ProviderError> {
        let data = input.data;
        let campaign = &data.campaign;
        let find = |id: Option<u64>| -> Option<&CandidateView> {
            id.and_then(|id| data.candidates.iter().find(|c| c.id == id))
        };
        let mut figures = Vec::new();
        let state = match &campaign.reason {
            Some(reason) if campaign.state != "active" => format!("{}: {reason}", campaign.state),
            _ => campaign.state.clone(),
        };
        figures.push(figure("state", state, ""));
        let head = find(campaign.head);
        figures.push(figure(
            "head",
            head.map_or_else(|| "none yet".into(), cells::candidate_long),
            "",
        ));
        if let (Some(primary), Some(head)) = (cells::primary(campaign), head) {
            let head_mean = head.metrics.get(&primary.name).copied();
            figures.push(figure(
                &primary.name,
                head_mean.map_or_else(|| cells::NONE.into(), format_sig4),
                "",
            ));
            let base_mean = find(campaign.baseline)
                .filter(|base| base.id != head.id)
                .and_then(|base| base.metrics.get(&primary.name).copied());
            if let (Some(value), Some(base)) = (head_mean, base_mean)
                && base != 0.0
            {
                let gain = if primary.direction == "lower" {
                    base - value
                } else {
                    value - base
                };
                figures.push(figure(
                    "gain over the baseline",
                    cells::percent(gain / base.abs()),
                    "",
                ));
            }
        }
        let judged: Vec<&CandidateView> = data
            .candidates
            .iter()
            .filter(|c| Some(c.id) != campaign.baseline)
            .collect();
        let keeps = judged.iter().filter(|c| c.verdict == "keep").count();
        let pending = judged.iter().filter(|c| c.verdict == "pending").count();
        figures.push(figure("keeps", keeps.to_string(), ""));
        let candidates = if pending > 0 {
            format!("{} ({pending} pending)", judged.len())
        } else {
            judged.len().to_string()
        };
        figures.push(figure("candidates", candidates, ""));
        let host: Vec<String> = crate::host_facts().into_iter().map(|f| f.name).collect();
        for info in input.fact_info {
            if host.contains(&info.name) {
                continue;
            }
            if let Some(value) = input.facts.get(&info.name) {
                figures.push(figure(
                    &info.name,
                    cells::fact_value(*value, &info.unit),
                    &info.unit,
                ));
            }
        }
        Ok(Some(Rendered {
            title: campaign.name.clone(),
            blocks: vec![Block::Figures(figures)],
        }))
    }
}
