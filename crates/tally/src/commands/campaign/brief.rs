//! `tally brief`: the implementer brief as Markdown — `brief.md`, the campaign context (head and
//! its scores, the bar, the metrics and their directions, the budget left) and the sections of
//! the `run` surface (so `latency` appears there).

use std::fmt::Write as _;

use tally_plugin::Surface;

use super::context::Session;
use crate::cli::{BriefArgs, CampaignOptions};
use crate::exit::Status;
use crate::printer;

/// Runs the command.
pub fn run(_args: &BriefArgs, options: &CampaignOptions) -> anyhow::Result<Status> {
    let session = Session::open_read_only(options)?;
    let engine = session.engine();
    let workspace = &session.workspace;
    let loaded = &session.loaded;
    let report = engine.status(Surface::Run)?;
    let mut out = String::new();
    match std::fs::read_to_string(workspace.root().join("brief.md")) {
        Ok(text) => {
            out.push_str(text.trim_end());
            out.push_str("\n\n");
        }
        Err(_) => out.push_str(&format!("# Brief: {}\n\n", loaded.settings.name)),
    }
    let data = &report.data;
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
            let spent = report.facts.get(fact).copied();
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
    out.push_str(&tally_report::markdown(&super::sections::outputs(&report)));
    printer::out(&out)?;
    Ok(Status::Success)
}
