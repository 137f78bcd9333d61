//! Evaluation rows: queue, start, end (finished or abandoned), look up, list, and the
//! unfinished ones a new `tally run` must deal with (`docs/campaign.md#crash-safety`).
//!
//! The life cycle is `queued → running → finished`, with `abandoned` reachable from `queued`
//! and `running`; any other move is refused. Which evaluations to queue is the engine's choice.

use rusqlite::{Connection, OptionalExtension, params};
use tally_contract::NewEvaluation;
use tally_model::{CampaignId, Evaluation, EvaluationId, EvaluationState, UnixMillis};

use super::codec::{EVALUATION_COLUMNS, evaluation_from_row};
use super::{campaigns, candidates, next_id};
use crate::error::{Error, StoreError};

pub(super) fn queue(conn: &Connection, new: &NewEvaluation) -> Result<Evaluation, Error> {
    candidates::require(conn, new.campaign, new.candidate)?;
    if let Some(bar) = new.bar {
        candidates::require(conn, new.campaign, bar)?;
    }
    if new.repeats == 0 {
        return Err(StoreError::invalid(
            format!("repeats of the evaluation of {}", new.candidate),
            "it is 0; an evaluation takes at least one sample",
        )
        .into());
    }
    let id = next_id(conn, "evaluations")?;
    conn.prepare_cached(
        "INSERT INTO evaluations (id, campaign_id, candidate, bar, kind, repeats, state, note, \
         queued_ms, started_ms, ended_ms) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'queued', NULL, ?7, NULL, NULL)",
    )?
    .execute(params![
        id,
        new.campaign.0,
        new.candidate.0,
        new.bar.map(|b| b.0),
        new.kind.as_str(),
        new.repeats,
        new.queued.0,
    ])?;
    require(conn, EvaluationId(id))
}

pub(super) fn get(conn: &Connection, id: EvaluationId) -> Result<Option<Evaluation>, Error> {
    let sql = format!("SELECT {EVALUATION_COLUMNS} FROM evaluations WHERE id = ?1");
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([id.0], evaluation_from_row)
        .optional()?)
}

/// The evaluation, or `NoSuchEvaluation`.
pub(super) fn require(conn: &Connection, id: EvaluationId) -> Result<Evaluation, Error> {
    get(conn, id)?.ok_or(StoreError::NoSuchEvaluation(id).into())
}

pub(super) fn start(
    conn: &Connection,
    id: EvaluationId,
    at: UnixMillis,
) -> Result<Evaluation, Error> {
    let evaluation = require(conn, id)?;
    if evaluation.state != EvaluationState::Queued {
        return Err(StoreError::EvaluationState {
            evaluation: id,
            found: evaluation.state,
            wanted: "only a queued evaluation can start; queue a new one".to_owned(),
        }
        .into());
    }
    conn.prepare_cached("UPDATE evaluations SET state = 'running', started_ms = ?2 WHERE id = ?1")?
        .execute(params![id.0, at.0])?;
    require(conn, id)
}

pub(super) fn end(
    conn: &Connection,
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
    let evaluation = require(conn, id)?;
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
    conn.prepare_cached(
        "UPDATE evaluations SET state = ?2, note = ?3, ended_ms = ?4 WHERE id = ?1",
    )?
    .execute(params![id.0, state.as_str(), note, at.0])?;
    require(conn, id)
}

pub(super) fn list(conn: &Connection, campaign: CampaignId) -> Result<Vec<Evaluation>, Error> {
    campaigns::require(conn, campaign)?;
    let sql =
        format!("SELECT {EVALUATION_COLUMNS} FROM evaluations WHERE campaign_id = ?1 ORDER BY id");
    // Sized once: `tally status` lists every one of a large campaign.
    let count: usize = conn
        .prepare_cached("SELECT COUNT(*) FROM evaluations WHERE campaign_id = ?1")?
        .query_row([campaign.0], |row| row.get(0))?;
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut all = Vec::with_capacity(count);
    for row in stmt.query_map([campaign.0], evaluation_from_row)? {
        all.push(row?);
    }
    Ok(all)
}

pub(super) fn unfinished(
    conn: &Connection,
    campaign: CampaignId,
) -> Result<Vec<Evaluation>, Error> {
    campaigns::require(conn, campaign)?;
    let sql = format!(
        "SELECT {EVALUATION_COLUMNS} FROM evaluations \
         WHERE campaign_id = ?1 AND state IN ('queued', 'running') ORDER BY id"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map([campaign.0], evaluation_from_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}
