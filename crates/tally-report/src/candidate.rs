//! `tally candidate show`: one candidate — its verdict and who set it, reason, parent, who
//! proposed it, its means and its measurements (samples) with their units, evidence, log files
//! and, for a failed sample, the end of its stderr — as text, or as the pretty-printed `--json`
//! object `{"checks", "id", "measurements", "metrics", "note", "parent", "proposed_by", "reason",
//! "revision", "verdict", "verdict_set_by"}`.
//!
//! The object's keys are in alphabetical order at every level, a measurement's too, as the
//! command has always printed them (it built a `serde_json::Value`, whose keys sort): the structs
//! below declare their fields in that order. Measurements keep the order they are given in.

use std::collections::BTreeMap;

use serde::Serialize;
use tally_model::{Candidate, UnitValues};
use tally_plugin::MeasurementView;

/// How many units of a metric a sample's text line names (the JSON has them all).
const UNITS_SHOWN: usize = 8;

/// What `tally candidate show` shows.
#[derive(Clone, Copy, Debug)]
pub struct CandidateShow<'a> {
    /// The candidate as stored.
    pub candidate: &'a Candidate,
    /// Its metric means under the current evaluator (`None`: it is not in the campaign view).
    pub metrics: Option<&'a BTreeMap<String, f64>>,
    /// Its measurements, oldest first.
    pub measurements: &'a [&'a MeasurementView],
    /// What the store keeps beside each measurement, by measurement id.
    pub records: &'a BTreeMap<u64, SampleRecord>,
    /// Its `[checks]` runs, oldest first (empty: none ran, or the store keeps none).
    pub checks: &'a [CheckShown],
}

/// One `[checks]` run of the candidate (`docs/campaign.md#checks`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CheckShown {
    /// How many commands the checks had.
    pub commands: u32,
    /// Whether they are the checks of the current `tally.toml`.
    pub current: bool,
    /// The failing check's name.
    pub failed_check: Option<String>,
    /// Whether every command passed.
    pub passed: bool,
    /// Why it failed.
    pub reason: Option<String>,
}

/// What the store keeps beside a measurement that the campaign view leaves out.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SampleRecord {
    /// Its per-unit results (metric → unit → contribution).
    pub units: UnitValues,
    /// Its stdout log file, as the caller shows it.
    pub stdout_log: Option<String>,
    /// Its stderr log file, as the caller shows it.
    pub stderr_log: Option<String>,
    /// For a failed sample, the last lines of its stderr log (read by the caller, bounded).
    pub stderr_end: Option<String>,
}

/// The text: the candidate and its revision, then indented lines — verdict (and who set it),
/// reason, parent, proposer, note, each mean, and one line per measurement.
pub fn text(show: &CandidateShow<'_>) -> String {
    let candidate = show.candidate;
    let mut text = format!(
        "{} {}\n  verdict: {}{}\n  reason: {}\n  parent: {}\n  proposed by: {}{}\n",
        candidate.id,
        candidate.revision,
        candidate.verdict,
        candidate
            .verdict_set_by
            .as_ref()
            .map(|a| format!(" (set by {a})"))
            .unwrap_or_default(),
        candidate.reason.as_deref().unwrap_or("—"),
        candidate.parent.map_or("none".into(), |p| p.to_string()),
        candidate.proposed_by,
        candidate
            .note
            .as_ref()
            .map(|n| format!("\n  note: {n}"))
            .unwrap_or_default(),
    );
    if let Some(metrics) = show.metrics {
        for (name, value) in metrics {
            text.push_str(&format!("  {name}: {}\n", tally_stats::format_sig4(*value)));
        }
    }
    for check in show.checks {
        let outcome = if check.passed {
            format!("passed ({} command(s))", check.commands)
        } else {
            format!(
                "failed at `{}`",
                check.failed_check.as_deref().unwrap_or("?")
            )
        };
        let old = if check.current {
            ""
        } else {
            " (earlier [checks])"
        };
        text.push_str(&format!("  checks: {outcome}{old}\n"));
    }
    text.push_str(&format!("  measurements: {}\n", show.measurements.len()));
    for m in show.measurements {
        let metrics: Vec<String> = m
            .metrics
            .iter()
            .map(|(k, v)| format!("{k}={}", tally_stats::format_sig4(*v)))
            .collect();
        text.push_str(&format!(
            "    #{} {} sample {}{} {:.2}s {}{}\n",
            m.id,
            m.side,
            m.sample,
            if m.attempt > 1 {
                format!(" (attempt {})", m.attempt)
            } else {
                String::new()
            },
            m.seconds.unwrap_or(0.0),
            metrics.join(" "),
            m.error
                .as_ref()
                .map(|e| format!(" error: {e}"))
                .unwrap_or_default()
        ));
        if let Some(record) = show.records.get(&m.id) {
            record_lines(&mut text, m, record);
        }
    }
    text
}

/// The lines under a measurement: evidence, units, log files, the end of a failed sample's
/// stderr.
fn record_lines(text: &mut String, m: &MeasurementView, record: &SampleRecord) {
    if let Some(evidence) = &m.evidence {
        let busy = m
            .gpu_busy_seconds
            .map(|s| format!(" (GPU busy {s:.3} s)"))
            .unwrap_or_default();
        text.push_str(&format!("      evidence: {evidence}{busy}\n"));
    }
    for (metric, units) in &record.units {
        let shown: Vec<String> = units
            .iter()
            .take(UNITS_SHOWN)
            .map(|(unit, v)| format!("{unit}={}", tally_stats::format_sig4(*v)))
            .collect();
        let more = if units.len() > UNITS_SHOWN {
            format!(", … ({} in all)", units.len())
        } else {
            String::new()
        };
        text.push_str(&format!(
            "      units of {metric}: {}{more}\n",
            shown.join(", ")
        ));
    }
    let logs: Vec<String> = [
        ("stdout", &record.stdout_log),
        ("stderr", &record.stderr_log),
    ]
    .into_iter()
    .filter_map(|(name, path)| path.as_ref().map(|p| format!("{name} {p}")))
    .collect();
    if !logs.is_empty() {
        text.push_str(&format!("      logs: {}\n", logs.join(", ")));
    }
    if let Some(end) = record
        .stderr_end
        .as_deref()
        .filter(|e| !e.trim().is_empty())
    {
        text.push_str("      stderr ends:\n");
        for line in end.trim_end().lines() {
            text.push_str(&format!("        | {line}\n"));
        }
    }
}

/// The `--json` object, pretty-printed, ending with a newline.
pub fn json(show: &CandidateShow<'_>) -> String {
    let candidate = show.candidate;
    let empty = BTreeMap::new();
    let value = CandidateJson {
        checks: show.checks,
        id: candidate.id.0,
        measurements: show
            .measurements
            .iter()
            .map(|m| {
                let mut json = MeasurementJson::from(*m);
                if let Some(record) = show.records.get(&m.id) {
                    json.stderr_log = record.stderr_log.as_deref();
                    json.stdout_log = record.stdout_log.as_deref();
                    json.units = Some(&record.units);
                }
                json
            })
            .collect(),
        metrics: show.metrics.unwrap_or(&empty),
        note: &candidate.note,
        parent: candidate.parent.map(|p| p.0),
        proposed_by: &candidate.proposed_by,
        reason: &candidate.reason,
        revision: &candidate.revision,
        verdict: candidate.verdict.as_str(),
        verdict_set_by: candidate.verdict_set_by.as_ref().map(ToString::to_string),
    };
    let mut text = serde_json::to_string_pretty(&value).expect("a candidate serialises");
    text.push('\n');
    text
}

#[derive(Serialize)]
struct CandidateJson<'a> {
    checks: &'a [CheckShown],
    id: u32,
    measurements: Vec<MeasurementJson<'a>>,
    metrics: &'a BTreeMap<String, f64>,
    note: &'a Option<String>,
    parent: Option<u32>,
    proposed_by: &'a str,
    reason: &'a Option<String>,
    revision: &'a str,
    verdict: &'a str,
    verdict_set_by: Option<String>,
}

/// Every field of a [`MeasurementView`], keys sorted.
#[derive(Serialize)]
struct MeasurementJson<'a> {
    attempt: u32,
    candidate: u64,
    error: &'a Option<String>,
    evaluation: Option<u64>,
    evaluator: &'a str,
    evidence: &'a Option<String>,
    gpu_busy_seconds: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    held_gpus: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    held_seconds: Option<f64>,
    id: u64,
    metrics: &'a BTreeMap<String, f64>,
    pair: Option<u64>,
    rung: &'a Option<String>,
    sample: u32,
    seconds: Option<f64>,
    side: &'a str,
    started_at: Option<f64>,
    stderr_log: Option<&'a str>,
    stdout_log: Option<&'a str>,
    units: Option<&'a UnitValues>,
}

impl<'a> From<&'a MeasurementView> for MeasurementJson<'a> {
    fn from(m: &'a MeasurementView) -> Self {
        // Destructured so that a field added to the view is a compile error here.
        let MeasurementView {
            id,
            candidate,
            evaluation,
            seconds,
            error,
            pair,
            side,
            evaluator,
            rung,
            attempt,
            sample,
            started_at,
            metrics,
            evidence,
            gpu_busy_seconds,
            held_gpus,
            held_seconds,
        } = m;
        Self {
            attempt: *attempt,
            candidate: *candidate,
            error,
            evaluation: *evaluation,
            evaluator,
            evidence,
            gpu_busy_seconds: *gpu_busy_seconds,
            held_gpus: *held_gpus,
            held_seconds: *held_seconds,
            id: *id,
            metrics,
            pair: *pair,
            rung,
            sample: *sample,
            seconds: *seconds,
            side,
            started_at: *started_at,
            stderr_log: None,
            stdout_log: None,
            units: None,
        }
    }
}
