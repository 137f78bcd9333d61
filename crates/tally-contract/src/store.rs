//! The [`Store`] trait: everything the campaign engine and the commands read from and write to
//! durable storage, backend-neutral.
//!
//! Contract shared by every method (pinned by `conformance::store_contract`, compiled in with the
//! `test-support` feature):
//! - every write is one transaction: it happens entirely or not at all, and is durable when
//!   the method returns; nothing is held open between calls;
//! - ids are handed out by the store (campaigns, evaluations, measurements and config texts from
//!   1 across the store; candidates from 0 within their campaign), in creation order;
//! - every list is in a fixed order (candidates by number, everything else by id);
//! - lookups of one thing return `Ok(None)` when it does not exist; writes and lists that name
//!   a missing campaign, candidate, evaluation or measurement fail with the matching
//!   `StoreError::No*` error;
//! - instants come from the caller (the store never reads the clock).
//!
//! Not here: deciding verdicts, computing facts from config (the store only counts and sums),
//! or the per-campaign `tally run` lock, which belongs to the process level (a lock file beside
//! a SQLite store, a session advisory lock in a PostgreSQL one) so a killed process cannot leave
//! it stuck.

use std::collections::BTreeMap;

use tally_model::{
    Campaign, CampaignId, CampaignState, Candidate, CandidateId, ConfigTextId, Evaluation,
    EvaluationId, EvaluationState, Measurement, MeasurementId, UnitValues, UnixMillis,
};

use crate::error::StoreError;
use crate::records::{
    CampaignSnapshot, CampaignTotals, EvaluationDuration, NewCampaign, NewCandidate, NewEvaluation,
    NewMeasurement, VerdictWrite, VerdictWriteOutcome,
};

/// Durable storage of campaigns, candidates, evaluations and measurements. Object-safe and
/// synchronous; `Send + Sync`, so one store can be shared (`Arc<dyn Store>`) between threads.
pub trait Store: Send + Sync {
    // --- campaigns -----------------------------------------------------------------------

    /// Registers a campaign: `active`, no head, the config text stored (deduplicated).
    /// Fails with `CampaignExists` when the name is taken.
    fn create_campaign(&self, new: &NewCampaign) -> Result<Campaign, StoreError>;

    /// The campaign with this id.
    fn campaign(&self, id: CampaignId) -> Result<Option<Campaign>, StoreError>;

    /// The campaign with this name.
    fn campaign_by_name(&self, name: &str) -> Result<Option<Campaign>, StoreError>;

    /// Every campaign, by id.
    fn list_campaigns(&self) -> Result<Vec<Campaign>, StoreError>;

    /// Sets the state and its reason (`None` clears it) and stamps `state_since = at`.
    fn set_campaign_state(
        &self,
        id: CampaignId,
        state: CampaignState,
        reason: Option<&str>,
        at: UnixMillis,
    ) -> Result<Campaign, StoreError>;

    /// Records the current evaluator identity and `tally.toml` text (stored deduplicated).
    fn set_campaign_config(
        &self,
        id: CampaignId,
        evaluator: &str,
        config_text: &str,
    ) -> Result<Campaign, StoreError>;

    /// Moves the head. The target must be a `keep` of this campaign (`InvalidValue`
    /// otherwise). Verdict writes can move the head atomically instead (`HeadUpdate`).
    fn set_head(&self, id: CampaignId, head: CandidateId) -> Result<Campaign, StoreError>;

    // --- config texts ----------------------------------------------------------------------

    /// Stores a `tally.toml` text, once: the same text always gets the same id.
    fn record_config_text(&self, text: &str) -> Result<ConfigTextId, StoreError>;

    /// A stored config text.
    fn config_text(&self, id: ConfigTextId) -> Result<Option<String>, StoreError>;

    // --- candidates --------------------------------------------------------------------------

    /// Queues revisions in the given order, all in one transaction: each `pending`, numbered
    /// after the campaign's last candidate, with `parent` = the head at that moment. The same
    /// revision may be queued twice (two candidates).
    fn add_candidates(
        &self,
        campaign: CampaignId,
        new: &[NewCandidate],
    ) -> Result<Vec<Candidate>, StoreError>;

    /// One candidate.
    fn candidate(
        &self,
        campaign: CampaignId,
        id: CandidateId,
    ) -> Result<Option<Candidate>, StoreError>;

    /// All candidates of a campaign, oldest first.
    fn list_candidates(&self, campaign: CampaignId) -> Result<Vec<Candidate>, StoreError>;

    /// The oldest `pending` candidate: the head of the queue.
    fn next_pending_candidate(&self, campaign: CampaignId)
    -> Result<Option<Candidate>, StoreError>;

    /// Writes a verdict and its head update in one transaction. The loop never overwrites a
    /// verdict set by a person: such a write returns [`VerdictWriteOutcome::HandSet`] and
    /// changes nothing. See [`VerdictWrite`] and [`crate::HeadUpdate`] for the other rules.
    fn set_verdict(
        &self,
        campaign: CampaignId,
        candidate: CandidateId,
        write: &VerdictWrite,
    ) -> Result<VerdictWriteOutcome, StoreError>;

    // --- evaluations ---------------------------------------------------------------------------

    /// Queues an evaluation (`queued`). Candidate and bar must exist; `repeats` ≥ 1.
    fn queue_evaluation(&self, new: &NewEvaluation) -> Result<Evaluation, StoreError>;

    /// `queued` → `running`, stamping `started`. Any other state fails with
    /// `EvaluationState`.
    fn start_evaluation(&self, id: EvaluationId, at: UnixMillis) -> Result<Evaluation, StoreError>;

    /// Ends an evaluation, stamping `ended`: `running` → `finished`, or `queued`/`running` →
    /// `abandoned` (with `note` saying why). Anything else fails with `EvaluationState`.
    fn end_evaluation(
        &self,
        id: EvaluationId,
        state: EvaluationState,
        note: Option<&str>,
        at: UnixMillis,
    ) -> Result<Evaluation, StoreError>;

    /// One evaluation.
    fn evaluation(&self, id: EvaluationId) -> Result<Option<Evaluation>, StoreError>;

    /// All evaluations of a campaign, by id.
    fn list_evaluations(&self, campaign: CampaignId) -> Result<Vec<Evaluation>, StoreError>;

    /// The `queued` and `running` evaluations of a campaign, by id. At the start of
    /// `tally run`, `running` ones were left by a process that died (`docs/campaign.md#crash-safety`).
    fn unfinished_evaluations(&self, campaign: CampaignId) -> Result<Vec<Evaluation>, StoreError>;

    // --- measurements ----------------------------------------------------------------------------

    /// Records one sample and its per-unit results in one transaction, and links its `pair`
    /// back to it. Checks: candidate exists; the evaluation (if any) is `running`, belongs to
    /// the campaign, and the sample's side names its candidate or bar; `pair` is an unpaired
    /// sample of the other side of the same evaluation; `retry_of` is a failed sample of the
    /// same candidate; every metric and unit value is finite and every name non-empty;
    /// `attempt` ≥ 1.
    fn record_measurement(&self, new: &NewMeasurement) -> Result<Measurement, StoreError>;

    /// One measurement.
    fn measurement(&self, id: MeasurementId) -> Result<Option<Measurement>, StoreError>;

    /// The measurements of one candidate (bar samples taken of it included), by id.
    fn measurements_of_candidate(
        &self,
        campaign: CampaignId,
        candidate: CandidateId,
    ) -> Result<Vec<Measurement>, StoreError>;

    /// The measurements taken by one evaluation (both sides), by id.
    fn measurements_of_evaluation(
        &self,
        evaluation: EvaluationId,
    ) -> Result<Vec<Measurement>, StoreError>;

    /// Every measurement of a campaign, by id.
    fn list_measurements(&self, campaign: CampaignId) -> Result<Vec<Measurement>, StoreError>;

    /// The per-unit results of one measurement (empty when it had none).
    fn units_of_measurement(&self, id: MeasurementId) -> Result<UnitValues, StoreError>;

    /// The per-unit results of every measurement of one candidate that has any.
    fn units_of_candidate(
        &self,
        campaign: CampaignId,
        candidate: CandidateId,
    ) -> Result<BTreeMap<MeasurementId, UnitValues>, StoreError>;

    // --- bulk reads and aggregates ---------------------------------------------------------------

    /// The campaign with all its candidates, measurements and evaluations, read in one
    /// consistent snapshot (one query per kind).
    fn snapshot(&self, campaign: CampaignId) -> Result<CampaignSnapshot, StoreError>;

    /// Counts and sums for facts and stop rules.
    fn totals(&self, campaign: CampaignId) -> Result<CampaignTotals, StoreError>;

    /// The latest `limit` *finished* evaluations with their summed wall time, newest first.
    fn recent_evaluation_durations(
        &self,
        campaign: CampaignId,
        limit: u32,
    ) -> Result<Vec<EvaluationDuration>, StoreError>;

    /// This store as one that also keeps ideas and implementer runs
    /// ([`crate::ImplementerStore`]); `None` for a backend that does not (yet) keep them.
    fn with_ideas(&self) -> Option<&dyn crate::ImplementerStore> {
        None
    }

    /// This store as one shared by several `tally run` workers on a campaign
    /// ([`crate::WorkerStore`], `docs/team.md#workers`); `None` for a store that one `tally
    /// run` drives alone.
    fn with_workers(&self) -> Option<&dyn crate::WorkerStore> {
        None
    }

    /// What shows that something other than the store's own code wrote it, as one sentence
    /// that names the fix (`docs/store.md#guard`); `None` when nothing does. The engine holds
    /// the campaign with it (`store tampered: …`) before every evaluation and launch, so it
    /// must be cheap. A backend that no implementer can reach (PostgreSQL: its URL is never in
    /// an agent's environment) answers `None`.
    fn tampering(&self) -> Result<Option<String>, StoreError> {
        Ok(None)
    }

    /// This store as one that also keeps check runs ([`crate::CheckStore`]); `None` for a
    /// backend that does not (yet): the checks still run, and run again for every evaluation.
    fn with_checks(&self) -> Option<&dyn crate::CheckStore> {
        None
    }
}
