//! `impl CheckStore for SqliteStore` (`docs/campaign.md#checks`): one row per finished check
//! run of a candidate, written in one transaction. The statements and row decoding are shared
//! with PostgreSQL (`crate::shared`).

use rusqlite::params;
use tally_contract::{CheckRecord, CheckStore};
use tally_model::{CampaignId, CandidateId};

use super::ideas::all_rows;
use super::{SqliteStore, campaigns};
use crate::error::StoreError;
use crate::shared::checks as sql;

impl CheckStore for SqliteStore {
    fn record_check(&self, campaign: CampaignId, record: &CheckRecord) -> Result<(), StoreError> {
        self.write(|conn| {
            campaigns::require(conn, campaign)?;
            conn.prepare_cached(&sql::insert(false))?.execute(params![
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
            all_rows(
                conn,
                &sql::select_of_candidate("rowid"),
                params![campaign.0, candidate.0],
                |row| sql::from_row(row),
            )
        })
    }
}
