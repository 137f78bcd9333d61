//! Implementer run rows (`docs/implementers.md#runs`, `#usage`) on either backend: inserted
//! before the agent starts (so a run is never unrecorded), settled once with its end and
//! commits (a JSON list), usage recorded or replaced; the statements and row decoding.

use serde_json::{Value, json};
use tally_contract::{NewRun, Run, RunCommit, RunEnd, RunSettlement, RunUsage};
use tally_model::{CampaignId, CandidateId, UnixMillis};

use super::dialect::Cells;
use crate::error::{Error, StoreError};

const COLUMNS: &str = "campaign_id, number, idea, base, tag, run_dir, started_ms, deadline_ms, \
                       end_reason, exit_code, error, commits, ended_ms, usage_input, usage_output, \
                       usage_cached, usage_usd, usage_source, usage_usd_source";

/// One run: `?1` campaign, `?2` number.
pub(crate) fn select_one() -> String {
    format!("SELECT {COLUMNS} FROM runs WHERE campaign_id = ?1 AND number = ?2")
}

/// Every run of campaign `?1`, by number.
pub(crate) fn select_all() -> String {
    format!("SELECT {COLUMNS} FROM runs WHERE campaign_id = ?1 ORDER BY number")
}

/// The number the next run of campaign `?1` gets (run under the store's write lock).
pub(crate) const NEXT_NUMBER: &str =
    "SELECT COALESCE(MAX(number), 0) + 1 FROM runs WHERE campaign_id = ?1";

/// A started run: campaign, number, idea, base, tag, run_dir, started, deadline.
pub(crate) const INSERT: &str = "INSERT INTO runs (campaign_id, number, idea, base, tag, \
                                 run_dir, started_ms, deadline_ms) \
                                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";

/// Settles a running run: campaign, number, end, exit code, error, commits JSON, ended. Changes
/// no row when the run is missing or settled already.
pub(crate) const SETTLE: &str = "UPDATE runs SET end_reason = ?3, exit_code = ?4, error = ?5, \
                                 commits = ?6, ended_ms = ?7 \
                                 WHERE campaign_id = ?1 AND number = ?2 AND end_reason IS NULL";

/// Replaces a settled run's commits: campaign, number, commits JSON. Changes no row when the
/// run is missing or still running.
pub(crate) const SET_COMMITS: &str = "UPDATE runs SET commits = ?3 \
                                      WHERE campaign_id = ?1 AND number = ?2 \
                                      AND end_reason IS NOT NULL";

/// Why an append to a run's commits changed nothing.
pub(crate) fn not_appendable(number: u32) -> StoreError {
    StoreError::invalid(
        format!("run#{number}"),
        "it does not exist or is still running; only a settled run's commits are appended to",
    )
}

/// Records a run's usage: campaign, number, input, output, cached, usd, source, usd source.
pub(crate) const SET_USAGE: &str = "UPDATE runs SET usage_input = ?3, usage_output = ?4, \
                                    usage_cached = ?5, usage_usd = ?6, usage_source = ?7, \
                                    usage_usd_source = ?8 \
                                    WHERE campaign_id = ?1 AND number = ?2";

/// Why [`SETTLE`] changed nothing.
pub(crate) fn not_settleable(number: u32) -> StoreError {
    StoreError::invalid(
        format!("run#{number}"),
        "it does not exist or is settled already",
    )
}

/// A token count as stored (saturating: no harness reports 2^63 tokens).
pub(crate) fn stored_count(n: Option<u64>) -> Option<i64> {
    n.map(|n| i64::try_from(n).unwrap_or(i64::MAX))
}

/// The USD source as stored: none without a USD figure.
pub(crate) fn stored_usd_source(usage: &RunUsage) -> Option<&str> {
    usage.usd.and(usage.usd_source.as_deref())
}

/// A run's commits as the stored JSON list.
pub(crate) fn commits_to_json(commits: &[RunCommit]) -> String {
    Value::Array(
        commits
            .iter()
            .map(|c| json!({"revision": c.revision, "candidate": c.candidate.map(|x| x.0), "note": c.note}))
            .collect(),
    )
    .to_string()
}

fn commits_from_json(text: &str) -> Vec<RunCommit> {
    let value: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|c| RunCommit {
                    revision: c["revision"].as_str().unwrap_or_default().to_owned(),
                    candidate: c["candidate"]
                        .as_u64()
                        .and_then(|n| u32::try_from(n).ok())
                        .map(CandidateId),
                    note: c["note"].as_str().unwrap_or_default().to_owned(),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A row of [`select_one`] / [`select_all`].
pub(crate) fn from_row(row: &impl Cells) -> Result<Run, Error> {
    let end = row.text(8)?;
    let commits = row.string(11, "run commits")?;
    let ended = row.int(12)?;
    Ok(Run {
        campaign: CampaignId(row.number(0, "run campaign")?),
        number: row.number(1, "run number")?,
        started: NewRun {
            idea: row.number(2, "run idea")?,
            base: CandidateId(row.number(3, "run base")?),
            tag: row.string(4, "run tag")?,
            run_dir: row.string(5, "run run_dir")?,
            started: UnixMillis(row.number(6, "run started_ms")?),
            deadline: UnixMillis(row.number(7, "run deadline_ms")?),
        },
        settled: match (end.as_deref().and_then(RunEnd::parse), ended) {
            (Some(end), Some(ended)) => Some(RunSettlement {
                end,
                exit_code: row.opt_number(9, "run exit_code")?,
                error: row.text(10)?,
                commits: commits_from_json(&commits),
                ended: UnixMillis(ended),
            }),
            _ => None,
        },
        usage: usage_from_row(row)?,
    })
}

fn usage_from_row(row: &impl Cells) -> Result<Option<RunUsage>, Error> {
    let Some(source) = row.text(17)? else {
        return Ok(None);
    };
    let count = |idx| -> Result<Option<u64>, Error> {
        Ok(row.int(idx)?.and_then(|n| u64::try_from(n).ok()))
    };
    Ok(Some(RunUsage {
        input: count(13)?,
        output: count(14)?,
        cached: count(15)?,
        usd: row.real(16)?,
        source,
        usd_source: row.text(18)?,
    }))
}
