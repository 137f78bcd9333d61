//! Idea rows (`docs/implementers.md#ideas`): queueing (numbered per campaign from 1, the base
//! candidate checked), lookups, and state changes.

use rusqlite::{Connection, OptionalExtension, Row, params};
use tally_contract::{Idea, IdeaState, IdeaStore, NewIdea, NewRun, Run, RunSettlement, RunUsage};
use tally_model::{CampaignId, CandidateId, UnixMillis};

use super::{SqliteStore, campaigns, runs};
use crate::error::{Error, StoreError};

const COLUMNS: &str = "campaign_id, number, title, text, attempts, base, state, reason, \
                       added_by, created_ms, state_since_ms";

fn idea_from_row(row: &Row<'_>) -> rusqlite::Result<Idea> {
    let state: String = row.get(6)?;
    Ok(Idea {
        campaign: CampaignId(row.get(0)?),
        number: row.get(1)?,
        title: row.get(2)?,
        text: row.get(3)?,
        attempts: row.get(4)?,
        base: row.get::<_, Option<u32>>(5)?.map(CandidateId),
        state: IdeaState::parse(&state).ok_or_else(|| {
            rusqlite::Error::FromSqlConversionFailure(
                6,
                rusqlite::types::Type::Text,
                format!("unknown idea state {state:?}").into(),
            )
        })?,
        reason: row.get(7)?,
        added_by: row.get(8)?,
        created: UnixMillis(row.get(9)?),
        state_since: UnixMillis(row.get(10)?),
    })
}

fn get(conn: &Connection, campaign: CampaignId, number: u32) -> Result<Option<Idea>, Error> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM ideas WHERE campaign_id = ?1 AND number = ?2"
        ))?
        .query_row(params![campaign.0, number], idea_from_row)
        .optional()?)
}

fn add(conn: &Connection, campaign: CampaignId, new: &NewIdea) -> Result<Idea, Error> {
    campaigns::require(conn, campaign)?;
    if new.title.trim().is_empty() {
        return Err(StoreError::invalid(
            "idea title",
            "it is empty; give the idea a one-line title",
        )
        .into());
    }
    if new.attempts == Some(0) {
        return Err(StoreError::invalid("idea attempts", "0; allow at least 1").into());
    }
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
        .prepare_cached("SELECT COALESCE(MAX(number), 0) + 1 FROM ideas WHERE campaign_id = ?1")?
        .query_row([campaign.0], |row| row.get(0))?;
    conn.prepare_cached(&format!(
        "INSERT INTO ideas ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'ready', NULL, ?7, ?8, ?8)"
    ))?
    .execute(params![
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
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM ideas WHERE campaign_id = ?1 ORDER BY number"
            ))?;
            let rows = stmt.query_map([campaign.0], idea_from_row)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
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
            conn.prepare_cached(
                "UPDATE ideas SET state = ?3, reason = ?4, state_since_ms = ?5 \
                 WHERE campaign_id = ?1 AND number = ?2",
            )?
            .execute(params![campaign.0, number, state.as_str(), reason, at.0])?;
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
