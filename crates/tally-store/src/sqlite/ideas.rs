//! `impl IdeaStore for SqliteStore` (`docs/implementers.md#ideas`): ideas numbered per campaign
//! from 1 with the base candidate checked, state changes stamped; runs are in `runs`. The
//! statements, rules and row decoding are shared with PostgreSQL (`crate::shared`).

use rusqlite::{Connection, Params, params};
use tally_contract::{
    Idea, IdeaState, IdeaStore, NewIdea, NewRun, Run, RunCommit, RunSettlement, RunUsage,
};
use tally_model::{CampaignId, UnixMillis};

use super::{SqliteStore, campaigns, runs};
use crate::error::{Error, StoreError};
use crate::shared::ideas as sql;

/// Every row of a query, decoded by a shared decoder.
pub(super) fn all_rows<T>(
    conn: &Connection,
    query: &str,
    params: impl Params,
    decode: impl Fn(&rusqlite::Row<'_>) -> Result<T, Error>,
) -> Result<Vec<T>, Error> {
    let mut stmt = conn.prepare_cached(query)?;
    let mut rows = stmt.query(params)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        out.push(decode(row)?);
    }
    Ok(out)
}

/// The first row of a query, if any, decoded by a shared decoder.
pub(super) fn first_row<T>(
    conn: &Connection,
    query: &str,
    params: impl Params,
    decode: impl Fn(&rusqlite::Row<'_>) -> Result<T, Error>,
) -> Result<Option<T>, Error> {
    let mut stmt = conn.prepare_cached(query)?;
    let mut rows = stmt.query(params)?;
    rows.next()?.map(&decode).transpose()
}

fn get(conn: &Connection, campaign: CampaignId, number: u32) -> Result<Option<Idea>, Error> {
    first_row(
        conn,
        &sql::select_one(),
        params![campaign.0, number],
        |row| sql::from_row(row),
    )
}

fn add(conn: &Connection, campaign: CampaignId, new: &NewIdea) -> Result<Idea, Error> {
    campaigns::require(conn, campaign)?;
    sql::check_new(new)?;
    if let Some(base) = new.base {
        let exists: bool = conn
            .prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM candidates WHERE campaign_id = ?1 AND number = ?2)",
            )?
            .query_row(params![campaign.0, base.0], |row| row.get(0))?;
        if !exists {
            return Err(StoreError::NoSuchCandidate {
                campaign,
                candidate: base,
            }
            .into());
        }
    }
    let number: u32 = conn
        .prepare_cached(sql::NEXT_NUMBER)?
        .query_row([campaign.0], |row| row.get(0))?;
    conn.prepare_cached(&sql::insert())?.execute(params![
        campaign.0,
        number,
        new.title,
        new.text,
        new.attempts,
        new.base.map(|b| b.0),
        new.added_by,
        new.created.0,
    ])?;
    Ok(get(conn, campaign, number)?.expect("the idea was just inserted"))
}

impl IdeaStore for SqliteStore {
    fn add_idea(&self, campaign: CampaignId, new: &NewIdea) -> Result<Idea, StoreError> {
        self.write(|conn| add(conn, campaign, new))
    }

    fn idea(&self, campaign: CampaignId, number: u32) -> Result<Option<Idea>, StoreError> {
        self.read(|conn| get(conn, campaign, number))
    }

    fn list_ideas(&self, campaign: CampaignId) -> Result<Vec<Idea>, StoreError> {
        self.read(|conn| {
            campaigns::require(conn, campaign)?;
            all_rows(conn, &sql::select_all(), [campaign.0], |row| {
                sql::from_row(row)
            })
        })
    }

    fn set_idea_state(
        &self,
        campaign: CampaignId,
        number: u32,
        state: IdeaState,
        reason: Option<&str>,
        at: UnixMillis,
    ) -> Result<Option<Idea>, StoreError> {
        self.write(|conn| {
            campaigns::require(conn, campaign)?;
            conn.prepare_cached(sql::SET_STATE)?.execute(params![
                campaign.0,
                number,
                state.as_str(),
                reason,
                at.0
            ])?;
            get(conn, campaign, number)
        })
    }

    fn start_run(&self, campaign: CampaignId, new: &NewRun) -> Result<Run, StoreError> {
        self.write(|conn| runs::start(conn, campaign, new))
    }

    fn settle_run(
        &self,
        campaign: CampaignId,
        number: u32,
        settlement: &RunSettlement,
    ) -> Result<Run, StoreError> {
        self.write(|conn| runs::settle(conn, campaign, number, settlement))
    }

    fn append_run_commits(
        &self,
        campaign: CampaignId,
        number: u32,
        commits: &[RunCommit],
    ) -> Result<Run, StoreError> {
        self.write(|conn| runs::append_commits(conn, campaign, number, commits))
    }

    fn list_runs(&self, campaign: CampaignId) -> Result<Vec<Run>, StoreError> {
        self.read(|conn| runs::list(conn, campaign))
    }

    fn set_run_usage(
        &self,
        campaign: CampaignId,
        number: u32,
        usage: &RunUsage,
    ) -> Result<Option<Run>, StoreError> {
        self.write(|conn| runs::set_usage(conn, campaign, number, usage))
    }
}
