//! The `[checks]` gate (`docs/campaign.md#checks`): before the first timed sample of an
//! evaluation that judges a candidate, its checks run in its checkout; a failure ends the
//! candidate `discard` unmeasured (no sample, nothing for `gpu_hours`), with the failing check's
//! name and the last lines of its output as the reason. A finished check run is recorded in the
//! store (when the backend keeps them), and a candidate that passed the same checks is not
//! checked again; a run cut short (Ctrl-C, a killed `tally run`) is not recorded, so the checks
//! run again.

use std::time::Duration;

use tally_contract::{CancelToken, CheckCommand, CheckOutcome, CheckRecord, CheckRequest};
use tally_model::{Campaign, CandidateId, Evaluation, EvaluationKind};

use crate::engine::Engine;
use crate::error::{EngineError, Result};

/// What the gate says about an evaluation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Gate {
    /// No checks apply, they passed now, or they passed before.
    Clear,
    /// A check failed: the reason for the `discard`.
    Failed(String),
    /// Ctrl-C while a check ran.
    Interrupted,
}

impl Engine<'_> {
    /// Runs the candidate's checks if this evaluation judges it and it has not passed them.
    pub(crate) fn gate_checks(
        &self,
        campaign: &Campaign,
        evaluation: &Evaluation,
        cancel: &CancelToken,
    ) -> Result<Gate> {
        let Some(checks) = self.settings.checks.as_ref() else {
            return Ok(Gate::Clear);
        };
        let candidate = evaluation.candidate;
        if !self.judges_candidate(campaign, evaluation)? {
            return Ok(Gate::Clear);
        }
        let key = checks.key();
        let record_store = self.store.with_checks();
        if let Some(store) = record_store {
            let passed = store
                .checks_of_candidate(campaign.id, candidate)?
                .iter()
                .any(|r| r.passed && r.key == key);
            if passed {
                return Ok(Gate::Clear);
            }
        }
        let revision = self.revision_of(campaign, candidate)?;
        self.observer.note(&format!(
            "{candidate}: running {} check command(s) before its samples",
            checks.commands.len()
        ));
        let request = CheckRequest {
            commands: checks
                .commands
                .iter()
                .map(|c| CheckCommand {
                    name: c.name.clone(),
                    argv: c.argv.clone(),
                })
                .collect(),
            timeout: Duration::from_secs_f64(checks.timeout_s),
            links: self.settings.link.iter().map(Into::into).collect(),
            revision,
            candidate: candidate.0.to_string(),
            log_dir: self
                .log_root
                .join(format!("evaluation-{}", evaluation.id.0)),
        };
        let started = self.clock.now();
        let outcome = self.runner.run_checks(&request, cancel);
        let (passed, failed_check, reason) = match outcome {
            CheckOutcome::Interrupted => return Ok(Gate::Interrupted),
            _ if cancel.is_cancelled() => return Ok(Gate::Interrupted),
            CheckOutcome::Passed => (true, None, None),
            CheckOutcome::Failed { name, why } => {
                let reason = format!("check `{name}` failed: {why}");
                (false, Some(name), Some(reason))
            }
        };
        if let Some(store) = record_store {
            store.record_check(
                campaign.id,
                &CheckRecord {
                    candidate,
                    key,
                    commands: checks.commands.len() as u32,
                    passed,
                    failed_check,
                    reason: reason.clone(),
                    started,
                    ended: self.clock.now(),
                },
            )?;
        }
        Ok(match reason {
            None => {
                self.observer.note(&format!("{candidate}: checks passed"));
                Gate::Clear
            }
            Some(reason) => Gate::Failed(reason),
        })
    }

    /// Whether the evaluation ends in a judgement of its candidate: not the baseline, not the
    /// head measured again, not a candidate whose verdict was set by hand.
    fn judges_candidate(&self, campaign: &Campaign, evaluation: &Evaluation) -> Result<bool> {
        Ok(match evaluation.kind {
            EvaluationKind::Baseline => false,
            EvaluationKind::Remeasure if campaign.head == Some(evaluation.candidate) => false,
            _ => !self
                .candidate_record(campaign, evaluation.candidate)?
                .is_hand_set(),
        })
    }

    fn candidate_record(
        &self,
        campaign: &Campaign,
        id: CandidateId,
    ) -> Result<tally_model::Candidate> {
        self.store
            .candidate(campaign.id, id)?
            .ok_or_else(|| EngineError::Refused(format!("{id} does not exist")))
    }

    fn revision_of(
        &self,
        campaign: &Campaign,
        id: CandidateId,
    ) -> Result<tally_contract::CommitId> {
        let candidate = self.candidate_record(campaign, id)?;
        tally_contract::CommitId::parse(&candidate.revision).ok_or_else(|| {
            EngineError::Refused(format!(
                "{id} has revision {:?}, which is not a full commit id",
                candidate.revision
            ))
        })
    }
}
