//! `tally status [--json]`: the status sections as terminal tables, or one JSON object with the
//! campaign, head, facts, every candidate with its measurements, and the sections
//! (`docs/campaign.md#commands`).

use std::collections::HashMap;
use std::io::{self, Write};

use serde::Serialize;
use tally_plugin::{MeasurementView, Surface};

use super::context::Session;
use crate::cli::{CampaignOptions, StatusArgs};
use crate::exit::Status;
use crate::printer;

/// Runs the command.
pub fn run(args: &StatusArgs, options: &CampaignOptions) -> anyhow::Result<Status> {
    let session = Session::open_read_only(options)?;
    let engine = session.engine();
    let report = engine.status(Surface::Status)?;
    let printed = print(args, &report);
    // The process ends after this command: freeing 100,000 measurements one allocation at a
    // time would add ~30 ms to a 10,000-candidate status for nothing.
    std::mem::forget(report);
    printed
}

fn print(args: &StatusArgs, report: &tally_engine::StatusReport) -> anyhow::Result<Status> {
    let sections = super::sections::outputs(report);
    if args.json {
        printer::out_streamed(|out| write_status_json(out, report, &sections))?;
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

/// Writes `tally status --json`: one object, keys in alphabetical order at every level (as a
/// `serde_json::Value` prints them). The structure is written by hand and every value by
/// serde_json, straight from the report: no JSON tree, and no per-key escaping of the fixed keys
/// (100,000 measurements make a 25 MB object).
pub fn write_status_json(
    out: &mut impl Write,
    report: &tally_engine::StatusReport,
    sections: &[tally_report::SectionOutput],
) -> io::Result<()> {
    let data = &report.data;
    let campaign = &data.campaign;
    out.write_all(b"{\"campaign\":{\"evaluator\":")?;
    json(out, &campaign.evaluator)?;
    out.write_all(b",\"name\":")?;
    json(out, &campaign.name)?;
    out.write_all(b",\"reason\":")?;
    json(out, &campaign.reason)?;
    out.write_all(b",\"state\":")?;
    json(out, &campaign.state)?;
    out.write_all(b"},\"candidates\":[")?;
    let lists = measurements_by_candidate(data);
    for (n, (c, list)) in data.candidates.iter().zip(&lists).enumerate() {
        if n > 0 {
            out.write_all(b",")?;
        }
        out.write_all(b"{\"id\":")?;
        json(out, &c.id)?;
        out.write_all(b",\"measurements\":[")?;
        for (k, &i) in list.iter().enumerate() {
            if k > 0 {
                out.write_all(b",")?;
            }
            write_measurement(out, &data.measurements[i])?;
        }
        out.write_all(b"],\"metrics\":")?;
        json(out, &c.metrics)?;
        out.write_all(b",\"parent\":")?;
        json(out, &c.parent)?;
        out.write_all(b",\"proposed_by\":")?;
        json(out, &c.proposed_by)?;
        out.write_all(b",\"reason\":")?;
        json(out, &c.reason)?;
        out.write_all(b",\"revision\":")?;
        json(out, &c.revision)?;
        out.write_all(b",\"verdict\":")?;
        json(out, &c.verdict)?;
        out.write_all(b"}")?;
    }
    out.write_all(b"],\"fact_errors\":")?;
    json(out, &report.fact_errors)?;
    out.write_all(b",\"facts\":")?;
    json(out, &report.facts)?;
    out.write_all(b",\"head\":")?;
    match campaign
        .head
        .and_then(|h| data.candidates.iter().find(|c| c.id == h))
    {
        Some(c) => {
            out.write_all(b"{\"candidate\":")?;
            json(out, &c.id)?;
            out.write_all(b",\"revision\":")?;
            json(out, &c.revision)?;
            out.write_all(b"}")?;
        }
        None => out.write_all(b"null")?,
    }
    out.write_all(b",\"sections\":")?;
    json(out, &tally_report::json(sections))?;
    out.write_all(b"}")
}

/// One measurement: the fields the contract names, keys sorted.
fn write_measurement(out: &mut impl Write, m: &MeasurementView) -> io::Result<()> {
    out.write_all(b"{\"attempt\":")?;
    json(out, &m.attempt)?;
    out.write_all(b",\"error\":")?;
    json(out, &m.error)?;
    out.write_all(b",\"evaluation\":")?;
    json(out, &m.evaluation)?;
    out.write_all(b",\"evaluator\":")?;
    json(out, &m.evaluator)?;
    out.write_all(b",\"evidence\":")?;
    json(out, &m.evidence)?;
    out.write_all(b",\"gpu_busy_seconds\":")?;
    json(out, &m.gpu_busy_seconds)?;
    out.write_all(b",\"id\":")?;
    json(out, &m.id)?;
    out.write_all(b",\"metrics\":")?;
    json(out, &m.metrics)?;
    out.write_all(b",\"pair\":")?;
    json(out, &m.pair)?;
    out.write_all(b",\"rung\":")?;
    json(out, &m.rung)?;
    out.write_all(b",\"sample\":")?;
    json(out, &m.sample)?;
    out.write_all(b",\"seconds\":")?;
    json(out, &m.seconds)?;
    out.write_all(b",\"side\":")?;
    json(out, &m.side)?;
    out.write_all(b"}")
}

/// One value as serde_json writes it.
fn json(out: &mut impl Write, value: &impl Serialize) -> io::Result<()> {
    serde_json::to_writer(&mut *out, value).map_err(io::Error::from)
}

/// Each candidate's measurements (indices into `data.measurements`, in their order), aligned with
/// `data.candidates`; a measurement of no listed candidate is left out.
fn measurements_by_candidate(data: &tally_plugin::CampaignData) -> Vec<Vec<usize>> {
    let mut lists = vec![Vec::new(); data.candidates.len()];
    let sorted = data.candidates.is_sorted_by_key(|c| c.id);
    let index: HashMap<u64, usize> = if sorted {
        HashMap::new()
    } else {
        data.candidates
            .iter()
            .enumerate()
            .map(|(i, c)| (c.id, i))
            .collect()
    };
    for (i, m) in data.measurements.iter().enumerate() {
        let at = if sorted {
            data.candidates
                .binary_search_by_key(&m.candidate, |c| c.id)
                .ok()
        } else {
            index.get(&m.candidate).copied()
        };
        if let Some(at) = at {
            lists[at].push(i);
        }
    }
    lists
}
