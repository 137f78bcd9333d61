//! Row ⇄ value conversions of the PostgreSQL backend: decoding rows into model types and the
//! integer conversions PostgreSQL needs (every integer column is `BIGINT`, which the client
//! reads and writes as `i64` only).
//!
//! The column lists, the storage spellings of actors, metrics and paths, and the metrics parser
//! are the SQLite backend's (`sqlite::codec`), so both stores write the same text. Only
//! conversions here; decoding failures (a word outside its vocabulary, malformed metrics JSON,
//! a negative id) surface as `StoreError::InvalidValue` naming the column.

use std::path::PathBuf;

use postgres::Row;
use postgres::types::FromSql;
use tally_model::{
    Actor, Campaign, CampaignId, CampaignState, Candidate, CandidateId, ConfigTextId, Evaluation,
    EvaluationId, EvaluationKind, EvaluationState, EvidenceRef, Held, HeldFrom, Measurement,
    MeasurementId, Side, UnixMillis, Verdict,
};

use crate::error::{Error, StoreError};
use crate::sqlite::codec::actor_from_sql;
pub(super) use crate::sqlite::codec::{
    CAMPAIGN_COLUMNS, CANDIDATE_COLUMNS, EVALUATION_COLUMNS, MEASUREMENT_COLUMNS, actor_to_sql,
    metrics_from_sql, metrics_to_sql, path_to_sql,
};

/// An unsigned value as a `BIGINT` parameter, refusing what does not fit.
pub(super) fn big(what: &str, value: u64) -> Result<i64, StoreError> {
    i64::try_from(value).map_err(|_| StoreError::invalid(what, format!("{value} is over 2^63")))
}

/// An optional unsigned value as a `BIGINT` parameter.
pub(super) fn opt_big(what: &str, value: Option<u64>) -> Result<Option<i64>, StoreError> {
    value.map(|v| big(what, v)).transpose()
}

fn bad(what: &str, why: String) -> Error {
    StoreError::invalid(format!("stored {what}"), why).into()
}

/// Column `idx`, decoded.
pub(super) fn get<'a, T: FromSql<'a>>(row: &'a Row, idx: usize) -> Result<T, Error> {
    Ok(row.try_get(idx)?)
}

/// A non-negative `BIGINT` column as any unsigned type.
pub(super) fn unsigned<T: TryFrom<i64>>(row: &Row, idx: usize, what: &str) -> Result<T, Error> {
    let value: i64 = get(row, idx)?;
    T::try_from(value).map_err(|_| bad(what, format!("{value} is out of range")))
}

/// A nullable non-negative `BIGINT` column.
pub(super) fn opt_unsigned<T: TryFrom<i64>>(
    row: &Row,
    idx: usize,
    what: &str,
) -> Result<Option<T>, Error> {
    let value: Option<i64> = get(row, idx)?;
    value
        .map(|v| T::try_from(v).map_err(|_| bad(what, format!("{v} is out of range"))))
        .transpose()
}

/// A closed-vocabulary word.
fn word<T>(row: &Row, idx: usize, what: &str, parse: fn(&str) -> Option<T>) -> Result<T, Error> {
    let text: &str = get(row, idx)?;
    parse(text).ok_or_else(|| bad(what, format!("unknown word {text:?}")))
}

fn optional_actor(row: &Row, idx: usize) -> Result<Option<Actor>, Error> {
    let text: Option<&str> = get(row, idx)?;
    text.map(|t| actor_from_sql(t).ok_or_else(|| bad("actor", format!("unknown word {t:?}"))))
        .transpose()
}

fn millis(row: &Row, idx: usize) -> Result<UnixMillis, Error> {
    get(row, idx).map(UnixMillis)
}

fn optional_millis(row: &Row, idx: usize) -> Result<Option<UnixMillis>, Error> {
    Ok(get::<Option<i64>>(row, idx)?.map(UnixMillis))
}

fn optional_path(row: &Row, idx: usize) -> Result<Option<PathBuf>, Error> {
    Ok(get::<Option<String>>(row, idx)?.map(PathBuf::from))
}

/// Decodes a campaign row (see [`CAMPAIGN_COLUMNS`]).
pub(super) fn campaign_from_row(row: &Row) -> Result<Campaign, Error> {
    Ok(Campaign {
        id: CampaignId(unsigned(row, 0, "campaign id")?),
        name: get(row, 1)?,
        state: word(row, 2, "campaign state", CampaignState::parse)?,
        reason: get(row, 3)?,
        state_since: millis(row, 4)?,
        created: millis(row, 5)?,
        evaluator: get(row, 6)?,
        head: opt_unsigned(row, 7, "head")?.map(CandidateId),
        config: ConfigTextId(unsigned(row, 8, "config text id")?),
        config_text: get(row, 9)?,
    })
}

/// Decodes a candidate row (see [`CANDIDATE_COLUMNS`]).
pub(super) fn candidate_from_row(row: &Row) -> Result<Candidate, Error> {
    Ok(Candidate {
        campaign: CampaignId(unsigned(row, 0, "campaign id")?),
        id: CandidateId(unsigned(row, 1, "candidate number")?),
        revision: get(row, 2)?,
        parent: opt_unsigned(row, 3, "parent")?.map(CandidateId),
        proposed_by: get(row, 4)?,
        note: get(row, 5)?,
        verdict: word(row, 6, "verdict", Verdict::parse)?,
        reason: get(row, 7)?,
        verdict_set_by: optional_actor(row, 8)?,
        judged_against: opt_unsigned(row, 9, "judged_against")?.map(CandidateId),
        created: millis(row, 10)?,
        judged: optional_millis(row, 11)?,
    })
}

/// Decodes an evaluation row (see [`EVALUATION_COLUMNS`]).
pub(super) fn evaluation_from_row(row: &Row) -> Result<Evaluation, Error> {
    Ok(Evaluation {
        id: EvaluationId(unsigned(row, 0, "evaluation id")?),
        campaign: CampaignId(unsigned(row, 1, "campaign id")?),
        candidate: CandidateId(unsigned(row, 2, "candidate")?),
        bar: opt_unsigned(row, 3, "bar")?.map(CandidateId),
        kind: word(row, 4, "evaluation kind", EvaluationKind::parse)?,
        repeats: unsigned(row, 5, "repeats")?,
        state: word(row, 6, "evaluation state", EvaluationState::parse)?,
        note: get(row, 7)?,
        queued: millis(row, 8)?,
        started: optional_millis(row, 9)?,
        ended: optional_millis(row, 10)?,
    })
}

/// Decodes a measurement row (see [`MEASUREMENT_COLUMNS`]).
pub(super) fn measurement_from_row(row: &Row) -> Result<Measurement, Error> {
    let metrics_text: &str = get(row, 12)?;
    let metrics = metrics_from_sql(metrics_text).map_err(|why| bad("metrics", why))?;
    let recorded_by: &str = get(row, 21)?;
    Ok(Measurement {
        id: MeasurementId(unsigned(row, 0, "measurement id")?),
        campaign: CampaignId(unsigned(row, 1, "campaign id")?),
        candidate: CandidateId(unsigned(row, 2, "candidate")?),
        evaluation: opt_unsigned(row, 3, "evaluation id")?.map(EvaluationId),
        side: word(row, 4, "side", Side::parse)?,
        sample: unsigned(row, 5, "sample")?,
        attempt: unsigned(row, 6, "attempt")?,
        retry_of: opt_unsigned(row, 7, "retry_of")?.map(MeasurementId),
        pair: opt_unsigned(row, 8, "pair")?.map(MeasurementId),
        evaluator: get(row, 9)?,
        rung: get(row, 10)?,
        duration_ns: opt_unsigned(row, 11, "duration_ns")?,
        metrics,
        error: get(row, 13)?,
        started: millis(row, 14)?,
        ended: millis(row, 15)?,
        stdout_log: optional_path(row, 16)?,
        stderr_log: optional_path(row, 17)?,
        evidence: EvidenceRef {
            artifact: get(row, 18)?,
            gpu_busy_ns: opt_unsigned(row, 19, "gpu_busy_ns")?,
        },
        config: opt_unsigned(row, 20, "config text id")?.map(ConfigTextId),
        recorded_by: actor_from_sql(recorded_by)
            .ok_or_else(|| bad("actor", format!("unknown word {recorded_by:?}")))?,
        held: held(row)?,
    })
}

/// Decodes `held_gpus, held_ns, held_from` (22–24): all three or none.
fn held(row: &Row) -> Result<Option<Held>, Error> {
    let gpus = opt_unsigned(row, 22, "held_gpus")?;
    let elapsed_ns = opt_unsigned(row, 23, "held_ns")?;
    let from: Option<&str> = get(row, 24)?;
    match (gpus, elapsed_ns, from) {
        (Some(gpus), Some(elapsed_ns), Some(text)) => Ok(Some(Held {
            gpus,
            elapsed_ns,
            from: HeldFrom::parse(text)
                .ok_or_else(|| bad("held_from", format!("unknown word {text:?}")))?,
        })),
        (None, None, None) => Ok(None),
        _ => Err(bad(
            "held_gpus, held_ns, held_from",
            "only some of the three are set; a sample's held allocation has all three or none"
                .to_owned(),
        )),
    }
}
