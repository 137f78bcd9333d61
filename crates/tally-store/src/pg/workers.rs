//! `impl WorkerStore for PgStore`: claims and orphan recovery for several `tally run` workers on
//! one campaign (`docs/team.md#workers`).
//!
//! Each claim is one write transaction under the store's write lock, so of two workers that
//! claim the same evaluation or candidate exactly one gets it. A claimed evaluation is `running`
//! with its note saying whose it is (`worker slot N (tally pid=… host=…)`; the note is replaced
//! when the evaluation ends). An evaluation is an orphan when it is `running` and its slot's
//! lock is free — the server dropped it when the worker's connection ended — or the slot is
//! this worker's own (it holds the slot now, so whoever marked the evaluation is gone). A
//! `running` evaluation with no slot in its note was started by a single-worker run, which
//! held every slot's worth of the campaign: it is an orphan too.

use postgres::Transaction;
use tally_contract::{NewEvaluation, WorkerStore};
use tally_model::{
    CampaignId, Evaluation, EvaluationId, EvaluationKind, EvaluationState, UnixMillis, Verdict,
};

use super::codec::{EVALUATION_COLUMNS, big, evaluation_from_row};
use super::lock::slot_is_held;
use super::{PgStore, campaigns, candidates, evaluations};
use crate::error::{Error, StoreError};
use crate::slot_note::{claim_note, slot_of};

impl PgStore {
    fn slot(&self) -> u32 {
        self.worker.unwrap_or(0)
    }

    /// Marks an evaluation just started as this worker's.
    fn mark(&self, tx: &mut Transaction<'_>, id: EvaluationId) -> Result<Evaluation, Error> {
        let note = claim_note(self.slot());
        tx.execute(
            "UPDATE evaluations SET note = $2 WHERE id = $1",
            &[&big("evaluation id", id.0)?, &note],
        )?;
        evaluations::require(tx, id)
    }
}

impl WorkerStore for PgStore {
    fn worker_slot(&self) -> u32 {
        self.slot()
    }

    fn claim_evaluation(
        &self,
        id: EvaluationId,
        at: UnixMillis,
    ) -> Result<Option<Evaluation>, StoreError> {
        self.write(|tx| {
            let evaluation = evaluations::require(tx, id)?;
            if evaluation.state != EvaluationState::Queued {
                return Ok(None);
            }
            evaluations::start(tx, id, at)?;
            self.mark(tx, id).map(Some)
        })
    }

    fn claim_candidate(&self, new: &NewEvaluation) -> Result<Option<Evaluation>, StoreError> {
        self.write(|tx| {
            let candidate = candidates::require(tx, new.campaign, new.candidate)?;
            if new.kind == EvaluationKind::Judge
                && (candidate.verdict != Verdict::Pending || candidate.is_hand_set())
            {
                return Ok(None);
            }
            let busy: bool = tx
                .query_one(
                    "SELECT EXISTS (SELECT 1 FROM evaluations WHERE campaign_id = $1 \
                     AND candidate = $2 AND state IN ('queued', 'running'))",
                    &[
                        &big("campaign id", new.campaign.0)?,
                        &i64::from(new.candidate.0),
                    ],
                )?
                .get(0);
            if busy {
                return Ok(None);
            }
            let queued = evaluations::queue(tx, new)?;
            evaluations::start(tx, queued.id, new.queued)?;
            self.mark(tx, queued.id).map(Some)
        })
    }

    fn abandon_orphans(
        &self,
        campaign: CampaignId,
        note: &str,
        at: UnixMillis,
    ) -> Result<Vec<Evaluation>, StoreError> {
        self.write(|tx| {
            let name = campaigns::require(tx, campaign)?.name;
            let sql = format!(
                "SELECT {EVALUATION_COLUMNS} FROM evaluations \
                 WHERE campaign_id = $1 AND state = 'running' ORDER BY id"
            );
            let running: Vec<Evaluation> = tx
                .query(sql.as_str(), &[&big("campaign id", campaign.0)?])?
                .iter()
                .map(evaluation_from_row)
                .collect::<Result<_, Error>>()?;
            let mut orphans = Vec::new();
            for evaluation in running {
                let live = match slot_of(&evaluation) {
                    Some(slot) if slot == self.slot() => false,
                    Some(slot) => {
                        let key = i32::try_from(slot).map_err(|_| {
                            StoreError::invalid(
                                format!("note of {}", evaluation.id),
                                "names a worker slot beyond 2^31",
                            )
                        })?;
                        slot_is_held(tx, &name, key)?
                    }
                    None => false,
                };
                if !live {
                    evaluations::end(
                        tx,
                        evaluation.id,
                        EvaluationState::Abandoned,
                        Some(note),
                        at,
                    )?;
                    orphans.push(evaluation);
                }
            }
            Ok(orphans)
        })
    }
}
