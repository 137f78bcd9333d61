//! `tally status [--json]`: the status sections as terminal tables, or one JSON object with the
//! campaign, head, facts, every candidate with its measurements, and the sections
//! (`campaign.md` §11).

use std::collections::HashMap;

use serde::Serialize;
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;
use tally_plugin::{CandidateView, MeasurementView, Surface};

use super::context::{NoRunner, Workspace, engine};
use super::progress::Progress;
use crate::cli::StatusArgs;
use crate::exit::Status;
use crate::printer;

/// Runs the command.
pub fn run(args: &StatusArgs) -> anyhow::Result<Status> {
    let workspace = Workspace::discover(&args.campaign)?;
    let loaded = workspace.load()?;
    let store = workspace.open_store()?;
    let progress = Progress::new();
    let engine = engine(&workspace, &store, &NoRunner, &loaded, &progress);
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
        printer::out_json_line(&status_json(report, &sections))?;
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

/// `tally status --json`: one object, keys in alphabetical order at every level (as a
/// `serde_json::Value` prints them), serialised straight from the report without building a
/// JSON tree (100,000 measurements make a 25 MB object).
pub fn status_json<'a>(
    report: &'a tally_engine::StatusReport,
    sections: &[tally_report::SectionOutput],
) -> impl Serialize + 'a {
    let data = &report.data;
    StatusJson {
        campaign: CampaignJson {
            evaluator: &data.campaign.evaluator,
            name: &data.campaign.name,
            reason: data.campaign.reason.as_deref(),
            state: &data.campaign.state,
        },
        candidates: CandidatesJson {
            candidates: &data.candidates,
            measurements: &data.measurements,
            lists: measurements_by_candidate(data),
        },
        fact_errors: &report.fact_errors,
        facts: &report.facts,
        head: data.campaign.head.and_then(|h| {
            data.candidates
                .iter()
                .find(|c| c.id == h)
                .map(|c| HeadJson {
                    candidate: c.id,
                    revision: &c.revision,
                })
        }),
        sections: tally_report::json(sections),
    }
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

#[derive(Serialize)]
struct StatusJson<'a> {
    campaign: CampaignJson<'a>,
    candidates: CandidatesJson<'a>,
    fact_errors: &'a [String],
    facts: &'a tally_plugin::Facts,
    head: Option<HeadJson<'a>>,
    sections: Value,
}

#[derive(Serialize)]
struct CampaignJson<'a> {
    evaluator: &'a str,
    name: &'a str,
    reason: Option<&'a str>,
    state: &'a str,
}

#[derive(Serialize)]
struct HeadJson<'a> {
    candidate: u64,
    revision: &'a str,
}

/// The candidates array, each with its measurements.
struct CandidatesJson<'a> {
    candidates: &'a [CandidateView],
    measurements: &'a [MeasurementView],
    lists: Vec<Vec<usize>>,
}

impl Serialize for CandidatesJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.candidates.len()))?;
        for (candidate, list) in self.candidates.iter().zip(&self.lists) {
            seq.serialize_element(&CandidateJson {
                candidate,
                measurements: MeasurementsJson {
                    all: self.measurements,
                    list,
                },
            })?;
        }
        seq.end()
    }
}

/// One candidate: the fields of `CandidateView` but `measurements` added (and sorted keys).
struct CandidateJson<'a> {
    candidate: &'a CandidateView,
    measurements: MeasurementsJson<'a>,
}

impl Serialize for CandidateJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let c = self.candidate;
        let mut map = serializer.serialize_map(Some(8))?;
        map.serialize_entry("id", &c.id)?;
        map.serialize_entry("measurements", &self.measurements)?;
        map.serialize_entry("metrics", &c.metrics)?;
        map.serialize_entry("parent", &c.parent)?;
        map.serialize_entry("proposed_by", &c.proposed_by)?;
        map.serialize_entry("reason", &c.reason)?;
        map.serialize_entry("revision", &c.revision)?;
        map.serialize_entry("verdict", &c.verdict)?;
        map.end()
    }
}

/// One candidate's measurements: `list` indexes `all`.
struct MeasurementsJson<'a> {
    all: &'a [MeasurementView],
    list: &'a [usize],
}

impl Serialize for MeasurementsJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.list.len()))?;
        for &i in self.list {
            seq.serialize_element(&MeasurementJson(&self.all[i]))?;
        }
        seq.end()
    }
}

/// One measurement: the fields the contract names, sorted keys.
struct MeasurementJson<'a>(&'a MeasurementView);

impl Serialize for MeasurementJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let m = self.0;
        let mut map = serializer.serialize_map(Some(10))?;
        map.serialize_entry("attempt", &m.attempt)?;
        map.serialize_entry("error", &m.error)?;
        map.serialize_entry("evaluation", &m.evaluation)?;
        map.serialize_entry("evaluator", &m.evaluator)?;
        map.serialize_entry("id", &m.id)?;
        map.serialize_entry("metrics", &m.metrics)?;
        map.serialize_entry("pair", &m.pair)?;
        map.serialize_entry("rung", &m.rung)?;
        map.serialize_entry("seconds", &m.seconds)?;
        map.serialize_entry("side", &m.side)?;
        map.end()
    }
}
