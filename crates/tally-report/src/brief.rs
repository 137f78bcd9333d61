//! `tally brief`: the implementer brief as Markdown — the campaign's `brief.md` (or a heading
//! naming the campaign), the campaign context (the head and its scores, the metrics and their
//! directions, the state, the budget left under the stop rule's `hold_at` limits), then the
//! sections of the `run` surface ([`markdown`](crate::markdown)).

use std::fmt::Write as _;

use tally_plugin::{CampaignData, Facts, SectionOutput};

/// What a brief is made of.
#[derive(Clone, Copy, Debug)]
pub struct BriefView<'a> {
    /// The campaign's `brief.md`, when it has one (printed first, trailing whitespace trimmed).
    pub brief_md: Option<&'a str>,
    /// The campaign's name (the heading when there is no `brief.md`).
    pub name: &'a str,
    /// The campaign, its candidates and measurements.
    pub data: &'a CampaignData,
    /// Every fact supplied now (the budget lines read the spent amounts here).
    pub facts: &'a Facts,
    /// The sections of the `run` surface, in display order.
    pub sections: &'a [SectionOutput],
}

/// The brief as Markdown. Metrics print in the campaign's order, budget lines in the order the
/// stop rule's `hold_at` object iterates (a `serde_json` map: its keys sorted).
pub fn markdown(brief: &BriefView<'_>) -> String {
    let mut out = String::new();
    match brief.brief_md {
        Some(text) => {
            out.push_str(text.trim_end());
            out.push_str("\n\n");
        }
        None => out.push_str(&format!("# Brief: {}\n\n", brief.name)),
    }
    let data = brief.data;
    let _ = writeln!(out, "## Campaign context\n");
    let head = data
        .campaign
        .head
        .and_then(|h| data.candidates.iter().find(|c| c.id == h));
    match head {
        Some(h) => {
            let scores: Vec<String> = h
                .metrics
                .iter()
                .map(|(k, v)| format!("{k} {}", tally_stats::format_sig4(*v)))
                .collect();
            let _ = writeln!(
                out,
                "- Head (the bar every new candidate is judged against): candidate#{} `{}` — {}",
                h.id,
                &h.revision[..12.min(h.revision.len())],
                if scores.is_empty() {
                    "no scores yet".into()
                } else {
                    scores.join(", ")
                }
            );
        }
        None => {
            let _ = writeln!(out, "- Head: none yet (the baseline has not been measured)");
        }
    }
    for m in &data.campaign.metrics {
        let mut line = format!(
            "- Metric `{}`: {} is better, {}",
            m.name, m.direction, m.role
        );
        if let Some(margin) = m.margin {
            line.push_str(&format!(", may get worse by at most {margin}"));
        }
        if let Some(floor) = m.floor {
            line.push_str(&format!(", floor {floor}"));
        }
        let _ = writeln!(out, "{line}");
    }
    let _ = writeln!(
        out,
        "- Campaign state: {}{}",
        data.campaign.state,
        data.campaign
            .reason
            .as_ref()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default()
    );
    if let Some(hold_at) = data
        .campaign
        .stop_rule
        .get("hold_at")
        .and_then(|v| v.as_object())
    {
        for (fact, limit) in hold_at {
            let Some(limit) = limit.as_f64() else {
                continue;
            };
            let spent = brief.facts.get(fact).copied();
            let left = spent.map(|s| limit - s);
            let _ = writeln!(
                out,
                "- Budget `{fact}`: {} of {limit} used, {} left",
                spent.map_or("—".into(), |s| format!("{s:.2}")),
                left.map_or("—".into(), |l| format!("{:.2}", l.max(0.0)))
            );
        }
    }
    out.push('\n');
    out.push_str(&crate::markdown(brief.sections));
    out
}
