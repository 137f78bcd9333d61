//! `tally status [--json]`: the status sections as terminal tables, or one JSON object with the
//! campaign, head, facts, every candidate with its measurements, and the sections
//! (`campaign.md` §11).

use std::collections::BTreeMap;

use serde_json::{Value, json};
use tally_plugin::Surface;

use super::context::{NoRunner, Workspace, engine};
use super::progress::Progress;
use crate::cli::{CampaignOptions, StatusArgs};
use crate::exit::Status;
use crate::printer;

/// Runs the command.
pub fn run(args: &StatusArgs, options: &CampaignOptions) -> anyhow::Result<Status> {
    let workspace = Workspace::discover(options)?;
    let loaded = workspace.load()?;
    let store = workspace.open_store()?;
    let progress = Progress::new();
    let engine = engine(&workspace, &store, &NoRunner, &loaded, &progress);
    let report = engine.status(Surface::Status)?;
    let sections = super::sections::outputs(&report);
    if args.json {
        let samples = sample_indexes(&engine.snapshot()?);
        printer::out_line(&status_json(&report, &sections, &samples).to_string())?;
        return Ok(Status::Success);
    }
    let campaign = &report.data.campaign;
    let mut text = format!(
        "campaign `{}` · {}{}\n",
        campaign.name,
        campaign.state,
        campaign
            .reason
            .as_ref()
            .map(|r| format!(": {r}"))
            .unwrap_or_default()
    );
    for e in &report.fact_errors {
        text.push_str(&format!("fact source failed: {e}\n"));
    }
    text.push('\n');
    text.push_str(&tally_report::terminal(&sections));
    printer::out(&text)?;
    Ok(Status::Success)
}

/// Each measurement's sample index on its side (the provider view leaves it out).
pub fn sample_indexes(snapshot: &tally_store::CampaignSnapshot) -> BTreeMap<u64, u32> {
    snapshot
        .measurements
        .iter()
        .map(|m| (m.id.0, m.sample))
        .collect()
}

/// The JSON object of `tally status --json`; `samples` gives each measurement's sample index.
pub fn status_json(
    report: &tally_engine::StatusReport,
    sections: &[tally_report::SectionOutput],
    samples: &BTreeMap<u64, u32>,
) -> Value {
    let data = &report.data;
    let head = data.campaign.head.and_then(|h| {
        data.candidates
            .iter()
            .find(|c| c.id == h)
            .map(|c| json!({"candidate": c.id, "revision": c.revision}))
    });
    let mut by_candidate: BTreeMap<u64, Vec<Value>> = BTreeMap::new();
    for m in &data.measurements {
        by_candidate.entry(m.candidate).or_default().push(json!({
            "id": m.id,
            "seconds": m.seconds,
            "error": m.error,
            "pair": m.pair,
            "evaluator": m.evaluator,
            "side": m.side,
            "sample": samples.get(&m.id),
            "evaluation": m.evaluation,
            "attempt": m.attempt,
            "rung": m.rung,
            "metrics": m.metrics,
        }));
    }
    let candidates: Vec<Value> = data
        .candidates
        .iter()
        .map(|c| {
            json!({
                "id": c.id,
                "revision": c.revision,
                "parent": c.parent,
                "verdict": c.verdict,
                "reason": c.reason,
                "proposed_by": c.proposed_by,
                "metrics": c.metrics,
                "measurements": by_candidate.remove(&c.id).unwrap_or_default(),
            })
        })
        .collect();
    json!({
        "campaign": {
            "name": data.campaign.name,
            "state": data.campaign.state,
            "reason": data.campaign.reason,
            "evaluator": data.campaign.evaluator,
        },
        "head": head,
        "facts": report.facts,
        "fact_errors": report.fact_errors,
        "candidates": candidates,
        "sections": tally_report::json(sections),
    })
}
