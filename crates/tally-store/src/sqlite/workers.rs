//! `impl WorkerStore for SqliteStore`: the evaluation slots of one `tally run` process on a
//! SQLite campaign (`docs/team.md#slurm-slots`).
//!
//! A SQLite store is driven by one process at a time — the one holding the campaign's run lock
//! (`.tally/run-<campaign>.lock`) — so its slots are held in-process: that process runs a worker
//! for each of the campaign's `evaluation_slots`, each on a connection of its own, for as long
//! as it works. Claims are what they are on PostgreSQL: one `BEGIN IMMEDIATE` transaction (the
//! file's write lock; the others wait up to the busy timeout), so of two workers that claim the
//! same evaluation or candidate exactly one gets it, and the claimed evaluation is `running`
//! with the note `worker slot N (tally pid=…)`. A `running` evaluation is an orphan when its
//! note names no slot (a single-slot run left it), names this worker's own slot (a killed
//! predecessor left it), or names a slot this process does not run; every other slot belongs to
//! a live worker of this process.

use rusqlite::{Connection, params};
use tally_contract::{NewEvaluation, WorkerStore};
use tally_model::{
    CampaignId, Evaluation, EvaluationId, EvaluationKind, EvaluationState, UnixMillis, Verdict,
};

use super::codec::{EVALUATION_COLUMNS, evaluation_from_row};
use super::{SqliteStore, campaigns, candidates, evaluations};
use crate::error::{Error, StoreError};
use crate::slot_note::{claim_note, slot_of};

/// The slot a store works as, out of how many this process runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct InProcessSlot {
    pub(super) slot: u32,
    pub(super) slots: u32,
}

impl SqliteStore {
    /// This store as the worker of `slot`, one of the `slots` workers that the process holding
    /// the campaign's run lock runs at once: it claims work and recovers orphans as
    /// [`WorkerStore`] (`docs/team.md#slurm-slots`). Each worker opens a store of its own.
    pub fn as_worker(mut self, slot: u32, slots: u32) -> Self {
        self.worker = Some(InProcessSlot {
            slot,
            slots: slots.max(slot + 1),
        });
        self
    }

    fn worker_slot_or_zero(&self) -> u32 {
        self.worker.map_or(0, |w| w.slot)
    }

    /// Marks an evaluation just started as this worker's.
    fn mark(&self, conn: &Connection, id: EvaluationId) -> Result<Evaluation, Error> {
        conn.prepare_cached("UPDATE evaluations SET note = ?2 WHERE id = ?1")?
            .execute(params![id.0, claim_note(self.worker_slot_or_zero())])?;
        evaluations::require(conn, id)
    }

    /// Whether `slot` (another worker's) is run by this process now.
    fn slot_is_live(&self, slot: u32) -> bool {
        self.worker
            .is_some_and(|w| slot != w.slot && slot < w.slots)
    }
}

impl WorkerStore for SqliteStore {
    fn worker_slot(&self) -> u32 {
        self.worker_slot_or_zero()
    }

    fn claim_evaluation(
        &self,
        id: EvaluationId,
        at: UnixMillis,
    ) -> Result<Option<Evaluation>, StoreError> {
        self.write(|conn| {
            let evaluation = evaluations::require(conn, id)?;
            if evaluation.state != EvaluationState::Queued {
                return Ok(None);
            }
            evaluations::start(conn, id, at)?;
            self.mark(conn, id).map(Some)
        })
    }

    fn claim_candidate(&self, new: &NewEvaluation) -> Result<Option<Evaluation>, StoreError> {
        self.write(|conn| {
            let candidate = candidates::require(conn, new.campaign, new.candidate)?;
            if new.kind == EvaluationKind::Judge
                && (candidate.verdict != Verdict::Pending || candidate.is_hand_set())
            {
                return Ok(None);
            }
            let busy: bool = conn
                .prepare_cached(
                    "SELECT EXISTS (SELECT 1 FROM evaluations WHERE campaign_id = ?1 \
                     AND candidate = ?2 AND state IN ('queued', 'running'))",
                )?
                .query_row(params![new.campaign.0, new.candidate.0], |row| row.get(0))?;
            if busy {
                return Ok(None);
            }
            let queued = evaluations::queue(conn, new)?;
            evaluations::start(conn, queued.id, new.queued)?;
            self.mark(conn, queued.id).map(Some)
        })
    }

    fn abandon_orphans(
        &self,
        campaign: CampaignId,
        note: &str,
        at: UnixMillis,
    ) -> Result<Vec<Evaluation>, StoreError> {
        self.write(|conn| {
            campaigns::require(conn, campaign)?;
            let sql = format!(
                "SELECT {EVALUATION_COLUMNS} FROM evaluations \
                 WHERE campaign_id = ?1 AND state = 'running' ORDER BY id"
            );
            let running: Vec<Evaluation> = conn
                .prepare_cached(&sql)?
                .query_map([campaign.0], evaluation_from_row)?
                .collect::<Result<_, _>>()?;
            let mut orphans = Vec::new();
            for evaluation in running {
                if slot_of(&evaluation).is_some_and(|slot| self.slot_is_live(slot)) {
                    continue;
                }
                evaluations::end(
                    conn,
                    evaluation.id,
                    EvaluationState::Abandoned,
                    Some(note),
                    at,
                )?;
                orphans.push(evaluation);
            }
            Ok(orphans)
        })
    }
}
