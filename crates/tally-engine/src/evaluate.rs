//! Running one evaluation (`docs/campaign.md#evaluating`): its samples in order — candidate and bar
//! alternately (C B, B C, C B, ...) when paired, the candidate alone when not — each committed to
//! the store the moment it ends (both attempts of a retried sample), stopping at the first
//! failure. The pairs the verdict rule asks for after the first `repeats` continue the same
//! evaluation, with the same indices and alternation (`docs/verdicts.md#more-pairs`). Ctrl-C
//! records the interrupted sample as failed (`interrupted`) and abandons the evaluation, so its
//! candidate stays pending and is evaluated again by the next `tally run`. An evaluation resumed
//! after a killed run (`docs/team.md#adopting`) walks the same order and skips the samples it
//! already recorded.

use std::time::Duration;

use tally_contract::{
    Attempt, CancelToken, CommitId, EvaluateCommand, NewMeasurement, Outcome, SampleRequest,
    error_is_retried,
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

/// An evaluation under way: the revisions its samples check out and how far they got. Samples
/// are added pair by pair ([`Engine::run_samples`]) until it is finished.
pub(crate) struct Running {
    evaluation: Evaluation,
    config: ConfigTextId,
    candidate_rev: CommitId,
    /// The bar and its revision, when paired.
    bar: Option<(CandidateId, CommitId)>,
    /// The index of the next sample on each side (of the next pair, when paired).
    next: u32,
    /// Samples planned so far, both sides (the `of` of a [`SampleStart`]).
    planned: u32,
    /// Samples started so far, both sides.
    position: u32,
    /// Whether a sample failed: the sequence stopped there.
    pub(crate) failed: bool,
    /// Whether it was left running by a killed `tally run` and resumed: a sample it already
    /// recorded is not run again (`docs/team.md#adopting`).
    pub(crate) resumed: bool,
}

impl Running {
    /// The evaluation, as started.
    pub(crate) fn evaluation(&self) -> &Evaluation {
        &self.evaluation
    }

    /// Whether its samples are paired with a bar.
    pub(crate) fn is_paired(&self) -> bool {
        self.bar.is_some()
    }
}

/// How a run of samples ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SamplesEnd {
    /// Every sample asked for ran.
    Done,
    /// A sample failed (after its retry, if any); the rest were not run.
    Failed,
    /// The gate held the next sample back, with this reason; the rest were not run.
    Held(String),
    /// Ctrl-C: the evaluation was abandoned.
    Interrupted,
}

impl Engine<'_> {
    /// Runs a queued evaluation to its end: its `repeats` pairs (samples, when unpaired).
    pub(crate) fn run_evaluation(
        &self,
        campaign: &Campaign,
        evaluation: &Evaluation,
        cancel: &CancelToken,
    ) -> Result<EvaluationEnd> {
        let mut running = self.begin_evaluation(campaign, evaluation)?;
        let repeats = running.evaluation.repeats;
        if self.run_samples(campaign, &mut running, repeats, cancel, &mut || Ok(None))?
            == SamplesEnd::Interrupted
        {
            return Ok(EvaluationEnd::Interrupted);
        }
        self.finish_evaluation(&running)?;
        Ok(EvaluationEnd::Finished)
    }

    /// Marks a queued evaluation running and resolves its revisions.
    pub(crate) fn begin_evaluation(
        &self,
        campaign: &Campaign,
        evaluation: &Evaluation,
    ) -> Result<Running> {
        let config = self.store.record_config_text(self.config_text)?;
        let started = self
            .store
            .start_evaluation(evaluation.id, self.clock.now())?;
        self.begin_started(campaign, started, config)
    }

    /// Resolves the revisions of an evaluation a worker claimed (already running).
    pub(crate) fn begin_claimed(
        &self,
        campaign: &Campaign,
        claimed: Evaluation,
    ) -> Result<Running> {
        let config = self.store.record_config_text(self.config_text)?;
        self.begin_started(campaign, claimed, config)
    }

    fn begin_started(
        &self,
        campaign: &Campaign,
        started: Evaluation,
        config: ConfigTextId,
    ) -> Result<Running> {
        let evaluation = &started;
        let candidate_rev = self.revision(campaign, evaluation.candidate)?;
        let bar = match evaluation.bar.filter(|b| *b != evaluation.candidate) {
            Some(b) => Some((b, self.revision(campaign, b)?)),
            None => None,
        };
        Ok(Running {
            evaluation: started.clone(),
            config,
            candidate_rev,
            bar,
            next: 0,
            planned: 0,
            position: 0,
            failed: false,
            resumed: false,
        })
    }

    /// Ends a running evaluation as finished.
    pub(crate) fn finish_evaluation(&self, running: &Running) -> Result<()> {
        self.store.end_evaluation(
            running.evaluation.id,
            EvaluationState::Finished,
            None,
            self.clock.now(),
        )?;
        Ok(())
    }

    /// Runs `count` more pairs of a running evaluation (samples, when unpaired), continuing its
    /// sample indices and its alternation — C B for an even index, B C for an odd one — each
    /// sample committed the moment it ends. `gate` is asked before each sample: a reason holds
    /// that sample and the rest back. Stops at the first failure; Ctrl-C records the sample in
    /// flight as interrupted and abandons the evaluation.
    pub(crate) fn run_samples(
        &self,
        campaign: &Campaign,
        running: &mut Running,
        count: u32,
        cancel: &CancelToken,
        gate: &mut dyn FnMut() -> Result<Option<String>>,
    ) -> Result<SamplesEnd> {
        let evaluation = running.evaluation.clone();
        let paired = running.bar.is_some();
        // The order of (side, sample index) of these samples.
        let mut plan: Vec<(Side, u32)> = Vec::new();
        for i in running.next..running.next + count {
            match running.bar {
                Some(_) if i % 2 == 0 => plan.extend([(Side::Candidate, i), (Side::Bar, i)]),
                Some(_) => plan.extend([(Side::Bar, i), (Side::Candidate, i)]),
                None => plan.push((Side::Candidate, i)),
            }
        }
        running.next += count;
        running.planned += plan.len() as u32;
        let mut first_of_pair: Option<MeasurementId> = None;
        // A resumed evaluation's samples the killed run recorded.
        let recorded_before = if running.resumed {
            self.store.measurements_of_evaluation(evaluation.id)?
        } else {
            Vec::new()
        };
        for (in_plan, (side, sample)) in plan.into_iter().enumerate() {
            // Already recorded (by the run that was killed): its last attempt stands, unless it
            // is a first attempt killed from outside whose retry was under way.
            let done = recorded_before
                .iter()
                .filter(|m| m.side == side && m.sample == sample)
                .max_by_key(|m| m.attempt);
            let retry_of =
                done.filter(|m| m.attempt == 1 && m.error.as_deref().is_some_and(error_is_retried));
            if let Some(done) = done.filter(|_| retry_of.is_none()) {
                running.position += 1;
                if done.error.is_some() {
                    running.failed = true;
                    return Ok(SamplesEnd::Failed);
                }
                first_of_pair = (paired && in_plan % 2 == 0).then_some(done.id);
                continue;
            }
            if let Some(reason) = gate()? {
                return Ok(SamplesEnd::Held(reason));
            }
            let (candidate, revision) = match (side, &running.bar) {
                (Side::Candidate, _) => (evaluation.candidate, &running.candidate_rev),
                (Side::Bar, Some((bar, rev))) => (*bar, rev),
                (Side::Bar, None) => unreachable!("a bar side only when paired"),
            };
            let start = SampleStart {
                candidate,
                side: side.as_str(),
                sample,
                of: running.planned,
                position: running.position,
                timeout: self.timeout(),
            };
            running.position += 1;
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
            let pair = if paired && in_plan % 2 == 1 {
                first_of_pair
            } else {
                None
            };
            let mut recorded: Vec<(MeasurementId, bool)> =
                retry_of.iter().map(|m| (m.id, false)).collect();
            let mut record_error: Option<EngineError> = None;
            let mut attempt_started = self.clock.now();
            let config = running.config;
            let mut on_attempt = |attempt: &Attempt| {
                if record_error.is_some() {
                    return;
                }
                let retry_of = recorded.last().map(|(id, _)| *id);
                let ended = self.clock.now();
                match self.record_attempt(
                    campaign,
                    &evaluation,
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
            };
            let attempts = match retry_of {
                // The retry the killed run had started (or was about to): attempt 2 alone.
                Some(_) => {
                    let second = self.runner.run_attempt(&request, 2, cancel);
                    on_attempt(&second);
                    vec![second]
                }
                None => self.runner.run_sample(&request, cancel, &mut on_attempt),
            };
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
                return Ok(SamplesEnd::Interrupted);
            }
            if !last.is_success() {
                running.failed = true;
                return Ok(SamplesEnd::Failed);
            }
            let (id, _) = *recorded.last().expect("recorded");
            first_of_pair = if paired && in_plan % 2 == 0 {
                Some(id)
            } else {
                None
            };
        }
        Ok(SamplesEnd::Done)
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
            held: attempt.held,
        })?;
        Ok(m.id)
    }
}
