//! Aggregate and bulk reads: the counts and sums facts and stop rules need
//! ([`CampaignTotals`]), the durations of the latest evaluations (for `reserve` projections),
//! and the whole-campaign snapshot `tally status` renders from.
//!
//! Aggregates are computed in SQL so a stop-rule check does not load every row; turning them
//! into facts (`gpu_hours`, `runs`, ...) is the fact sources' job.

use rusqlite::{Connection, params};
use tally_contract::{CampaignSnapshot, CampaignTotals, EvaluationDuration};
use tally_model::{CampaignId, EvaluationId, EvaluationState, UnixMillis, Verdict};

use super::{campaigns, candidates, evaluations, measurements};
use crate::error::{Error, StoreError};

pub(super) fn totals(conn: &Connection, campaign: CampaignId) -> Result<CampaignTotals, Error> {
    campaigns::require(conn, campaign)?;
    let mut totals = CampaignTotals::default();

    let mut stmt = conn.prepare_cached(
        "SELECT verdict, COUNT(*) FROM candidates WHERE campaign_id = ?1 \
         GROUP BY verdict ORDER BY verdict",
    )?;
    let mut rows = stmt.query([campaign.0])?;
    while let Some(row) = rows.next()? {
        let count: u64 = row.get(1)?;
        let counts = &mut totals.verdicts;
        let word: String = row.get(0)?;
        match Verdict::parse(&word) {
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

    totals.judged_since_last_keep = conn
        .prepare_cached(
            "SELECT COUNT(*) FROM candidates WHERE campaign_id = ?1 AND verdict <> 'pending' \
             AND number > COALESCE((SELECT MAX(number) FROM candidates \
                                    WHERE campaign_id = ?1 AND verdict = 'keep'), -1)",
        )?
        .query_row([campaign.0], |row| row.get(0))?;

    // `+campaign_id`: scan the table in order rather than visit every row through the index
    // (see `measurements::of_campaign`).
    let (count, failed, duration, first): (u64, u64, u64, Option<i64>) = conn
        .prepare_cached(
            "SELECT COUNT(*), COUNT(error), COALESCE(SUM(duration_ns), 0), MIN(started_ms) \
             FROM measurements WHERE +campaign_id = ?1",
        )?
        .query_row([campaign.0], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
        })?;
    totals.measurements = count;
    totals.failed_measurements = failed;
    totals.duration_ns = duration;
    totals.first_measurement_started = first.map(UnixMillis);

    let mut stmt = conn.prepare_cached(
        "SELECT state, COUNT(*), MIN(started_ms) FROM evaluations WHERE campaign_id = ?1 \
         GROUP BY state ORDER BY state",
    )?;
    let mut rows = stmt.query([campaign.0])?;
    while let Some(row) = rows.next()? {
        let count: u64 = row.get(1)?;
        let counts = &mut totals.evaluations;
        let word: String = row.get(0)?;
        match EvaluationState::parse(&word) {
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
        if let Some(started) = row.get::<_, Option<i64>>(2)?.map(UnixMillis) {
            let first = &mut totals.first_evaluation_started;
            *first = Some(first.map_or(started, |f| f.min(started)));
        }
    }
    Ok(totals)
}

pub(super) fn recent_evaluation_durations(
    conn: &Connection,
    campaign: CampaignId,
    limit: u32,
) -> Result<Vec<EvaluationDuration>, Error> {
    campaigns::require(conn, campaign)?;
    let mut stmt = conn.prepare_cached(
        "WITH recent AS (SELECT id FROM evaluations WHERE campaign_id = ?1 AND state = 'finished' \
                         ORDER BY id DESC LIMIT ?2) \
         SELECT r.id, COALESCE(SUM(m.duration_ns), 0), COUNT(m.id) FROM recent r \
         LEFT JOIN measurements m ON m.evaluation_id = r.id \
         GROUP BY r.id ORDER BY r.id DESC",
    )?;
    let rows = stmt.query_map(params![campaign.0, limit], |row| {
        Ok(EvaluationDuration {
            evaluation: EvaluationId(row.get(0)?),
            duration_ns: row.get(1)?,
            measurements: row.get(2)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

pub(super) fn snapshot(conn: &Connection, campaign: CampaignId) -> Result<CampaignSnapshot, Error> {
    Ok(CampaignSnapshot {
        campaign: campaigns::require(conn, campaign)?,
        candidates: candidates::list(conn, campaign)?,
        measurements: measurements::of_campaign(conn, campaign)?,
        evaluations: evaluations::list(conn, campaign)?,
    })
}
