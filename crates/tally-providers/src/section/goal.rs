//! Section `goal` (order 110, status and briefs): the metrics with their directions and roles,
//! and the progress towards each limit of the `limits` stop rule, e.g.
//! `run 7/200 · $41.20 spent / $50.00 hold limit`. It reads the stop rule's table from the campaign summary and the
//! facts the host handed it; it does not decide anything (the stop rule does) and says nothing
//! about another provider's limits beyond naming it.

use tally_plugin::{
    Block, Entry, Facts, MetricView, ProviderError, ProviderInfo, Rendered, Section, SectionInput,
    Surface,
};

use super::cells;
use crate::limits::{Limits, show_limit};

/// The registry entry of `goal`.
pub(crate) fn entry() -> Entry<dyn Section> {
    Entry {
        check: None,
        info: ProviderInfo::builtin(
            "goal",
            "the metrics and the progress towards each stop limit",
            vec![],
        )
        .shown(&[Surface::Status, Surface::Run], 110),
        build: |_| Ok(Box::new(Goal)),
    }
}

struct Goal;

/// `tokens_per_s: higher is better (primary, 3 repeats)`.
fn metric_line(m: &MetricView) -> String {
    let mut notes = vec![m.role.clone()];
    if let Some(margin) = m.margin {
        notes.push(format!("margin {}", show_limit(margin)));
    }
    if let Some(floor) = m.floor {
        notes.push(format!("floor {}", show_limit(floor)));
    }
    if m.repeats > 1 {
        notes.push(format!("{} repeats", m.repeats));
    }
    if m.deterministic {
        notes.push("deterministic".into());
    }
    format!(
        "{}: {} is better ({})",
        m.name,
        m.direction,
        notes.join(", ")
    )
}

/// The progress towards each limit, in the order of `docs/campaign.md#stop-rules`.
fn progress(limits: &Limits, input: &SectionInput<'_>) -> Vec<String> {
    let facts: &Facts = input.facts;
    let fact = |name: &str| facts.get(name).copied();
    let mut parts = Vec::new();
    if let Some(target) = limits.target {
        let name = cells::primary(&input.data.campaign).map_or("primary", |m| m.name.as_str());
        let campaign = &input.data.campaign;
        let head_mean = fact("head").or_else(|| {
            let head = input
                .data
                .candidates
                .iter()
                .find(|c| Some(c.id) == campaign.head)?;
            head.metrics.get(name).copied()
        });
        let head = head_mean.map_or_else(|| cells::NONE.into(), cells::metric);
        parts.push(format!("{name} {head}/{}", show_limit(target)));
    }
    if let Some(max) = limits.max_runs {
        let runs = fact("runs").map_or_else(|| "?".into(), |r| cells::fact_value(r, ""));
        parts.push(format!("run {runs}/{max}"));
    }
    if let Some(max) = limits.max_hours {
        let hours = fact("hours").map_or_else(|| "?".into(), |h| format!("{h:.1}"));
        parts.push(format!("{hours}h/{}h", show_limit(max)));
    }
    if let Some(max) = limits.plateau {
        let without = fact("without_keep").map_or_else(|| "?".into(), |r| cells::fact_value(r, ""));
        parts.push(format!("{without}/{max} runs without a keep"));
    }
    for (name, limit) in &limits.hold_at {
        let unit = input
            .fact_info
            .iter()
            .find(|f| &f.name == name)
            .map_or("", |f| f.unit.as_str());
        let value = fact(name);
        parts.push(if unit == "USD" {
            let spent = value.map_or_else(|| "?".into(), cells::money);
            format!("{spent} spent / {} hold limit", cells::money(*limit))
        } else {
            let spent = value.map_or_else(|| "?".into(), |v| cells::fact_value(v, unit));
            let unit = if unit.is_empty() {
                String::new()
            } else {
                format!(" {unit}")
            };
            format!("{name} {spent} / {}{unit} hold limit", show_limit(*limit))
        });
    }
    parts
}

impl Section for Goal {
    fn render(&self, input: &SectionInput<'_>) -> Result<Option<Rendered>, ProviderError> {
        let campaign = &input.data.campaign;
        let mut blocks = Vec::new();
        if !campaign.metrics.is_empty() {
            blocks.push(Block::List(
                campaign.metrics.iter().map(metric_line).collect(),
            ));
        }
        match Limits::from_table(&campaign.stop_rule) {
            Some(limits) => {
                let parts = progress(&limits, input);
                blocks.push(Block::Text(if parts.is_empty() {
                    "no limit set: the campaign runs until stopped by hand".into()
                } else {
                    parts.join(" · ")
                }));
            }
            None => {
                if let Some(provider) = campaign.stop_rule.get("provider").and_then(|p| p.as_str())
                {
                    blocks.push(Block::Text(format!("stop rule: {provider}")));
                }
            }
        }
        if blocks.is_empty() {
            return Ok(None);
        }
        Ok(Some(Rendered {
            title: "Goal".into(),
            blocks,
        }))
    }
}
