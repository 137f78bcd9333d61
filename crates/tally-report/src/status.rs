//! `tally status` (`docs/campaign.md#commands`): the terminal text — the campaign and its state on
//! one line, one line per fact source that failed, then the sections ([`terminal`](crate::terminal))
//! — and the `--json` object with the campaign, head, facts, every candidate with its
//! measurements, and the sections ([`json`](crate::json)).

use std::collections::HashMap;
use std::io::{self, Write};

use serde::Serialize;
use tally_plugin::{CampaignData, Facts, MeasurementView, SectionOutput};

use crate::json::sections_json;

/// What `tally status` shows, as the engine's status report holds it.
#[derive(Clone, Copy, Debug)]
pub struct StatusView<'a> {
    /// The campaign, its candidates (oldest first) and their measurements.
    pub data: &'a CampaignData,
    /// Every fact supplied now.
    pub facts: &'a Facts,
    /// The errors of fact sources that failed, one sentence each.
    pub fact_errors: &'a [String],
    /// The sections of the surface, in display order.
    pub sections: &'a [SectionOutput],
}

/// The terminal text: ``campaign `NAME` · STATE[: REASON]``, a `fact source failed: ...` line per
/// failed fact source, a blank line, then the sections.
pub fn text(status: &StatusView<'_>) -> String {
    let campaign = &status.data.campaign;
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
    for e in status.fact_errors {
        text.push_str(&format!("fact source failed: {e}\n"));
    }
    text.push('\n');
    text.push_str(&crate::terminal(status.sections));
    text
}

/// The campaign of the object: `{"evaluator", "name", "reason", "state"}`.
#[derive(Serialize)]
struct CampaignJson<'a> {
    evaluator: &'a str,
    name: &'a str,
    reason: &'a Option<String>,
    state: &'a str,
}

/// The head of the object: `{"candidate", "revision"}`, or null.
#[derive(Serialize)]
struct HeadJson<'a> {
    candidate: u64,
    revision: &'a str,
}

/// Writes `tally status --json` to `out` (no newline after it): one object, keys in
/// alphabetical order at every level (as a `serde_json::Value` prints them): `campaign`,
/// `candidates`, `fact_errors`, `facts`, `head`, `sections`.
///
/// Candidates and each one's measurements keep the order they are given in (oldest first); a
/// measurement of no listed candidate is left out. The small parts (campaign, head, sections) are
/// typed structs; the candidates and their measurements — 100,000 measurements make a 25 MB
/// object — are written with their keys as fixed bytes around values serialised by serde_json,
/// streamed straight from the view: no JSON tree, and no escaping of the fixed keys (a derived
/// struct per measurement took half as many instructions again to print them). The test below
/// compares the streamed object with the one-piece typed object.
pub fn write_json(out: &mut impl Write, status: &StatusView<'_>) -> io::Result<()> {
    let data = status.data;
    let campaign = &data.campaign;
    out.write_all(b"{\"campaign\":")?;
    json(
        out,
        &CampaignJson {
            evaluator: &campaign.evaluator,
            name: &campaign.name,
            reason: &campaign.reason,
            state: &campaign.state,
        },
    )?;
    out.write_all(b",\"candidates\":[")?;
    let lists = measurements_by_candidate(data);
    for (n, (c, list)) in data.candidates.iter().zip(&lists).enumerate() {
        if n > 0 {
            out.write_all(b",")?;
        }
        out.write_all(b"{\"id\":")?;
        json(out, &c.id)?;
        out.write_all(b",\"judged_against\":")?;
        json(out, &c.judged_against)?;
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
    json(out, &status.fact_errors)?;
    out.write_all(b",\"facts\":")?;
    json(out, status.facts)?;
    out.write_all(b",\"head\":")?;
    json(out, &head(data))?;
    out.write_all(b",\"sections\":")?;
    json(out, &sections_json(status.sections))?;
    out.write_all(b"}")
}

/// The head candidate, when the campaign has one and it is listed.
fn head(data: &CampaignData) -> Option<HeadJson<'_>> {
    let head = data.campaign.head?;
    let c = data.candidates.iter().find(|c| c.id == head)?;
    Some(HeadJson {
        candidate: c.id,
        revision: &c.revision,
    })
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
fn measurements_by_candidate(data: &CampaignData) -> Vec<Vec<usize>> {
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use tally_plugin::{
        Block, CampaignSummary, CandidateView, Figure, ProviderError, Rendered, Table,
    };

    use super::*;

    /// The whole object, key by key in alphabetical order: what [`write_json`] streams.
    #[derive(Serialize)]
    struct StatusJson<'a> {
        campaign: CampaignJson<'a>,
        candidates: Vec<CandidateJson<'a>>,
        fact_errors: &'a [String],
        facts: &'a Facts,
        head: Option<HeadJson<'a>>,
        sections: Vec<crate::json::SectionJson<'a>>,
    }

    #[derive(Serialize)]
    struct CandidateJson<'a> {
        id: u64,
        judged_against: Option<u64>,
        measurements: Vec<MeasurementJson<'a>>,
        metrics: &'a BTreeMap<String, f64>,
        parent: Option<u64>,
        proposed_by: &'a str,
        reason: &'a Option<String>,
        revision: &'a str,
        verdict: &'a str,
    }

    #[derive(Serialize)]
    struct MeasurementJson<'a> {
        attempt: u32,
        error: &'a Option<String>,
        evaluation: Option<u64>,
        evaluator: &'a str,
        evidence: &'a Option<String>,
        gpu_busy_seconds: Option<f64>,
        id: u64,
        metrics: &'a BTreeMap<String, f64>,
        pair: Option<u64>,
        rung: &'a Option<String>,
        sample: u32,
        seconds: Option<f64>,
        side: &'a str,
    }

    fn one_piece<'a>(status: &StatusView<'a>) -> StatusJson<'a> {
        let data = status.data;
        let campaign = &data.campaign;
        StatusJson {
            campaign: CampaignJson {
                evaluator: &campaign.evaluator,
                name: &campaign.name,
                reason: &campaign.reason,
                state: &campaign.state,
            },
            candidates: data
                .candidates
                .iter()
                .map(|c| CandidateJson {
                    id: c.id,
                    judged_against: c.judged_against,
                    measurements: data
                        .measurements
                        .iter()
                        .filter(|m| m.candidate == c.id)
                        .map(|m| MeasurementJson {
                            attempt: m.attempt,
                            error: &m.error,
                            evaluation: m.evaluation,
                            evaluator: &m.evaluator,
                            evidence: &m.evidence,
                            gpu_busy_seconds: m.gpu_busy_seconds,
                            id: m.id,
                            metrics: &m.metrics,
                            pair: m.pair,
                            rung: &m.rung,
                            sample: m.sample,
                            seconds: m.seconds,
                            side: &m.side,
                        })
                        .collect(),
                    metrics: &c.metrics,
                    parent: c.parent,
                    proposed_by: &c.proposed_by,
                    reason: &c.reason,
                    revision: &c.revision,
                    verdict: &c.verdict,
                })
                .collect(),
            fact_errors: status.fact_errors,
            facts: status.facts,
            head: head(data),
            sections: sections_json(status.sections),
        }
    }

    fn candidate(id: u64, verdict: &str, reason: Option<&str>) -> CandidateView {
        CandidateView {
            id,
            revision: format!("{id:040x}"),
            parent: id.checked_sub(1),
            verdict: verdict.into(),
            reason: reason.map(Into::into),
            judged_against: id.checked_sub(1),
            proposed_by: "Ada \"the tuner\"".into(),
            metrics: BTreeMap::from([("tok_s".to_string(), 1000.0 + id as f64 / 3.0)]),
        }
    }

    fn measurement(id: u64, candidate: u64, error: Option<&str>) -> MeasurementView {
        let side = ["candidate", "bar"][(id % 2) as usize];
        MeasurementView {
            id,
            candidate,
            evaluation: Some(candidate),
            seconds: Some(1.25 + id as f64 / 7.0),
            error: error.map(Into::into),
            pair: (id > 0).then(|| id - 1),
            side: side.into(),
            evaluator: "ev-0123456789abcdef".into(),
            rung: (id == 3).then(|| "smoke".into()),
            attempt: 1 + u32::from(id == 4),
            sample: (id % 3) as u32,
            started_at: Some(1.7e9),
            metrics: BTreeMap::from([
                ("p50_ms".to_string(), -0.0),
                ("tok_s".to_string(), 1e-7 * id as f64),
            ]),
            evidence: (id == 2).then(|| "/tmp/ev\\idence.jsonl".into()),
            gpu_busy_seconds: (id == 2).then_some(0.5),
            held_gpus: None,
            held_seconds: None,
        }
    }

    fn data(candidate_ids: &[u64], head: Option<u64>) -> CampaignData {
        CampaignData {
            campaign: CampaignSummary {
                name: "serving".into(),
                state: "held".into(),
                reason: Some("hold_at: gpu_usd 41.20 ≥ 40".into()),
                head,
                baseline: Some(0),
                queued: Vec::new(),
                evaluator: "ev-0123456789abcdef".into(),
                metrics: Vec::new(),
                first_evaluation_at: None,
                stop_rule: serde_json::json!({"provider": "limits"}),
            },
            candidates: candidate_ids
                .iter()
                .map(|&id| candidate(id, if id == 1 { "keep" } else { "pending" }, None))
                .collect(),
            measurements: vec![
                measurement(0, 0, None),
                measurement(1, 1, None),
                measurement(2, 0, None),
                measurement(3, 9, None),
                measurement(4, 1, Some("exit 3; stderr: \"boom\"\n")),
                measurement(5, 2, None),
            ],
            agent_runs: Vec::new(),
        }
    }

    fn sections() -> Vec<SectionOutput> {
        let rendered = Rendered {
            title: "serving".into(),
            blocks: vec![
                Block::Figures(vec![Figure {
                    label: "gpu_hours".into(),
                    value: "16.48".into(),
                    unit: "h".into(),
                }]),
                Block::Table(Table {
                    columns: vec!["candidate".into()],
                    rows: vec![vec!["#1".into()]],
                }),
                Block::List(vec!["a".into()]),
                Block::Text("t".into()),
            ],
        };
        vec![
            SectionOutput::new("headline", 100, Ok(Some(rendered))),
            SectionOutput::new("evaluations", 170, Ok(None)),
            SectionOutput::new(
                "exec",
                176,
                Err(ProviderError::new("exec ./s.py", "timed out")),
            ),
        ]
    }

    fn streamed(status: &StatusView<'_>) -> String {
        let mut out = Vec::new();
        write_json(&mut out, status).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn the_streamed_object_is_the_one_piece_object_with_sorted_keys() {
        let facts = Facts::from([("gpu_usd".to_string(), 41.2), ("hours".to_string(), 0.0)]);
        let fact_errors = vec!["gpu_hours: \"boom\"".to_string()];
        let sections = sections();
        // Candidates in id order (binary search), out of order (index), a head that is listed,
        // one that is not, none; a measurement of an unlisted candidate (9) is left out.
        for (ids, head) in [
            (vec![0, 1, 2], Some(1)),
            (vec![2, 0, 1], Some(7)),
            (vec![], None),
        ] {
            let data = data(&ids, head);
            let status = StatusView {
                data: &data,
                facts: &facts,
                fact_errors: &fact_errors,
                sections: &sections,
            };
            let whole = one_piece(&status);
            let expected = serde_json::to_string(&whole).unwrap();
            assert_eq!(streamed(&status), expected);
            // Declared in alphabetical order at every level: as a `Value` (whose keys sort)
            // prints it.
            assert_eq!(serde_json::to_value(&whole).unwrap().to_string(), expected);
        }
    }
}
