//! `[checks]` runs (`docs/campaign.md#checks`): one row per finished check run of a candidate,
//! written in one transaction after its last command ended.

use rusqlite::{Row, params};
use tally_contract::{CheckRecord, CheckStore};
use tally_model::{CampaignId, CandidateId, UnixMillis};

use super::{SqliteStore, campaigns};
use crate::error::StoreError;

fn record_from_row(row: &Row<'_>) -> rusqlite::Result<CheckRecord> {
    Ok(CheckRecord {
        candidate: CandidateId(row.get(0)?),
        key: row.get(1)?,
        commands: row.get(2)?,
        passed: row.get::<_, i64>(3)? == 1,
        failed_check: row.get(4)?,
        reason: row.get(5)?,
        started: UnixMillis(row.get(6)?),
        ended: UnixMillis(row.get(7)?),
    })
}

impl CheckStore for SqliteStore {
    fn record_check(&self, campaign: CampaignId, record: &CheckRecord) -> Result<(), StoreError> {
        self.write(|conn| {
            campaigns::require(conn, campaign)?;
            conn.prepare_cached(
                "INSERT INTO checks (campaign_id, candidate, checks_key, commands, passed, \
                 failed_check, reason, started_ms, ended_ms) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )?
            .execute(params![
                campaign.0,
                record.candidate.0,
                record.key,
                record.commands,
                i64::from(record.passed),
                record.failed_check,
                record.reason,
                record.started.0,
                record.ended.0,
            ])?;
            Ok(())
        })
    }

    fn checks_of_candidate(
        &self,
        campaign: CampaignId,
        candidate: CandidateId,
    ) -> Result<Vec<CheckRecord>, StoreError> {
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT candidate, checks_key, commands, passed, failed_check, reason, \
                 started_ms, ended_ms FROM checks WHERE campaign_id = ?1 AND candidate = ?2 \
                 ORDER BY rowid",
            )?;
            let rows = stmt.query_map(params![campaign.0, candidate.0], record_from_row)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }
}
