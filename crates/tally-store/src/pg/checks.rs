//! `impl CheckStore for PgStore` (`docs/campaign.md#checks`): one row per finished check run of
//! a candidate, written in one write transaction (its `id` handed out under the store's write
//! lock, so rows read back in the order they were recorded). The statements and row decoding
//! are the SQLite backend's (`crate::shared`).

use tally_contract::{CheckRecord, CheckStore};
use tally_model::{CampaignId, CandidateId};

use super::codec::big;
use super::ideas::all_rows;
use super::{PgStore, campaigns, next_id};
use crate::error::StoreError;
use crate::shared::checks as sql;
use crate::shared::dialect::dollar;

impl CheckStore for PgStore {
    fn record_check(&self, campaign: CampaignId, record: &CheckRecord) -> Result<(), StoreError> {
        self.write(|tx| {
            campaigns::require(tx, campaign)?;
            let id = next_id(tx, "checks")?;
            tx.execute(
                dollar(&sql::insert(true)).as_str(),
                &[
                    &id,
                    &big("campaign id", campaign.0)?,
                    &i64::from(record.candidate.0),
                    &record.key,
                    &i64::from(record.commands),
                    &i64::from(record.passed),
                    &record.failed_check,
                    &record.reason,
                    &record.started.0,
                    &record.ended.0,
                ],
            )?;
            Ok(())
        })
    }

    fn checks_of_candidate(
        &self,
        campaign: CampaignId,
        candidate: CandidateId,
    ) -> Result<Vec<CheckRecord>, StoreError> {
        self.read(|tx| {
            all_rows(
                tx,
                &sql::select_of_candidate("id"),
                &[&big("campaign id", campaign.0)?, &i64::from(candidate.0)],
                sql::from_row,
            )
        })
    }
}
