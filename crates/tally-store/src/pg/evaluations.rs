//! Evaluation rows on PostgreSQL: queue, start, end (finished or abandoned), look up, list, and
//! the unfinished ones a new `tally run` must deal with (`docs/campaign.md#crash-safety`).
//!
//! The same life cycle as the SQLite backend's `evaluations` module: `queued → running →
//! finished`, with `abandoned` reachable from `queued` and `running`.

use postgres::Transaction;
use tally_contract::NewEvaluation;
use tally_model::{CampaignId, Evaluation, EvaluationId, EvaluationState, UnixMillis};

use super::codec::{EVALUATION_COLUMNS, big, evaluation_from_row};
use super::{campaigns, candidates, next_id};
use crate::error::{Error, StoreError};

pub(super) fn queue(tx: &mut Transaction<'_>, new: &NewEvaluation) -> Result<Evaluation, Error> {
    candidates::require(tx, new.campaign, new.candidate)?;
    if let Some(bar) = new.bar {
        candidates::require(tx, new.campaign, bar)?;
    }
    if new.repeats == 0 {
        return Err(StoreError::invalid(
            format!("repeats of the evaluation of {}", new.candidate),
            "it is 0; an evaluation takes at least one sample",
        )
        .into());
    }
    let id = next_id(tx, "evaluations")?;
    tx.execute(
        "INSERT INTO evaluations (id, campaign_id, candidate, bar, kind, repeats, state, note, \
         queued_ms, started_ms, ended_ms) \
         VALUES ($1, $2, $3, $4, $5, $6, 'queued', NULL, $7, NULL, NULL)",
        &[
            &id,
            &big("campaign id", new.campaign.0)?,
            &i64::from(new.candidate.0),
            &new.bar.map(|b| i64::from(b.0)),
            &new.kind.as_str(),
            &i64::from(new.repeats),
            &new.queued.0,
        ],
    )?;
    require(tx, EvaluationId(id as u64))
}

pub(super) fn get(tx: &mut Transaction<'_>, id: EvaluationId) -> Result<Option<Evaluation>, Error> {
    let Ok(key) = i64::try_from(id.0) else {
        return Ok(None);
    };
    let sql = format!("SELECT {EVALUATION_COLUMNS} FROM evaluations WHERE id = $1");
    tx.query_opt(sql.as_str(), &[&key])?
        .map(|row| evaluation_from_row(&row))
        .transpose()
}

/// The evaluation, or `NoSuchEvaluation`.
pub(super) fn require(tx: &mut Transaction<'_>, id: EvaluationId) -> Result<Evaluation, Error> {
    get(tx, id)?.ok_or(StoreError::NoSuchEvaluation(id).into())
}

pub(super) fn start(
    tx: &mut Transaction<'_>,
    id: EvaluationId,
    at: UnixMillis,
) -> Result<Evaluation, Error> {
    let evaluation = require(tx, id)?;
    if evaluation.state != EvaluationState::Queued {
        return Err(StoreError::EvaluationState {
            evaluation: id,
            found: evaluation.state,
            wanted: "only a queued evaluation can start; queue a new one".to_owned(),
        }
        .into());
    }
    tx.execute(
        "UPDATE evaluations SET state = 'running', started_ms = $2 WHERE id = $1",
        &[&big("evaluation id", id.0)?, &at.0],
    )?;
    require(tx, id)
}

pub(super) fn end(
    tx: &mut Transaction<'_>,
    id: EvaluationId,
    state: EvaluationState,
    note: Option<&str>,
    at: UnixMillis,
) -> Result<Evaluation, Error> {
    if !state.is_ended() {
        return Err(StoreError::invalid(
            format!("end state of {id}"),
            format!("{state} does not end an evaluation; use finished or abandoned"),
        )
        .into());
    }
    let evaluation = require(tx, id)?;
    let allowed = match state {
        EvaluationState::Finished => evaluation.state == EvaluationState::Running,
        _ => !evaluation.state.is_ended(),
    };
    if !allowed {
        return Err(StoreError::EvaluationState {
            evaluation: id,
            found: evaluation.state,
            wanted: format!(
                "it cannot become {state} (finished needs running; abandoned needs queued or \
                 running)"
            ),
        }
        .into());
    }
    tx.execute(
        "UPDATE evaluations SET state = $2, note = $3, ended_ms = $4 WHERE id = $1",
        &[&big("evaluation id", id.0)?, &state.as_str(), &note, &at.0],
    )?;
    require(tx, id)
}

pub(super) fn list(
    tx: &mut Transaction<'_>,
    campaign: CampaignId,
) -> Result<Vec<Evaluation>, Error> {
    campaigns::require(tx, campaign)?;
    let sql =
        format!("SELECT {EVALUATION_COLUMNS} FROM evaluations WHERE campaign_id = $1 ORDER BY id");
    tx.query(sql.as_str(), &[&big("campaign id", campaign.0)?])?
        .iter()
        .map(evaluation_from_row)
        .collect()
}

pub(super) fn unfinished(
    tx: &mut Transaction<'_>,
    campaign: CampaignId,
) -> Result<Vec<Evaluation>, Error> {
    campaigns::require(tx, campaign)?;
    let sql = format!(
        "SELECT {EVALUATION_COLUMNS} FROM evaluations \
         WHERE campaign_id = $1 AND state IN ('queued', 'running') ORDER BY id"
    );
    tx.query(sql.as_str(), &[&big("campaign id", campaign.0)?])?
        .iter()
        .map(evaluation_from_row)
        .collect()
}
