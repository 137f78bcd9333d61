//! Implementer run rows on SQLite (`docs/implementers.md#runs`): started, settled once, usage
//! recorded. The statements and row decoding are shared with PostgreSQL (`crate::shared`).

use rusqlite::{Connection, params};
use tally_contract::{NewRun, Run, RunCommit, RunSettlement, RunUsage};
use tally_model::CampaignId;

use super::campaigns;
use super::ideas::{all_rows, first_row};
use crate::error::Error;
use crate::shared::runs as sql;

pub(super) fn set_usage(
    conn: &Connection,
    campaign: CampaignId,
    number: u32,
    u: &RunUsage,
) -> Result<Option<Run>, Error> {
    campaigns::require(conn, campaign)?;
    conn.prepare_cached(sql::SET_USAGE)?.execute(params![
        campaign.0,
        number,
        sql::stored_count(u.input),
        sql::stored_count(u.output),
        sql::stored_count(u.cached),
        u.usd,
        u.source,
        sql::stored_usd_source(u),
    ])?;
    get(conn, campaign, number)
}

pub(super) fn get(
    conn: &Connection,
    campaign: CampaignId,
    number: u32,
) -> Result<Option<Run>, Error> {
    first_row(
        conn,
        &sql::select_one(),
        params![campaign.0, number],
        |row| sql::from_row(row),
    )
}

pub(super) fn start(conn: &Connection, campaign: CampaignId, new: &NewRun) -> Result<Run, Error> {
    campaigns::require(conn, campaign)?;
    let number: u32 = conn
        .prepare_cached(sql::NEXT_NUMBER)?
        .query_row([campaign.0], |row| row.get(0))?;
    conn.prepare_cached(sql::INSERT)?.execute(params![
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
    let changed = conn.prepare_cached(sql::SETTLE)?.execute(params![
        campaign.0,
        number,
        s.end.as_str(),
        s.exit_code,
        s.error,
        sql::commits_to_json(&s.commits),
        s.ended.0,
    ])?;
    if changed == 0 {
        return Err(sql::not_settleable(number).into());
    }
    Ok(get(conn, campaign, number)?.expect("the run exists"))
}

pub(super) fn append_commits(
    conn: &Connection,
    campaign: CampaignId,
    number: u32,
    more: &[RunCommit],
) -> Result<Run, Error> {
    let Some(settled) = get(conn, campaign, number)?.and_then(|r| r.settled) else {
        return Err(sql::not_appendable(number).into());
    };
    let mut commits = settled.commits;
    commits.extend_from_slice(more);
    let changed = conn.prepare_cached(sql::SET_COMMITS)?.execute(params![
        campaign.0,
        number,
        sql::commits_to_json(&commits),
    ])?;
    if changed == 0 {
        return Err(sql::not_appendable(number).into());
    }
    Ok(get(conn, campaign, number)?.expect("the run exists"))
}

pub(super) fn list(conn: &Connection, campaign: CampaignId) -> Result<Vec<Run>, Error> {
    campaigns::require(conn, campaign)?;
    all_rows(conn, &sql::select_all(), [campaign.0], |row| {
        sql::from_row(row)
    })
}
