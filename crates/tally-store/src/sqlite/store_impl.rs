//! `impl Store for SqliteStore`: each method picks a write or read transaction and hands the
//! connection to the query module that owns the table.
//!
//! No SQL and no rules here; see the sibling modules.

use std::collections::BTreeMap;

use tally_contract::{
    CampaignSnapshot, CampaignTotals, EvaluationDuration, NewCampaign, NewCandidate, NewEvaluation,
    NewMeasurement, Store, VerdictWrite, VerdictWriteOutcome,
};
use tally_model::{
    Campaign, CampaignId, CampaignState, Candidate, CandidateId, ConfigTextId, Evaluation,
    EvaluationId, EvaluationState, Measurement, MeasurementId, UnitValues, UnixMillis,
};

use super::{SqliteStore, campaigns, candidates, evaluations, measurements, totals};
use crate::error::StoreError;

impl Store for SqliteStore {
    fn with_ideas(&self) -> Option<&dyn tally_contract::ImplementerStore> {
        Some(self)
    }

    fn with_checks(&self) -> Option<&dyn tally_contract::CheckStore> {
        Some(self)
    }

    fn with_workers(&self) -> Option<&dyn tally_contract::WorkerStore> {
        self.worker
            .map(|_| self as &dyn tally_contract::WorkerStore)
    }

    fn tampering(&self) -> Result<Option<String>, StoreError> {
        self.guard_damage()
    }

    fn create_campaign(&self, new: &NewCampaign) -> Result<Campaign, StoreError> {
        self.write(|c| campaigns::create(c, new))
    }

    fn campaign(&self, id: CampaignId) -> Result<Option<Campaign>, StoreError> {
        self.read(|c| campaigns::get(c, id))
    }

    fn campaign_by_name(&self, name: &str) -> Result<Option<Campaign>, StoreError> {
        self.read(|c| campaigns::by_name(c, name))
    }

    fn list_campaigns(&self) -> Result<Vec<Campaign>, StoreError> {
        self.read(campaigns::list)
    }

    fn set_campaign_state(
        &self,
        id: CampaignId,
        state: CampaignState,
        reason: Option<&str>,
        at: UnixMillis,
    ) -> Result<Campaign, StoreError> {
        self.write(|c| campaigns::set_state(c, id, state, reason, at))
    }

    fn set_campaign_config(
        &self,
        id: CampaignId,
        evaluator: &str,
        config_text: &str,
    ) -> Result<Campaign, StoreError> {
        self.write(|c| campaigns::set_config(c, id, evaluator, config_text))
    }

    fn set_head(&self, id: CampaignId, head: CandidateId) -> Result<Campaign, StoreError> {
        self.write(|c| campaigns::set_head(c, id, Some(head)))
    }

    fn record_config_text(&self, text: &str) -> Result<ConfigTextId, StoreError> {
        self.write(|c| campaigns::record_config_text(c, text))
    }

    fn config_text(&self, id: ConfigTextId) -> Result<Option<String>, StoreError> {
        self.read(|c| campaigns::config_text(c, id))
    }

    fn add_candidates(
        &self,
        campaign: CampaignId,
        new: &[NewCandidate],
    ) -> Result<Vec<Candidate>, StoreError> {
        self.write(|c| candidates::add(c, campaign, new))
    }

    fn candidate(
        &self,
        campaign: CampaignId,
        id: CandidateId,
    ) -> Result<Option<Candidate>, StoreError> {
        self.read(|c| candidates::get(c, campaign, id))
    }

    fn list_candidates(&self, campaign: CampaignId) -> Result<Vec<Candidate>, StoreError> {
        self.read(|c| candidates::list(c, campaign))
    }

    fn next_pending_candidate(
        &self,
        campaign: CampaignId,
    ) -> Result<Option<Candidate>, StoreError> {
        self.read(|c| candidates::next_pending(c, campaign))
    }

    fn set_verdict(
        &self,
        campaign: CampaignId,
        candidate: CandidateId,
        write: &VerdictWrite,
    ) -> Result<VerdictWriteOutcome, StoreError> {
        self.write(|c| candidates::set_verdict(c, campaign, candidate, write))
    }

    fn queue_evaluation(&self, new: &NewEvaluation) -> Result<Evaluation, StoreError> {
        self.write(|c| evaluations::queue(c, new))
    }

    fn start_evaluation(&self, id: EvaluationId, at: UnixMillis) -> Result<Evaluation, StoreError> {
        self.write(|c| evaluations::start(c, id, at))
    }

    fn end_evaluation(
        &self,
        id: EvaluationId,
        state: EvaluationState,
        note: Option<&str>,
        at: UnixMillis,
    ) -> Result<Evaluation, StoreError> {
        self.write(|c| evaluations::end(c, id, state, note, at))
    }

    fn evaluation(&self, id: EvaluationId) -> Result<Option<Evaluation>, StoreError> {
        self.read(|c| evaluations::get(c, id))
    }

    fn list_evaluations(&self, campaign: CampaignId) -> Result<Vec<Evaluation>, StoreError> {
        self.read(|c| evaluations::list(c, campaign))
    }

    fn unfinished_evaluations(&self, campaign: CampaignId) -> Result<Vec<Evaluation>, StoreError> {
        self.read(|c| evaluations::unfinished(c, campaign))
    }

    fn record_measurement(&self, new: &NewMeasurement) -> Result<Measurement, StoreError> {
        self.write(|c| measurements::record(c, new))
    }

    fn measurement(&self, id: MeasurementId) -> Result<Option<Measurement>, StoreError> {
        self.read(|c| measurements::get(c, id))
    }

    fn measurements_of_candidate(
        &self,
        campaign: CampaignId,
        candidate: CandidateId,
    ) -> Result<Vec<Measurement>, StoreError> {
        self.read(|c| measurements::of_candidate(c, campaign, candidate))
    }

    fn measurements_of_evaluation(
        &self,
        evaluation: EvaluationId,
    ) -> Result<Vec<Measurement>, StoreError> {
        self.read(|c| measurements::of_evaluation(c, evaluation))
    }

    fn list_measurements(&self, campaign: CampaignId) -> Result<Vec<Measurement>, StoreError> {
        self.read(|c| measurements::of_campaign(c, campaign))
    }

    fn units_of_measurement(&self, id: MeasurementId) -> Result<UnitValues, StoreError> {
        self.read(|c| measurements::units_of(c, id))
    }

    fn units_of_candidate(
        &self,
        campaign: CampaignId,
        candidate: CandidateId,
    ) -> Result<BTreeMap<MeasurementId, UnitValues>, StoreError> {
        self.read(|c| measurements::units_of_candidate(c, campaign, candidate))
    }

    fn snapshot(&self, campaign: CampaignId) -> Result<CampaignSnapshot, StoreError> {
        self.read(|c| totals::snapshot(c, campaign))
    }

    fn totals(&self, campaign: CampaignId) -> Result<CampaignTotals, StoreError> {
        self.read(|c| totals::totals(c, campaign))
    }

    fn recent_evaluation_durations(
        &self,
        campaign: CampaignId,
        limit: u32,
    ) -> Result<Vec<EvaluationDuration>, StoreError> {
        self.read(|c| totals::recent_evaluation_durations(c, campaign, limit))
    }
}
