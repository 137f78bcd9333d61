//! Measurement rows and their per-unit results: recording one sample atomically (row, units
//! and the back link of its pair, checked against its evaluation first), and reading them back
//! by id, candidate, evaluation or campaign.
//!
//! Whether a measurement enters a mean is the reader's decision; this module keeps every
//! sample, failed and retried ones included, because the GPU-hours ledger sums them all.

use std::collections::BTreeMap;

use rusqlite::{Connection, OptionalExtension, params};
use tally_contract::NewMeasurement;
use tally_model::{
    CampaignId, CandidateId, EvaluationId, EvaluationState, Measurement, MeasurementId, Side,
    UnitValues,
};

use super::codec::{
    MEASUREMENT_COLUMNS, actor_to_sql, measurement_from_row, metrics_to_sql, path_to_sql,
};
use super::{campaigns, candidates, evaluations, next_id};
use crate::error::{Error, StoreError};

pub(super) fn record(conn: &Connection, new: &NewMeasurement) -> Result<Measurement, Error> {
    check(conn, new)?;
    let stdout_log = path_to_sql("stdout_log", new.stdout_log.as_deref())?;
    let stderr_log = path_to_sql("stderr_log", new.stderr_log.as_deref())?;
    let id = next_id(conn, "measurements")?;
    conn.prepare_cached(
        "INSERT INTO measurements (id, campaign_id, candidate, evaluation_id, side, sample, \
         attempt, retry_of, pair, evaluator, rung, duration_ns, metrics, error, started_ms, \
         ended_ms, stdout_log, stderr_log, evidence, gpu_busy_ns, config_text_id, recorded_by, \
         held_gpus, held_ns, held_from) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, \
         ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25)",
    )?
    .execute(params![
        id,
        new.campaign.0,
        new.candidate.0,
        new.evaluation.map(|e| e.0),
        new.side.as_str(),
        new.sample,
        new.attempt,
        new.retry_of.map(|m| m.0),
        new.pair.map(|m| m.0),
        new.evaluator,
        new.rung,
        new.duration_ns,
        metrics_to_sql(&new.metrics)?,
        new.error,
        new.started.0,
        new.ended.0,
        stdout_log,
        stderr_log,
        new.evidence.artifact,
        new.evidence.gpu_busy_ns,
        new.config.map(|c| c.0),
        actor_to_sql(&new.recorded_by),
        new.held.map(|h| h.gpus),
        new.held.map(|h| h.elapsed_ns),
        new.held.map(|h| h.from.as_str()),
    ])?;
    let mut insert_unit = conn.prepare_cached(
        "INSERT INTO measurement_units (measurement_id, metric, unit, value) \
         VALUES (?1, ?2, ?3, ?4)",
    )?;
    for (metric, units) in &new.units {
        for (unit, value) in units {
            insert_unit.execute(params![id, metric, unit, value])?;
        }
    }
    if let Some(pair) = new.pair {
        conn.prepare_cached("UPDATE measurements SET pair = ?2 WHERE id = ?1")?
            .execute(params![pair.0, id])?;
    }
    require(conn, MeasurementId(id))
}

/// Everything `record` refuses, checked before anything is written.
fn check(conn: &Connection, new: &NewMeasurement) -> Result<(), Error> {
    candidates::require(conn, new.campaign, new.candidate)?;
    let who = format!("measurement of {}", new.candidate);
    if new.evaluator.is_empty() {
        return Err(StoreError::invalid(
            format!("evaluator of the {who}"),
            "it is empty; pass the evaluator identity it ran under",
        )
        .into());
    }
    if new.attempt == 0 {
        return Err(
            StoreError::invalid(format!("attempt of the {who}"), "attempts count from 1").into(),
        );
    }
    for (what, value) in [
        ("duration_ns", new.duration_ns),
        ("gpu_busy_ns", new.evidence.gpu_busy_ns),
        ("held_ns", new.held.map(|h| h.elapsed_ns)),
    ] {
        if value.is_some_and(|v| i64::try_from(v).is_err()) {
            return Err(StoreError::invalid(
                format!("{what} of the {who}"),
                "over 2^63 ns (292 years)",
            )
            .into());
        }
    }
    for (name, value) in &new.metrics {
        check_number(&format!("metrics[{name:?}] of the {who}"), name, *value)?;
    }
    for (metric, units) in &new.units {
        if units.is_empty() {
            return Err(StoreError::invalid(
                format!("units[{metric:?}] of the {who}"),
                "no unit values; leave the metric out of the units instead",
            )
            .into());
        }
        for (unit, value) in units {
            check_number(
                &format!("units[{metric:?}][{unit:?}] of the {who}"),
                metric,
                *value,
            )?;
            if unit.is_empty() {
                return Err(StoreError::invalid(
                    format!("units[{metric:?}] of the {who}"),
                    "a unit id is empty",
                )
                .into());
            }
        }
    }
    if let Some(config) = new.config
        && campaigns::config_text(conn, config)?.is_none()
    {
        return Err(StoreError::invalid(
            format!("config of the {who}"),
            format!("{config} is not stored; record it with record_config_text first"),
        )
        .into());
    }
    if let Some(evaluation) = new.evaluation {
        check_evaluation(conn, new, evaluation, &who)?;
    }
    if let Some(pair) = new.pair {
        let other = require(conn, pair)?;
        let why = if new.evaluation.is_none() || other.evaluation != new.evaluation {
            Some("it belongs to another evaluation; pairs are taken within one evaluation")
        } else if other.side == new.side {
            Some("it is on the same side; a pair is one candidate and one bar sample")
        } else if other.pair.is_some() {
            Some("it is already paired")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(StoreError::invalid(format!("pair {pair} of the {who}"), why).into());
        }
    }
    if let Some(retried) = new.retry_of {
        let first = require(conn, retried)?;
        if first.campaign != new.campaign || first.candidate != new.candidate {
            return Err(StoreError::invalid(
                format!("retry_of {retried} of the {who}"),
                format!("it measured {} of {}", first.candidate, first.campaign),
            )
            .into());
        }
        if first.error.is_none() {
            return Err(StoreError::invalid(
                format!("retry_of {retried} of the {who}"),
                "it succeeded; only a failed attempt is retried",
            )
            .into());
        }
    }
    Ok(())
}

fn check_number(what: &str, name: &str, value: f64) -> Result<(), StoreError> {
    if name.is_empty() {
        return Err(StoreError::invalid(what, "the metric name is empty"));
    }
    if !value.is_finite() {
        return Err(StoreError::invalid(
            what,
            format!("{value} is not a finite number; leave it out"),
        ));
    }
    Ok(())
}

fn check_evaluation(
    conn: &Connection,
    new: &NewMeasurement,
    id: EvaluationId,
    who: &str,
) -> Result<(), Error> {
    let evaluation = evaluations::require(conn, id)?;
    if evaluation.campaign != new.campaign {
        return Err(StoreError::invalid(
            format!("evaluation of the {who}"),
            format!("{id} belongs to {}", evaluation.campaign),
        )
        .into());
    }
    if evaluation.state != EvaluationState::Running {
        return Err(StoreError::EvaluationState {
            evaluation: id,
            found: evaluation.state,
            wanted: "samples are recorded only under a running evaluation; start it first"
                .to_owned(),
        }
        .into());
    }
    let expected = match new.side {
        Side::Candidate => Some(evaluation.candidate),
        Side::Bar => evaluation.bar,
    };
    if expected != Some(new.candidate) {
        return Err(StoreError::invalid(
            format!("side of the {who}"),
            format!(
                "{id} measures {} against {}, so its {} samples are not of {}",
                evaluation.candidate,
                evaluation
                    .bar
                    .map_or("no bar".to_owned(), |b| b.to_string()),
                new.side,
                new.candidate
            ),
        )
        .into());
    }
    Ok(())
}

pub(super) fn get(conn: &Connection, id: MeasurementId) -> Result<Option<Measurement>, Error> {
    let sql = format!("SELECT {MEASUREMENT_COLUMNS} FROM measurements WHERE id = ?1");
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([id.0], measurement_from_row)
        .optional()?)
}

/// The measurement, or `NoSuchMeasurement`.
pub(super) fn require(conn: &Connection, id: MeasurementId) -> Result<Measurement, Error> {
    get(conn, id)?.ok_or(StoreError::NoSuchMeasurement(id).into())
}

fn query(conn: &Connection, filter: &str, args: &[u64]) -> Result<Vec<Measurement>, Error> {
    let sql = format!("SELECT {MEASUREMENT_COLUMNS} FROM measurements {filter} ORDER BY id");
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(rusqlite::params_from_iter(args), measurement_from_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

pub(super) fn of_candidate(
    conn: &Connection,
    campaign: CampaignId,
    candidate: CandidateId,
) -> Result<Vec<Measurement>, Error> {
    candidates::require(conn, campaign, candidate)?;
    query(
        conn,
        "WHERE campaign_id = ?1 AND candidate = ?2",
        &[campaign.0, u64::from(candidate.0)],
    )
}

pub(super) fn of_evaluation(
    conn: &Connection,
    evaluation: EvaluationId,
) -> Result<Vec<Measurement>, Error> {
    evaluations::require(conn, evaluation)?;
    query(conn, "WHERE evaluation_id = ?1", &[evaluation.0])
}

/// Every measurement of a campaign. The bulk read behind `tally status`, so tuned: the vector is
/// sized by a count over the covering index first, and `+campaign_id` tells SQLite's planner to
/// scan the table in rowid (= id) order instead of visiting each row through the index — about
/// a fifth less work when, as usual, one campaign fills the store. (The unary plus is plain SQL;
/// it only keeps SQLite from using the index for that term.)
pub(super) fn of_campaign(
    conn: &Connection,
    campaign: CampaignId,
) -> Result<Vec<Measurement>, Error> {
    campaigns::require(conn, campaign)?;
    let count: usize = conn
        .prepare_cached("SELECT COUNT(*) FROM measurements WHERE campaign_id = ?1")?
        .query_row([campaign.0], |row| row.get(0))?;
    let sql = format!(
        "SELECT {MEASUREMENT_COLUMNS} FROM measurements WHERE +campaign_id = ?1 ORDER BY id"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut all = Vec::with_capacity(count);
    for measurement in stmt.query_map([campaign.0], measurement_from_row)? {
        all.push(measurement?);
    }
    Ok(all)
}

pub(super) fn units_of(conn: &Connection, id: MeasurementId) -> Result<UnitValues, Error> {
    require(conn, id)?;
    let mut stmt = conn.prepare_cached(
        "SELECT metric, unit, value FROM measurement_units WHERE measurement_id = ?1 \
         ORDER BY metric, unit",
    )?;
    let mut units = UnitValues::new();
    let mut rows = stmt.query([id.0])?;
    while let Some(row) = rows.next()? {
        units
            .entry(row.get(0)?)
            .or_default()
            .insert(row.get(1)?, row.get(2)?);
    }
    Ok(units)
}

pub(super) fn units_of_candidate(
    conn: &Connection,
    campaign: CampaignId,
    candidate: CandidateId,
) -> Result<BTreeMap<MeasurementId, UnitValues>, Error> {
    candidates::require(conn, campaign, candidate)?;
    let mut stmt = conn.prepare_cached(
        "SELECT u.measurement_id, u.metric, u.unit, u.value FROM measurement_units u \
         JOIN measurements m ON m.id = u.measurement_id \
         WHERE m.campaign_id = ?1 AND m.candidate = ?2 \
         ORDER BY u.measurement_id, u.metric, u.unit",
    )?;
    let mut all = BTreeMap::<MeasurementId, UnitValues>::new();
    let mut rows = stmt.query([campaign.0, u64::from(candidate.0)])?;
    while let Some(row) = rows.next()? {
        all.entry(MeasurementId(row.get(0)?))
            .or_default()
            .entry(row.get(1)?)
            .or_default()
            .insert(row.get(2)?, row.get(3)?);
    }
    Ok(all)
}
