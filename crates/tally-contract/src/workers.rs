//! [`WorkerStore`]: what several `tally run` workers on one campaign need from a shared store
//! (`docs/team.md#workers`) — claiming work atomically, so that no evaluation runs twice, and
//! recovering only the evaluations whose worker is gone.
//!
//! Each worker holds one of the campaign's `evaluation_slots` (on PostgreSQL a lock the store's
//! server drops when the worker's connection ends; on SQLite a slot of the one `tally run` that
//! holds the campaign's run lock and works several slots with the Slurm executor,
//! `docs/team.md#slurm-slots`). A claim is one write under the store's write lock: the
//! evaluation becomes `running`, marked with the claiming worker's slot. A store opened for one
//! `tally run` that works alone answers `None` to `Store::with_workers`.

use tally_model::{CampaignId, Evaluation, EvaluationId, UnixMillis};

use crate::StoreError;
use crate::records::NewEvaluation;

/// A store shared by workers, seen from one of them (its slot).
pub trait WorkerStore {
    /// This worker's slot (0-based, below `evaluation_slots`).
    fn worker_slot(&self) -> u32;

    /// Starts a queued evaluation for this worker in one write; `None` when it is no longer
    /// queued (another worker claimed it first).
    fn claim_evaluation(
        &self,
        id: EvaluationId,
        at: UnixMillis,
    ) -> Result<Option<Evaluation>, StoreError>;

    /// Queues and starts an evaluation for this worker in one write (started at `new.queued`);
    /// `None` when its candidate already has a queued or running evaluation, or — a judge job —
    /// its verdict is no longer pending or was set by hand.
    fn claim_candidate(&self, new: &NewEvaluation) -> Result<Option<Evaluation>, StoreError>;

    /// Ends as abandoned, with `note`, every running evaluation of the campaign whose worker is
    /// gone — its slot is free, or it is this worker's own slot (a killed predecessor held it)
    /// — in one write, and returns them as they were. Live workers' evaluations are left alone.
    fn abandon_orphans(
        &self,
        campaign: CampaignId,
        note: &str,
        at: UnixMillis,
    ) -> Result<Vec<Evaluation>, StoreError>;
}
