//! Running one evaluation (`docs/campaign.md#evaluating`): its samples in order — candidate and bar
//! alternately (C B, B C, C B, ...) when paired, the candidate alone when not — each committed to
//! the store the moment it ends (both attempts of a retried sample), stopping at the first
//! failure. Ctrl-C records the interrupted sample as failed (`interrupted`) and abandons the
//! evaluation, so its candidate stays pending and is evaluated again by the next `tally run`.

use std::time::Duration;

use tally_contract::{
    Attempt, CancelToken, CommitId, EvaluateCommand, NewMeasurement, Outcome, SampleRequest,
};
use tally_model::{
    Actor, Campaign, CandidateId, ConfigTextId, Evaluation, EvaluationState, EvidenceRef,
    MeasurementId, Side, UnitValues,
};

use crate::engine::Engine;
use crate::error::{EngineError, Result};
use crate::observer::SampleStart;

/// How an evaluation ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EvaluationEnd {
    /// Every planned sample ran, or the sequence stopped at a failure.
    Finished,
    /// Ctrl-C: the evaluation was abandoned; its candidate stays pending.
    Interrupted,
}

impl Engine<'_> {
    /// Runs a queued evaluation to its end.
    pub(crate) fn run_evaluation(
        &self,
        campaign: &Campaign,
        evaluation: &Evaluation,
        cancel: &CancelToken,
    ) -> Result<EvaluationEnd> {
        let config = self.store.record_config_text(self.config_text)?;
        let started = self
            .store
            .start_evaluation(evaluation.id, self.clock.now())?;
        let candidate_rev = self.revision(campaign, evaluation.candidate)?;
        let bar = evaluation.bar.filter(|b| *b != evaluation.candidate);
        let bar_rev = match bar {
            Some(b) => Some(self.revision(campaign, b)?),
            None => None,
        };
        // The order of (side, sample index) of the whole evaluation.
        let mut plan: Vec<(Side, u32)> = Vec::new();
        for i in 0..started.repeats {
            match bar {
                Some(_) if i % 2 == 0 => plan.extend([(Side::Candidate, i), (Side::Bar, i)]),
                Some(_) => plan.extend([(Side::Bar, i), (Side::Candidate, i)]),
                None => plan.push((Side::Candidate, i)),
            }
        }
        let total = plan.len() as u32;
        let mut first_of_pair: Option<MeasurementId> = None;
        for (position, (side, sample)) in plan.into_iter().enumerate() {
            let (candidate, revision) = match side {
                Side::Candidate => (evaluation.candidate, &candidate_rev),
                Side::Bar => (
                    bar.expect("a bar side only when paired"),
                    bar_rev.as_ref().expect("bar revision"),
                ),
            };
            let start = SampleStart {
                candidate,
                side: side.as_str(),
                sample,
                of: total,
                position: position as u32,
                timeout: self.timeout(),
            };
            self.observer.sample_started(&start);
            let request = SampleRequest {
                command: EvaluateCommand {
                    argv: self.settings.evaluate.clone(),
                    timeout: self.timeout(),
                    links: self.settings.link.iter().map(Into::into).collect(),
                },
                revision: revision.clone(),
                candidate: candidate.0.to_string(),
                side,
                sample,
                required_metrics: self.settings.required_metrics(),
                log_dir: self
                    .log_root
                    .join(format!("evaluation-{}", evaluation.id.0)),
            };
            // In a pair, the second sample links to the first.
            let pair = if bar.is_some() && position % 2 == 1 {
                first_of_pair
            } else {
                None
            };
            let mut recorded: Vec<(MeasurementId, bool)> = Vec::new();
            let mut record_error: Option<EngineError> = None;
            let mut attempt_started = self.clock.now();
            let attempts = self
                .runner
                .run_sample(&request, cancel, &mut |attempt: &Attempt| {
                    if record_error.is_some() {
                        return;
                    }
                    let retry_of = recorded.last().map(|(id, _)| *id);
                    let ended = self.clock.now();
                    match self.record_attempt(
                        campaign,
                        evaluation,
                        candidate,
                        side,
                        sample,
                        attempt,
                        retry_of,
                        if attempt.is_success() { pair } else { None },
                        config,
                        (attempt_started, ended),
                    ) {
                        Ok(id) => recorded.push((id, attempt.is_success())),
                        Err(e) => record_error = Some(e),
                    }
                    attempt_started = self.clock.now();
                });
            if let Some(e) = record_error {
                return Err(e);
            }
            let last = attempts.last().expect("a sample has at least one attempt");
            self.observer
                .sample_finished(&start, last.wall.as_secs_f64(), last.error().as_deref());
            if cancel.is_cancelled() || matches!(last.outcome, Outcome::Cancelled) {
                self.store.end_evaluation(
                    evaluation.id,
                    EvaluationState::Abandoned,
                    Some("interrupted"),
                    self.clock.now(),
                )?;
                return Ok(EvaluationEnd::Interrupted);
            }
            if !last.is_success() {
                break;
            }
            let (id, _) = *recorded.last().expect("recorded");
            first_of_pair = if bar.is_some() && position % 2 == 0 {
                Some(id)
            } else {
                None
            };
        }
        self.store.end_evaluation(
            evaluation.id,
            EvaluationState::Finished,
            None,
            self.clock.now(),
        )?;
        Ok(EvaluationEnd::Finished)
    }

    fn timeout(&self) -> Duration {
        Duration::from_secs_f64(self.settings.evaluate_timeout_s)
    }

    fn revision(&self, campaign: &Campaign, id: CandidateId) -> Result<CommitId> {
        let candidate = self
            .store
            .candidate(campaign.id, id)?
            .ok_or_else(|| EngineError::Refused(format!("{id} does not exist")))?;
        CommitId::parse(&candidate.revision).ok_or_else(|| {
            EngineError::Refused(format!(
                "{id} has revision {:?}, which is not a full commit id",
                candidate.revision
            ))
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn record_attempt(
        &self,
        campaign: &Campaign,
        evaluation: &Evaluation,
        candidate: CandidateId,
        side: Side,
        sample: u32,
        attempt: &Attempt,
        retry_of: Option<MeasurementId>,
        pair: Option<MeasurementId>,
        config: ConfigTextId,
        (started, ended): (tally_model::UnixMillis, tally_model::UnixMillis),
    ) -> Result<MeasurementId> {
        let metrics = attempt
            .metrics
            .iter()
            .filter(|(_, v)| v.is_finite())
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        let units: UnitValues = attempt.units.clone().unwrap_or_default();
        let m = self.store.record_measurement(&NewMeasurement {
            campaign: campaign.id,
            candidate,
            evaluation: Some(evaluation.id),
            side,
            sample,
            attempt: attempt.attempt,
            retry_of,
            pair,
            evaluator: self.evaluator.clone(),
            rung: None,
            duration_ns: Some(u64::try_from(attempt.wall.as_nanos()).unwrap_or(u64::MAX)),
            metrics,
            error: attempt.error(),
            started,
            ended,
            stdout_log: attempt.logs.as_ref().map(|l| l.stdout.clone()),
            stderr_log: attempt.logs.as_ref().map(|l| l.stderr.clone()),
            evidence: attempt
                .evidence
                .as_ref()
                .map_or_else(EvidenceRef::default, |e| EvidenceRef {
                    artifact: Some(e.artifact.to_string_lossy().into_owned()),
                    gpu_busy_ns: e.accounted.as_ref().map(|a| a.gpu_busy_ns),
                }),
            config: Some(config),
            recorded_by: Actor::Loop,
            units,
        })?;
        Ok(m.id)
    }
}
