//! Implementer run rows (`docs/implementers.md#runs`): inserted before the agent starts (so a
//! run is never unrecorded), settled once with its end and commits (a JSON list).

use rusqlite::{Connection, OptionalExtension, Row, params};
use serde_json::{Value, json};
use tally_contract::{NewRun, Run, RunCommit, RunEnd, RunSettlement, RunUsage};
use tally_model::{CampaignId, CandidateId, UnixMillis};

use super::campaigns;
use crate::error::{Error, StoreError};

const COLUMNS: &str = "campaign_id, number, idea, base, tag, run_dir, started_ms, deadline_ms, \
                       end_reason, exit_code, error, commits, ended_ms, usage_input, usage_output, \
                       usage_cached, usage_usd, usage_source, usage_usd_source";

fn commits_to_json(commits: &[RunCommit]) -> String {
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

fn run_from_row(row: &Row<'_>) -> rusqlite::Result<Run> {
    let end: Option<String> = row.get(8)?;
    let commits: String = row.get(11)?;
    let ended: Option<i64> = row.get(12)?;
    Ok(Run {
        campaign: CampaignId(row.get(0)?),
        number: row.get(1)?,
        started: NewRun {
            idea: row.get(2)?,
            base: CandidateId(row.get(3)?),
            tag: row.get(4)?,
            run_dir: row.get(5)?,
            started: UnixMillis(row.get(6)?),
            deadline: UnixMillis(row.get(7)?),
        },
        settled: match (end.as_deref().and_then(RunEnd::parse), ended) {
            (Some(end), Some(ended)) => Some(RunSettlement {
                end,
                exit_code: row.get(9)?,
                error: row.get(10)?,
                commits: commits_from_json(&commits),
                ended: UnixMillis(ended),
            }),
            _ => None,
        },
        usage: usage_from_row(row)?,
    })
}

fn count(row: &Row<'_>, index: usize) -> rusqlite::Result<Option<u64>> {
    Ok(row
        .get::<_, Option<i64>>(index)?
        .and_then(|n| u64::try_from(n).ok()))
}

fn usage_from_row(row: &Row<'_>) -> rusqlite::Result<Option<RunUsage>> {
    let source: Option<String> = row.get(17)?;
    Ok(match source {
        None => None,
        Some(source) => Some(RunUsage {
            input: count(row, 13)?,
            output: count(row, 14)?,
            cached: count(row, 15)?,
            usd: row.get(16)?,
            source,
            usd_source: row.get(18)?,
        }),
    })
}

fn stored_count(n: Option<u64>) -> Option<i64> {
    n.map(|n| i64::try_from(n).unwrap_or(i64::MAX))
}

pub(super) fn set_usage(
    conn: &Connection,
    campaign: CampaignId,
    number: u32,
    u: &RunUsage,
) -> Result<Option<Run>, Error> {
    campaigns::require(conn, campaign)?;
    conn.prepare_cached(
        "UPDATE runs SET usage_input = ?3, usage_output = ?4, usage_cached = ?5, usage_usd = ?6, \
         usage_source = ?7, usage_usd_source = ?8 WHERE campaign_id = ?1 AND number = ?2",
    )?
    .execute(params![
        campaign.0,
        number,
        stored_count(u.input),
        stored_count(u.output),
        stored_count(u.cached),
        u.usd,
        u.source,
        u.usd.and(u.usd_source.as_deref()),
    ])?;
    get(conn, campaign, number)
}

pub(super) fn get(
    conn: &Connection,
    campaign: CampaignId,
    number: u32,
) -> Result<Option<Run>, Error> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM runs WHERE campaign_id = ?1 AND number = ?2"
        ))?
        .query_row(params![campaign.0, number], run_from_row)
        .optional()?)
}

pub(super) fn start(conn: &Connection, campaign: CampaignId, new: &NewRun) -> Result<Run, Error> {
    campaigns::require(conn, campaign)?;
    let number: u32 = conn
        .prepare_cached("SELECT COALESCE(MAX(number), 0) + 1 FROM runs WHERE campaign_id = ?1")?
        .query_row([campaign.0], |row| row.get(0))?;
    conn.prepare_cached(
        "INSERT INTO runs (campaign_id, number, idea, base, tag, run_dir, started_ms, deadline_ms) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        campaign.0,
        number,
        new.idea,
        new.base.0,
        new.tag,
        new.run_dir,
        new.started.0,
        new.deadline.0,
    ])?;
    Ok(get(conn, campaign, number)?.expect("the run was just inserted"))
}

pub(super) fn settle(
    conn: &Connection,
    campaign: CampaignId,
    number: u32,
    s: &RunSettlement,
) -> Result<Run, Error> {
    let changed = conn
        .prepare_cached(
            "UPDATE runs SET end_reason = ?3, exit_code = ?4, error = ?5, commits = ?6, \
             ended_ms = ?7 WHERE campaign_id = ?1 AND number = ?2 AND end_reason IS NULL",
        )?
        .execute(params![
            campaign.0,
            number,
            s.end.as_str(),
            s.exit_code,
            s.error,
            commits_to_json(&s.commits),
            s.ended.0,
        ])?;
    if changed == 0 {
        return Err(StoreError::invalid(
            format!("run#{number}"),
            "it does not exist or is settled already",
        )
        .into());
    }
    Ok(get(conn, campaign, number)?.expect("the run exists"))
}

pub(super) fn list(conn: &Connection, campaign: CampaignId) -> Result<Vec<Run>, Error> {
    campaigns::require(conn, campaign)?;
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM runs WHERE campaign_id = ?1 ORDER BY number"
    ))?;
    let rows = stmt.query_map([campaign.0], run_from_row)?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}
