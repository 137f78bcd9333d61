//! The baseline (`docs/campaign.md#baseline`): `tally init` registers the campaign and measures
//! `HEAD`; after a baseline that failed, `tally init` measures the *current* `HEAD` — a new
//! candidate when `HEAD` moved, so that every candidate's measurements are of its own commit —
//! and the loop holds rather than judge anything against a bar without a successful measurement.

use tally_contract::{CancelToken, CommitId, NewCampaign, NewCandidate, NewEvaluation};
use tally_model::{
    Campaign, Candidate, CandidateId, Evaluation, EvaluationKind, EvaluationState, Verdict,
};

use crate::engine::Engine;
use crate::error::{EngineError, Result};
use crate::evaluate::EvaluationEnd;
use crate::run::InitOutcome;
use crate::view::{self, counts};

impl Engine<'_> {
    /// `tally init` once `tally.toml` exists: registers the campaign and measures the baseline
    /// (`head`, the campaign's repeats of unpaired samples). On a registered campaign, reports
    /// what changed instead — or, when no baseline was ever kept, measures `head` as the
    /// baseline ([`Engine::baseline`] then names the candidate measured).
    pub fn init(&self, head: &CommitId, cancel: &CancelToken) -> Result<InitOutcome> {
        if let Some(campaign) = self.store.campaign_by_name(&self.settings.name)? {
            let mut changes = Vec::new();
            if campaign.evaluator != self.evaluator {
                changes.push(format!(
                    "the evaluator changed ({} → {}): the head will be measured again before anything is judged",
                    campaign.evaluator, self.evaluator
                ));
            }
            if campaign.config_text != self.config_text {
                changes.push("tally.toml changed since it was registered".to_string());
            }
            if campaign.head.is_none() {
                let baseline = self.baseline_at(&campaign, head)?;
                return self.measure_baseline(&campaign, baseline, cancel);
            }
            return Ok(InitOutcome::AlreadyRegistered { changes });
        }
        let now = self.clock.now();
        let campaign = self.store.create_campaign(&NewCampaign {
            name: self.settings.name.clone(),
            evaluator: self.evaluator.clone(),
            config_text: self.config_text.to_string(),
            created: now,
        })?;
        let baseline = self.add_baseline_candidate(&campaign, head)?;
        self.measure_baseline(&campaign, baseline, cancel)
    }

    /// The campaign's baseline candidate: the one its latest `baseline` evaluation measured
    /// (`candidate#0` until a failed baseline was measured again at a newer `HEAD`).
    pub fn baseline(&self) -> Result<Option<Candidate>> {
        let campaign = self.campaign()?;
        let measured = self
            .store
            .list_evaluations(campaign.id)?
            .into_iter()
            .rev()
            .find(|e| e.kind == EvaluationKind::Baseline)
            .map(|e| e.candidate);
        Ok(match measured {
            Some(id) => self.store.candidate(campaign.id, id)?,
            None => self.store.list_candidates(campaign.id)?.into_iter().next(),
        })
    }

    /// The candidate to measure as the baseline at `head`: the baseline so far when it is that
    /// commit, else a new candidate for `head`. A baseline job left queued for another commit
    /// (an interrupted init) is abandoned: it would measure a commit nobody asked for.
    fn baseline_at(&self, campaign: &Campaign, head: &CommitId) -> Result<CandidateId> {
        let current = self
            .baseline()?
            .ok_or_else(|| EngineError::Refused("the campaign has no baseline candidate".into()))?;
        if current.revision == head.as_str() {
            return Ok(current.id);
        }
        for left in self.queued_baseline_jobs(campaign)? {
            self.store.end_evaluation(
                left.id,
                EvaluationState::Abandoned,
                Some(&format!(
                    "tally init measures the baseline at HEAD {} instead",
                    short(head.as_str())
                )),
                self.clock.now(),
            )?;
        }
        self.add_baseline_candidate(campaign, head)
    }

    fn add_baseline_candidate(&self, campaign: &Campaign, head: &CommitId) -> Result<CandidateId> {
        let added = self.store.add_candidates(
            campaign.id,
            &[NewCandidate {
                revision: head.as_str().to_string(),
                proposed_by: "tally init".into(),
                note: Some("baseline".into()),
                created: self.clock.now(),
            }],
        )?;
        added
            .first()
            .map(|c| c.id)
            .ok_or_else(|| EngineError::Refused("the baseline candidate was not added".into()))
    }

    fn queued_baseline_jobs(&self, campaign: &Campaign) -> Result<Vec<Evaluation>> {
        Ok(self
            .store
            .unfinished_evaluations(campaign.id)?
            .into_iter()
            .filter(|e| e.kind == EvaluationKind::Baseline && e.state == EvaluationState::Queued)
            .collect())
    }

    fn measure_baseline(
        &self,
        campaign: &Campaign,
        baseline: CandidateId,
        cancel: &CancelToken,
    ) -> Result<InitOutcome> {
        // The job an interrupted init left queued is run, rather than a second one queued.
        let left = self
            .queued_baseline_jobs(campaign)?
            .into_iter()
            .find(|e| e.candidate == baseline);
        let evaluation = match left {
            Some(evaluation) => evaluation,
            None => self.store.queue_evaluation(&NewEvaluation {
                campaign: campaign.id,
                candidate: baseline,
                bar: None,
                kind: EvaluationKind::Baseline,
                repeats: self.settings.repeats(),
                queued: self.clock.now(),
            })?,
        };
        if self.run_evaluation(campaign, &evaluation, cancel)? == EvaluationEnd::Interrupted {
            // Queued again, so that `tally run` (or init again) measures it as the baseline
            // instead of judging it as an ordinary candidate against no bar.
            self.queue_again(campaign, &evaluation)?;
            return Ok(InitOutcome::Interrupted);
        }
        self.judge_baseline(campaign, baseline)
    }

    pub(crate) fn judge_baseline(
        &self,
        campaign: &Campaign,
        baseline: CandidateId,
    ) -> Result<InitOutcome> {
        let measurements = self
            .store
            .measurements_of_candidate(campaign.id, baseline)?;
        let primary = &self.settings.primary().name;
        let means = view::means(&measurements, &self.evaluator);
        match means.get(primary) {
            Some(value) => {
                let reason = format!("baseline: {primary} {}", tally_stats::format_sig4(*value));
                self.write_verdict(campaign, baseline, Verdict::Keep, &reason, None)?;
                Ok(InitOutcome::Registered {
                    primary: Some(*value),
                })
            }
            None => {
                let why = measurements
                    .iter()
                    .rev()
                    .find_map(|m| m.error.clone())
                    .unwrap_or_else(|| format!("the baseline did not print `{primary}`"));
                let reason = format!("no successful measurement: {why}");
                self.write_verdict(campaign, baseline, Verdict::Crash, &reason, None)?;
                Ok(InitOutcome::BaselineFailed(reason))
            }
        }
    }

    /// Why a candidate must not be judged against `bar` now, if it must not: the bar has no
    /// successful measurement of the primary under the current evaluator, so a judgement would
    /// compare with nothing (`docs/campaign.md#baseline`). The answer names the command that
    /// measures the bar again; `tally run` holds with it.
    pub(crate) fn unscored_bar(
        &self,
        campaign: &Campaign,
        bar: Option<CandidateId>,
    ) -> Result<Option<String>> {
        let primary = &self.settings.primary().name;
        let Some(bar) = bar else {
            let baseline = self.baseline()?;
            let what = match &baseline {
                Some(b) => format!(
                    "the baseline {} ({}) has no successful measurement{}",
                    b.id,
                    short(&b.revision),
                    b.reason
                        .as_deref()
                        .and_then(|r| r.strip_prefix("no successful measurement"))
                        .unwrap_or("")
                ),
                None => "the campaign has no baseline".to_string(),
            };
            return Ok(Some(format!(
                "{what}; nothing is judged without a bar: fix the benchmark, commit, and run \
                 `tally init` to measure HEAD as the baseline"
            )));
        };
        let measurements = self.store.measurements_of_candidate(campaign.id, bar)?;
        let scored = measurements
            .iter()
            .any(|m| counts(m, &self.evaluator) && m.metrics.contains_key(primary));
        if scored {
            return Ok(None);
        }
        let why = measurements
            .iter()
            .rev()
            .filter(|m| m.evaluator == self.evaluator)
            .find_map(|m| m.error.as_deref())
            .map(|e| format!(" (its last failure: {e})"))
            .unwrap_or_default();
        Ok(Some(format!(
            "the bar {bar} has no successful measurement of `{primary}` under the current \
             evaluator{why}; nothing is judged against it: fix what failed, then `tally candidate \
             remeasure {}` measures it again",
            bar.0
        )))
    }
}

/// The first 12 hex digits of a commit id, as commands print them.
pub(crate) fn short(revision: &str) -> &str {
    &revision[..12.min(revision.len())]
}
