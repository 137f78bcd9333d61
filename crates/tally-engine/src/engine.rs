//! [`Engine`]: one campaign's store, runner, settings and providers, and the small operations the
//! commands call (add candidates, set a verdict by hand, add a measurement, resume). The loop
//! lives in `run.rs`, evaluations in `evaluate.rs`, judging in `judge.rs`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use tally_config::Settings;
use tally_contract::{
    CampaignSnapshot, CommitId, HeadUpdate, NewCandidate, NewEvaluation, NewMeasurement,
    SampleRunner, Store, VerdictWrite, VerdictWriteOutcome,
};
use tally_model::{
    Actor, Campaign, CampaignState, Candidate, CandidateId, EvaluationKind, EvidenceRef, Side,
    UnitValues, Verdict,
};
use tally_plugin::{
    CampaignData, FactInfo, Facts, ProviderError, SectionInput, SectionOutput, Surface,
};

use crate::clock::Clock;
use crate::error::{EngineError, Result};
use crate::evaluator::evaluator_identity;
use crate::facts;
use crate::observer::Observer;
use crate::providers::Providers;
use crate::view;

/// One campaign, ready to work.
pub struct Engine<'a> {
    pub(crate) store: &'a dyn Store,
    pub(crate) runner: &'a dyn SampleRunner,
    pub(crate) settings: &'a Settings,
    pub(crate) providers: &'a Providers,
    pub(crate) config_text: &'a str,
    pub(crate) clock: &'a dyn Clock,
    pub(crate) observer: &'a dyn Observer,
    pub(crate) log_root: PathBuf,
    pub(crate) evaluator: String,
    /// Candidates whose verdict rule failed during the [`Engine::judge_one`] calls of this
    /// engine: not retried until the next `tally run`.
    pub(crate) rule_failed: std::sync::Mutex<std::collections::BTreeSet<tally_model::CandidateId>>,
    /// Set when the other workers of this process end their run: take no new work.
    pub(crate) drain: Option<&'a AtomicBool>,
}

/// What `tally status` shows.
#[derive(Clone, Debug)]
pub struct StatusReport {
    /// The campaign view (candidates with their means, measurements).
    pub data: CampaignData,
    /// Every fact supplied now.
    pub facts: Facts,
    /// Errors of fact sources that failed.
    pub fact_errors: Vec<String>,
    /// The sections of the surface, in display order.
    pub sections: Vec<SectionOutput>,
}

/// A report added by hand (`tally measurement add`).
#[derive(Clone, Debug, Default)]
pub struct ManualReport {
    /// Metric values.
    pub metrics: std::collections::BTreeMap<String, f64>,
    /// Wall time, seconds.
    pub seconds: Option<f64>,
    /// Failure sentence, or `None` for a success.
    pub error: Option<String>,
    /// The evidence artifact behind it and the GPU busy time it accounts for (empty: none).
    pub evidence: EvidenceRef,
}

impl<'a> Engine<'a> {
    /// An engine for the campaign `settings` names. `log_root` is where sample logs go
    /// (`.tally/logs/<campaign>`).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        store: &'a dyn Store,
        runner: &'a dyn SampleRunner,
        settings: &'a Settings,
        providers: &'a Providers,
        config_text: &'a str,
        clock: &'a dyn Clock,
        observer: &'a dyn Observer,
        log_root: PathBuf,
    ) -> Self {
        Self {
            store,
            runner,
            settings,
            providers,
            config_text,
            clock,
            observer,
            log_root,
            evaluator: evaluator_identity(settings),
            rule_failed: Default::default(),
            drain: None,
        }
    }

    /// This engine as one of several workers of one process (`docs/team.md#slurm-slots`): once
    /// `drain` is set (another worker's run ended held, stopped, interrupted or failed),
    /// [`run`](Self::run) finishes the evaluation in hand, takes no new work and returns
    /// [`RunEnd::Idle`](crate::RunEnd::Idle).
    pub fn draining_on(mut self, drain: &'a AtomicBool) -> Self {
        self.drain = Some(drain);
        self
    }

    /// Whether another worker of this process asked this one to take no new work.
    pub(crate) fn drained(&self) -> bool {
        self.drain.is_some_and(|d| d.load(Ordering::SeqCst))
    }

    /// The current evaluator identity.
    pub fn evaluator(&self) -> &str {
        &self.evaluator
    }

    /// The registered campaign.
    pub fn campaign(&self) -> Result<Campaign> {
        self.store
            .campaign_by_name(&self.settings.name)?
            .ok_or_else(|| EngineError::NotRegistered(self.settings.name.clone()))
    }

    /// One candidate of the campaign, or a clear refusal.
    pub fn candidate(&self, id: CandidateId) -> Result<Candidate> {
        let campaign = self.campaign()?;
        self.store.candidate(campaign.id, id)?.ok_or_else(|| {
            EngineError::Refused(format!(
                "{id} does not exist in campaign `{}`",
                campaign.name
            ))
        })
    }

    /// Queues revisions (pending, parent = head), in order.
    pub fn add_candidates(
        &self,
        revisions: &[CommitId],
        note: Option<&str>,
        proposed_by: &str,
    ) -> Result<Vec<Candidate>> {
        let campaign = self.campaign()?;
        let now = self.clock.now();
        let new: Vec<NewCandidate> = revisions
            .iter()
            .map(|r| NewCandidate {
                revision: r.as_str().to_string(),
                proposed_by: proposed_by.to_string(),
                note: note.map(str::to_string),
                created: now,
            })
            .collect();
        Ok(self.store.add_candidates(campaign.id, &new)?)
    }

    /// Sets a verdict by hand (`tally candidate verdict`). A hand-set `keep` becomes the head; a
    /// hand-set non-keep on the head moves the head back to the latest other keep. The loop never
    /// overwrites it.
    pub fn set_verdict_by_hand(
        &self,
        id: CandidateId,
        verdict: Verdict,
        reason: &str,
        who: &str,
    ) -> Result<Candidate> {
        let campaign = self.campaign()?;
        let candidate = self.candidate(id)?;
        let head = if verdict == Verdict::Keep {
            HeadUpdate::Set(Some(id))
        } else if campaign.head == Some(id) {
            let previous = self
                .store
                .list_candidates(campaign.id)?
                .into_iter()
                .filter(|c| c.id != id && c.verdict == Verdict::Keep)
                .map(|c| c.id)
                .max();
            HeadUpdate::Set(previous)
        } else {
            HeadUpdate::Unchanged
        };
        let write = VerdictWrite {
            verdict,
            reason: Some(reason.to_string()),
            by: Actor::Person(who.to_string()),
            at: self.clock.now(),
            judged_against: candidate.judged_against,
            head,
        };
        match self.store.set_verdict(campaign.id, id, &write)? {
            VerdictWriteOutcome::Applied(c) | VerdictWriteOutcome::HandSet(c) => Ok(c),
            VerdictWriteOutcome::HeadMoved(_) => Err(EngineError::Refused(
                "the head moved while the verdict was written; try again".into(),
            )),
        }
    }

    /// Records a report by hand (`tally measurement add`) under the current evaluator, signed by
    /// `who`; a candidate whose verdict the loop set is judged again against the head.
    pub fn add_measurement(
        &self,
        id: CandidateId,
        report: &ManualReport,
        who: &str,
    ) -> Result<tally_model::Measurement> {
        let campaign = self.campaign()?;
        let candidate = self.candidate(id)?;
        let config = self.store.record_config_text(self.config_text)?;
        let now = self.clock.now();
        let duration_ns = match report.seconds {
            None => None,
            Some(s) => Some(tally_model::nanos_from_seconds(s).ok_or_else(|| {
                EngineError::Refused(format!(
                    "seconds = {}: expected a non-negative number of seconds less than \
                     9223372036.85 (2^63 nanoseconds, about 292 years)",
                    compact(s)
                ))
            })?),
        };
        let measurement = self.store.record_measurement(&NewMeasurement {
            campaign: campaign.id,
            candidate: id,
            evaluation: None,
            side: Side::Candidate,
            sample: 0,
            attempt: 1,
            retry_of: None,
            pair: None,
            evaluator: self.evaluator.clone(),
            rung: None,
            duration_ns,
            metrics: report.metrics.clone(),
            error: report.error.clone(),
            started: now,
            ended: now,
            stdout_log: None,
            stderr_log: None,
            evidence: report.evidence.clone(),
            config: Some(config),
            recorded_by: Actor::Person(who.to_string()),
            units: UnitValues::new(),
            held: None,
        })?;
        if !candidate.is_hand_set()
            && candidate.verdict != Verdict::Pending
            && campaign.head != Some(id)
            && let Some(bar) = campaign.head
        {
            self.judge(&campaign, id, bar, None)?;
        }
        Ok(measurement)
    }

    /// Queues a re-measurement (`tally candidate remeasure`): a paired evaluation against the
    /// head (`repeats` pairs, default the campaign's), judged again when it ends unless its
    /// verdict was set by hand.
    pub fn remeasure(&self, id: CandidateId, repeats: Option<u32>) -> Result<()> {
        let campaign = self.campaign()?;
        self.candidate(id)?;
        if campaign.head.is_none() {
            // Nothing to measure it against; a failed baseline is measured by init at HEAD.
            let why = self.unscored_bar(&campaign, None)?.unwrap_or_default();
            return Err(EngineError::Refused(why));
        }
        let repeats = repeats.unwrap_or_else(|| self.settings.repeats()).max(1);
        let bar = campaign.head.filter(|h| *h != id);
        self.store.queue_evaluation(&NewEvaluation {
            campaign: campaign.id,
            candidate: id,
            bar,
            kind: EvaluationKind::Remeasure,
            repeats,
            queued: self.clock.now(),
        })?;
        Ok(())
    }

    /// `tally campaign resume`: a held or stopped campaign becomes active again.
    pub fn resume(&self) -> Result<Campaign> {
        let campaign = self.campaign()?;
        Ok(self.store.set_campaign_state(
            campaign.id,
            CampaignState::Active,
            None,
            self.clock.now(),
        )?)
    }

    /// A consistent snapshot of the campaign.
    pub fn snapshot(&self) -> Result<CampaignSnapshot> {
        let campaign = self.campaign()?;
        Ok(self.store.snapshot(campaign.id)?)
    }

    /// The provider view of the campaign.
    pub fn data(&self) -> Result<CampaignData> {
        let snapshot = self.snapshot()?;
        let campaign = snapshot.campaign.id;
        let mut data = view::into_campaign_data(snapshot, self.settings, &self.evaluator);
        data.agent_runs = view::agent_runs(self.store, campaign)?;
        Ok(data)
    }

    /// Everything `status` (or a brief, with `Surface::Run`) shows.
    pub fn status(&self, surface: Surface) -> Result<StatusReport> {
        let data = self.data()?;
        let now_s = self.clock.now().0 as f64 / 1000.0;
        let (facts, fact_errors) = facts::all_facts(self.providers, &data, now_s);
        let fact_info: Vec<FactInfo> = self.providers.fact_info();
        let choice = match surface {
            Surface::Status => &self.settings.status,
            Surface::Run => &self.settings.brief,
        };
        let sections = self
            .providers
            .sections(choice, surface)
            .into_iter()
            .map(|chosen| {
                let result = match chosen.section {
                    Err(e) => Err(ProviderError::new(chosen.provider.clone(), e)),
                    Ok(section) => section.render(&SectionInput {
                        data: &data,
                        facts: &facts,
                        fact_info: &fact_info,
                        surface,
                    }),
                };
                SectionOutput {
                    provider: chosen.provider,
                    order: chosen.order,
                    result,
                }
            })
            .collect();
        Ok(StatusReport {
            data,
            facts,
            fact_errors,
            sections,
        })
    }
}

/// A number as a person reads it in a refusal: `1e20` rather than 21 digits, `-0.5` as it is.
fn compact(value: f64) -> String {
    let magnitude = value.abs();
    if value.is_finite() && magnitude != 0.0 && !(1e-4..1e15).contains(&magnitude) {
        format!("{value:e}")
    } else {
        value.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::compact;

    #[test]
    fn refused_numbers_print_compactly() {
        assert_eq!(compact(1e20), "1e20");
        assert_eq!(compact(1e300), "1e300");
        assert_eq!(compact(-2.5e-7), "-2.5e-7");
        assert_eq!(compact(-1.5), "-1.5");
        assert_eq!(compact(0.0), "0");
        assert_eq!(compact(123456789.25), "123456789.25");
    }
}
