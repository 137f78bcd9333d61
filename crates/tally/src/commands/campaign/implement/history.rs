//! What earlier implementer runs left (`docs/implementers.md#history`): per run its idea, how it
//! ended, the verdicts of its commits' candidates and the agent's finding (the file
//! `$TALLY_FINDING_FILE` in the run's directory). It feeds the `runs` section of `tally status`
//! and `tally brief` (the last [`SHOWN_RUNS`] runs, newest first) and the "Earlier attempts" of an
//! idea's brief.

use std::collections::BTreeMap;
use std::path::Path;

use tally_model::{Campaign, CandidateId, Verdict};
use tally_plugin::{Block, Rendered, SectionOutput, Table};
use tally_store::ImplementerStore;

use super::agent::finding_file;

/// Runs the `runs` section shows.
pub const SHOWN_RUNS: usize = 8;

/// The place of the `runs` section on a surface: after the installed sections.
const RUNS_ORDER: u32 = 1000;

/// Bytes of a finding file read, at most.
const FINDING_BYTES: u64 = 16 * 1024;

/// One earlier run.
pub struct RunSummary {
    /// Its number.
    pub run: u32,
    /// Its idea's number and title.
    pub idea: (u32, String),
    /// How it ended (`running` while it runs).
    pub end: String,
    /// Its commits' candidates with their verdicts now, in commit order.
    pub candidates: Vec<(CandidateId, Verdict)>,
    /// What its agent wrote to its finding file, trimmed; `None` when it wrote nothing.
    pub finding: Option<String>,
}

impl RunSummary {
    /// The best verdict of its candidates: keep, then interesting, pending, discard, crash.
    pub fn best(&self) -> Option<Verdict> {
        let rank = |v: &Verdict| match v {
            Verdict::Keep => 0,
            Verdict::Interesting => 1,
            Verdict::Pending => 2,
            Verdict::Discard => 3,
            Verdict::Crash => 4,
        };
        self.candidates.iter().map(|(_, v)| *v).min_by_key(rank)
    }

    /// The first non-empty line of its finding.
    pub fn finding_line(&self) -> Option<&str> {
        self.finding
            .as_deref()
            .and_then(|f| f.lines().map(str::trim).find(|l| !l.is_empty()))
    }
}

/// Every run of the campaign, oldest first.
pub fn summaries(
    store: &dyn ImplementerStore,
    campaign: &Campaign,
) -> anyhow::Result<Vec<RunSummary>> {
    let titles: BTreeMap<u32, String> = store
        .list_ideas(campaign.id)?
        .into_iter()
        .map(|i| (i.number, i.title))
        .collect();
    let verdicts: BTreeMap<CandidateId, Verdict> = store
        .list_candidates(campaign.id)?
        .into_iter()
        .map(|c| (c.id, c.verdict))
        .collect();
    Ok(store
        .list_runs(campaign.id)?
        .into_iter()
        .map(|run| {
            let idea = run.started.idea;
            let (end, candidates) = match &run.settled {
                None => ("running".to_string(), Vec::new()),
                Some(s) => {
                    let mut seen = Vec::new();
                    for c in s.commits.iter().filter_map(|c| c.candidate) {
                        if !seen.iter().any(|(id, _)| *id == c) {
                            seen.push((c, verdicts.get(&c).copied().unwrap_or(Verdict::Pending)));
                        }
                    }
                    (s.end.as_str().to_string(), seen)
                }
            };
            RunSummary {
                run: run.number,
                idea: (idea, titles.get(&idea).cloned().unwrap_or_default()),
                end,
                candidates,
                finding: read_finding(Path::new(&run.started.run_dir)),
            }
        })
        .collect())
}

fn read_finding(run_dir: &Path) -> Option<String> {
    use std::io::Read as _;
    let file = std::fs::File::open(finding_file(run_dir)).ok()?;
    let mut bytes = Vec::new();
    file.take(FINDING_BYTES).read_to_end(&mut bytes).ok()?;
    let text = String::from_utf8_lossy(&bytes).trim().to_string();
    (!text.is_empty()).then_some(text)
}

/// The `runs` section: the last [`SHOWN_RUNS`] runs, newest first; `None` when there are none.
pub fn runs_section(summaries: &[RunSummary]) -> Option<SectionOutput> {
    if summaries.is_empty() {
        return None;
    }
    let rows = summaries
        .iter()
        .rev()
        .take(SHOWN_RUNS)
        .map(|r| {
            vec![
                format!("run#{}", r.run),
                format!("idea#{} {}", r.idea.0, r.idea.1),
                r.end.clone(),
                r.best().map_or("—".into(), |v| v.as_str().to_string()),
                r.finding_line().unwrap_or("—").to_string(),
            ]
        })
        .collect();
    let mut blocks = vec![Block::Table(Table {
        columns: ["run", "idea", "end", "best verdict", "finding"]
            .map(String::from)
            .to_vec(),
        rows,
    })];
    if summaries.len() > SHOWN_RUNS {
        blocks.push(Block::Text(format!(
            "{} earlier run(s) not shown: `tally implementer list`",
            summaries.len() - SHOWN_RUNS
        )));
    }
    Some(SectionOutput::new(
        "runs",
        RUNS_ORDER,
        Ok(Some(Rendered {
            title: "Implementer runs".into(),
            blocks,
        })),
    ))
}

/// The "Earlier attempts" part of an idea's brief: each earlier run of the idea, oldest first,
/// with its end, its candidates' verdicts and its whole finding; `None` when it has none.
pub fn earlier_attempts(summaries: &[RunSummary], idea: u32) -> Option<String> {
    let runs: Vec<&RunSummary> = summaries.iter().filter(|r| r.idea.0 == idea).collect();
    if runs.is_empty() {
        return None;
    }
    let mut out = String::from("### Earlier attempts of this idea\n\n");
    for r in runs {
        let commits = if r.candidates.is_empty() {
            "no candidate".to_string()
        } else {
            r.candidates
                .iter()
                .map(|(c, v)| format!("{c} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        out.push_str(&format!("- run#{}: ended {}; {commits}\n", r.run, r.end));
        match &r.finding {
            Some(finding) => {
                for line in finding.lines() {
                    out.push_str(&format!("  > {line}\n"));
                }
            }
            None => out.push_str("  (no finding)\n"),
        }
    }
    Some(out)
}
