//! Aggregate and bulk reads on PostgreSQL: the counts and sums facts and stop rules need
//! ([`CampaignTotals`]), the durations of the latest evaluations (for `reserve` projections),
//! and the whole-campaign snapshot `tally status` renders from.
//!
//! The same aggregates as the SQLite backend's `totals` module, computed in SQL.

use postgres::Transaction;
use tally_contract::{CampaignSnapshot, CampaignTotals, EvaluationDuration};
use tally_model::{CampaignId, EvaluationId, EvaluationState, UnixMillis, Verdict};

use super::codec::{big, get, unsigned};
use super::{campaigns, candidates, evaluations, measurements};
use crate::error::{Error, StoreError};

pub(super) fn totals(
    tx: &mut Transaction<'_>,
    campaign: CampaignId,
) -> Result<CampaignTotals, Error> {
    campaigns::require(tx, campaign)?;
    let key = big("campaign id", campaign.0)?;
    let mut totals = CampaignTotals::default();

    let rows = tx.query(
        "SELECT verdict, COUNT(*) FROM candidates WHERE campaign_id = $1 GROUP BY verdict",
        &[&key],
    )?;
    for row in &rows {
        let count: u64 = unsigned(row, 1, "count")?;
        let counts = &mut totals.verdicts;
        let word: &str = get(row, 0)?;
        match Verdict::parse(word) {
            Some(Verdict::Pending) => counts.pending = count,
            Some(Verdict::Keep) => counts.keep = count,
            Some(Verdict::Interesting) => counts.interesting = count,
            Some(Verdict::Discard) => counts.discard = count,
            Some(Verdict::Crash) => counts.crash = count,
            None => {
                return Err(StoreError::invalid(
                    "stored verdict",
                    format!("unknown word {word:?}"),
                )
                .into());
            }
        }
    }

    totals.judged_since_last_keep = unsigned(
        &tx.query_one(
            "SELECT COUNT(*) FROM candidates WHERE campaign_id = $1 AND verdict <> 'pending' \
             AND number > COALESCE((SELECT MAX(number) FROM candidates \
                                    WHERE campaign_id = $1 AND verdict = 'keep'), -1)",
            &[&key],
        )?,
        0,
        "count",
    )?;

    // SUM over BIGINT is NUMERIC in PostgreSQL: cast back (durations are checked < 2^63 each).
    let row = tx.query_one(
        "SELECT COUNT(*), COUNT(error), COALESCE(SUM(duration_ns), 0)::BIGINT, MIN(started_ms) \
         FROM measurements WHERE campaign_id = $1",
        &[&key],
    )?;
    totals.measurements = unsigned(&row, 0, "count")?;
    totals.failed_measurements = unsigned(&row, 1, "count")?;
    totals.duration_ns = unsigned(&row, 2, "duration sum")?;
    totals.first_measurement_started = get::<Option<i64>>(&row, 3)?.map(UnixMillis);

    let rows = tx.query(
        "SELECT state, COUNT(*), MIN(started_ms) FROM evaluations WHERE campaign_id = $1 \
         GROUP BY state",
        &[&key],
    )?;
    for row in &rows {
        let count: u64 = unsigned(row, 1, "count")?;
        let counts = &mut totals.evaluations;
        let word: &str = get(row, 0)?;
        match EvaluationState::parse(word) {
            Some(EvaluationState::Queued) => counts.queued = count,
            Some(EvaluationState::Running) => counts.running = count,
            Some(EvaluationState::Finished) => counts.finished = count,
            Some(EvaluationState::Abandoned) => counts.abandoned = count,
            None => {
                return Err(StoreError::invalid(
                    "stored evaluation state",
                    format!("unknown word {word:?}"),
                )
                .into());
            }
        }
        if let Some(started) = get::<Option<i64>>(row, 2)?.map(UnixMillis) {
            let first = &mut totals.first_evaluation_started;
            *first = Some(first.map_or(started, |f| f.min(started)));
        }
    }
    Ok(totals)
}

pub(super) fn recent_evaluation_durations(
    tx: &mut Transaction<'_>,
    campaign: CampaignId,
    limit: u32,
) -> Result<Vec<EvaluationDuration>, Error> {
    campaigns::require(tx, campaign)?;
    let rows = tx.query(
        "WITH recent AS (SELECT id FROM evaluations WHERE campaign_id = $1 AND state = 'finished' \
                         ORDER BY id DESC LIMIT $2) \
         SELECT r.id, COALESCE(SUM(m.duration_ns), 0)::BIGINT, COUNT(m.id) FROM recent r \
         LEFT JOIN measurements m ON m.evaluation_id = r.id \
         GROUP BY r.id ORDER BY r.id DESC",
        &[&big("campaign id", campaign.0)?, &i64::from(limit)],
    )?;
    rows.iter()
        .map(|row| {
            Ok(EvaluationDuration {
                evaluation: EvaluationId(unsigned(row, 0, "evaluation id")?),
                duration_ns: unsigned(row, 1, "duration sum")?,
                measurements: unsigned(row, 2, "count")?,
            })
        })
        .collect()
}

pub(super) fn snapshot(
    tx: &mut Transaction<'_>,
    campaign: CampaignId,
) -> Result<CampaignSnapshot, Error> {
    Ok(CampaignSnapshot {
        campaign: campaigns::require(tx, campaign)?,
        candidates: candidates::list(tx, campaign)?,
        measurements: measurements::of_campaign(tx, campaign)?,
        evaluations: evaluations::list(tx, campaign)?,
    })
}
