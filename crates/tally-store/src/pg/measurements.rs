//! Measurement rows and their per-unit results on PostgreSQL: recording one sample atomically
//! (row, units and the back link of its pair, checked against its evaluation first), and
//! reading them back by id, candidate, evaluation or campaign.
//!
//! The same checks as the SQLite backend's `measurements` module; every sample is kept, failed
//! and retried ones included, because the GPU-hours ledger sums them all.

use std::collections::BTreeMap;

use postgres::Transaction;
use postgres::types::ToSql;
use tally_contract::NewMeasurement;
use tally_model::{
    CampaignId, CandidateId, EvaluationId, EvaluationState, Measurement, MeasurementId, Side,
    UnitValues,
};

use super::codec::{
    MEASUREMENT_COLUMNS, actor_to_sql, big, get as column, measurement_from_row, metrics_to_sql,
    opt_big, path_to_sql, unsigned,
};
use super::{campaigns, candidates, evaluations, next_id};
use crate::error::{Error, StoreError};

pub(super) fn record(tx: &mut Transaction<'_>, new: &NewMeasurement) -> Result<Measurement, Error> {
    check(tx, new)?;
    let stdout_log = path_to_sql("stdout_log", new.stdout_log.as_deref())?;
    let stderr_log = path_to_sql("stderr_log", new.stderr_log.as_deref())?;
    let id = next_id(tx, "measurements")?;
    let params: [&(dyn ToSql + Sync); 25] = [
        &id,
        &big("campaign id", new.campaign.0)?,
        &i64::from(new.candidate.0),
        &opt_big("evaluation id", new.evaluation.map(|e| e.0))?,
        &new.side.as_str(),
        &i64::from(new.sample),
        &i64::from(new.attempt),
        &opt_big("retry_of", new.retry_of.map(|m| m.0))?,
        &opt_big("pair", new.pair.map(|m| m.0))?,
        &new.evaluator,
        &new.rung,
        &opt_big("duration_ns", new.duration_ns)?,
        &metrics_to_sql(&new.metrics)?,
        &new.error,
        &new.started.0,
        &new.ended.0,
        &stdout_log,
        &stderr_log,
        &new.evidence.artifact,
        &opt_big("gpu_busy_ns", new.evidence.gpu_busy_ns)?,
        &opt_big("config text id", new.config.map(|c| c.0))?,
        &actor_to_sql(&new.recorded_by),
        &new.held.map(|h| i64::from(h.gpus)),
        &opt_big("held_ns", new.held.map(|h| h.elapsed_ns))?,
        &new.held.map(|h| h.from.as_str()),
    ];
    tx.execute(
        "INSERT INTO measurements (id, campaign_id, candidate, evaluation_id, side, sample, \
         attempt, retry_of, pair, evaluator, rung, duration_ns, metrics, error, started_ms, \
         ended_ms, stdout_log, stderr_log, evidence, gpu_busy_ns, config_text_id, recorded_by, \
         held_gpus, held_ns, held_from) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, \
         $18, $19, $20, $21, $22, $23, $24, $25)",
        &params,
    )?;
    if new.units.values().any(|units| !units.is_empty()) {
        let insert_unit = tx.prepare(
            "INSERT INTO measurement_units (measurement_id, metric, unit, value) \
             VALUES ($1, $2, $3, $4)",
        )?;
        for (metric, units) in &new.units {
            for (unit, value) in units {
                tx.execute(&insert_unit, &[&id, metric, unit, value])?;
            }
        }
    }
    if let Some(pair) = new.pair {
        tx.execute(
            "UPDATE measurements SET pair = $2 WHERE id = $1",
            &[&big("pair", pair.0)?, &id],
        )?;
    }
    require(tx, MeasurementId(id as u64))
}

/// Everything `record` refuses, checked before anything is written.
fn check(tx: &mut Transaction<'_>, new: &NewMeasurement) -> Result<(), Error> {
    candidates::require(tx, new.campaign, new.candidate)?;
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
        && campaigns::config_text(tx, config)?.is_none()
    {
        return Err(StoreError::invalid(
            format!("config of the {who}"),
            format!("{config} is not stored; record it with record_config_text first"),
        )
        .into());
    }
    if let Some(evaluation) = new.evaluation {
        check_evaluation(tx, new, evaluation, &who)?;
    }
    if let Some(pair) = new.pair {
        let other = require(tx, pair)?;
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
        let first = require(tx, retried)?;
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
    tx: &mut Transaction<'_>,
    new: &NewMeasurement,
    id: EvaluationId,
    who: &str,
) -> Result<(), Error> {
    let evaluation = evaluations::require(tx, id)?;
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

pub(super) fn get(
    tx: &mut Transaction<'_>,
    id: MeasurementId,
) -> Result<Option<Measurement>, Error> {
    let Ok(key) = i64::try_from(id.0) else {
        return Ok(None);
    };
    let sql = format!("SELECT {MEASUREMENT_COLUMNS} FROM measurements WHERE id = $1");
    tx.query_opt(sql.as_str(), &[&key])?
        .map(|row| measurement_from_row(&row))
        .transpose()
}

/// The measurement, or `NoSuchMeasurement`.
pub(super) fn require(tx: &mut Transaction<'_>, id: MeasurementId) -> Result<Measurement, Error> {
    get(tx, id)?.ok_or(StoreError::NoSuchMeasurement(id).into())
}

fn query(
    tx: &mut Transaction<'_>,
    filter: &str,
    args: &[&(dyn ToSql + Sync)],
) -> Result<Vec<Measurement>, Error> {
    let sql = format!("SELECT {MEASUREMENT_COLUMNS} FROM measurements {filter} ORDER BY id");
    tx.query(sql.as_str(), args)?
        .iter()
        .map(measurement_from_row)
        .collect()
}

pub(super) fn of_candidate(
    tx: &mut Transaction<'_>,
    campaign: CampaignId,
    candidate: CandidateId,
) -> Result<Vec<Measurement>, Error> {
    candidates::require(tx, campaign, candidate)?;
    query(
        tx,
        "WHERE campaign_id = $1 AND candidate = $2",
        &[&big("campaign id", campaign.0)?, &i64::from(candidate.0)],
    )
}

pub(super) fn of_evaluation(
    tx: &mut Transaction<'_>,
    evaluation: EvaluationId,
) -> Result<Vec<Measurement>, Error> {
    evaluations::require(tx, evaluation)?;
    query(
        tx,
        "WHERE evaluation_id = $1",
        &[&big("evaluation id", evaluation.0)?],
    )
}

/// Every measurement of a campaign: the bulk read behind `tally status`.
pub(super) fn of_campaign(
    tx: &mut Transaction<'_>,
    campaign: CampaignId,
) -> Result<Vec<Measurement>, Error> {
    campaigns::require(tx, campaign)?;
    query(
        tx,
        "WHERE campaign_id = $1",
        &[&big("campaign id", campaign.0)?],
    )
}

pub(super) fn units_of(tx: &mut Transaction<'_>, id: MeasurementId) -> Result<UnitValues, Error> {
    require(tx, id)?;
    let rows = tx.query(
        "SELECT metric, unit, value FROM measurement_units WHERE measurement_id = $1",
        &[&big("measurement id", id.0)?],
    )?;
    let mut units = UnitValues::new();
    for row in &rows {
        units
            .entry(column(row, 0)?)
            .or_default()
            .insert(column(row, 1)?, column(row, 2)?);
    }
    Ok(units)
}

pub(super) fn units_of_candidate(
    tx: &mut Transaction<'_>,
    campaign: CampaignId,
    candidate: CandidateId,
) -> Result<BTreeMap<MeasurementId, UnitValues>, Error> {
    candidates::require(tx, campaign, candidate)?;
    let rows = tx.query(
        "SELECT u.measurement_id, u.metric, u.unit, u.value FROM measurement_units u \
         JOIN measurements m ON m.id = u.measurement_id \
         WHERE m.campaign_id = $1 AND m.candidate = $2 \
         ORDER BY u.measurement_id",
        &[&big("campaign id", campaign.0)?, &i64::from(candidate.0)],
    )?;
    let mut all = BTreeMap::<MeasurementId, UnitValues>::new();
    for row in &rows {
        all.entry(MeasurementId(unsigned(row, 0, "measurement id")?))
            .or_default()
            .entry(column(row, 1)?)
            .or_default()
            .insert(column(row, 2)?, column(row, 3)?);
    }
    Ok(all)
}
