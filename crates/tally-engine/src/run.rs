//! The loop (`docs/campaign.md#crash-safety`, `docs/campaign.md#after-the-rule`, `docs/campaign.md#stop-rules`, `docs/campaign.md#commands`): recover what a killed run left, make sure the
//! head is measured under the current evaluator, then — asking the stop rule before every
//! evaluation — evaluate queued work in order, judge it, confirm keeps when asked to, and move
//! the head (`baseline.rs` has `init` and the hold on a bar without a score).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use tally_contract::{CancelToken, NewEvaluation};
use tally_model::{
    Campaign, CampaignState, CandidateId, Evaluation, EvaluationId, EvaluationKind,
    EvaluationState, UnixMillis, Verdict,
};
use tally_plugin::StopDecision;

use crate::checks::Gate;
use crate::engine::Engine;
use crate::error::{EngineError, Result};
use crate::evaluate::{EvaluationEnd, SamplesEnd};
use crate::facts;
use crate::judge::Written;
use crate::more::Ruled;
use crate::view::{self, counts};

/// Why `run` returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunEnd {
    /// Nothing queued (with `until_idle`), or — an engine [`draining_on`](crate::Engine::draining_on)
    /// a flag that was set — the other workers of this process ended the run.
    Idle,
    /// The stop rule (or an earlier stop) ended the campaign.
    Stopped(String),
    /// The stop rule holds the campaign.
    Held(String),
    /// Ctrl-C.
    Interrupted,
}

/// What `init` did.
#[derive(Clone, Debug, PartialEq)]
pub enum InitOutcome {
    /// Registered, baseline measured and kept.
    Registered {
        /// The baseline's primary mean.
        primary: Option<f64>,
    },
    /// Registered, but the baseline has no successful measurement.
    BaselineFailed(String),
    /// Already registered; what changed since.
    AlreadyRegistered {
        /// Human lines describing the differences (empty: nothing changed).
        changes: Vec<String>,
    },
    /// Ctrl-C during the baseline.
    Interrupted,
}

/// One unit of work for the loop.
enum Work {
    /// A queued evaluation (remeasure, or one left by the loop).
    Queued(Evaluation),
    /// A pending candidate to judge against the head.
    Pending(CandidateId),
}

/// How long `run` without `--until-idle` waits before looking for new candidates again.
const POLL: Duration = Duration::from_millis(500);

/// How often a waiting `tally run` asks the stop rule while nothing is queued (a time limit
/// can end the campaign while it waits); fact sources may be external programs, so not at
/// every poll.
const IDLE_STOP_CHECK: Duration = Duration::from_secs(30);

impl Engine<'_> {
    /// `tally run`: works through the queue until idle (`until_idle`), held, stopped or
    /// interrupted. Without `until_idle` it waits for new candidates.
    pub fn run(&self, until_idle: bool, cancel: &CancelToken) -> Result<RunEnd> {
        self.run_units(until_idle, cancel, false)
            .map(|end| end.expect("run_units answers with an end when not told to do one unit"))
    }

    /// One unit of `tally run --until-idle`: evaluates and judges the next queued piece of work
    /// (asking the stop rule first) and answers `None`, or answers why there was none to do —
    /// `Idle` when nothing is queued. `tally run` with implementers working beside the queue
    /// calls it between collecting agents (`docs/implementers.md#parallel`).
    pub fn judge_one(&self, cancel: &CancelToken) -> Result<Option<RunEnd>> {
        self.run_units(true, cancel, true)
    }

    /// The loop of [`Engine::run`]; with `one`, it returns `None` after one unit of work.
    fn run_units(
        &self,
        until_idle: bool,
        cancel: &CancelToken,
        one: bool,
    ) -> Result<Option<RunEnd>> {
        // Candidates whose verdict rule failed are not retried until the next `tally run`: one
        // call of `run` is that run, the `judge_one` calls share the engine's memory.
        let mut rule_failed = if one {
            std::mem::take(&mut *self.rule_failed.lock().unwrap_or_else(|e| e.into_inner()))
        } else {
            BTreeSet::new()
        };
        let end = self.units(until_idle, cancel, one, &mut rule_failed);
        if one {
            *self.rule_failed.lock().unwrap_or_else(|e| e.into_inner()) = rule_failed;
        }
        end
    }

    fn units(
        &self,
        until_idle: bool,
        cancel: &CancelToken,
        one: bool,
        rule_failed: &mut BTreeSet<CandidateId>,
    ) -> Result<Option<RunEnd>> {
        let mut campaign = self.campaign()?;
        self.recover(&campaign)?;
        if campaign.evaluator != self.evaluator || campaign.config_text != self.config_text {
            if campaign.evaluator != self.evaluator {
                self.observer.note(&format!(
                    "the evaluator changed ({} → {}); measurements of the old one no longer count",
                    campaign.evaluator, self.evaluator
                ));
            }
            if campaign.state == CampaignState::Stopped
                && stop_table(&campaign.config_text) != stop_table(self.config_text)
            {
                self.observer
                    .note("the [plugins.stop_rule] table changed: the campaign is active again");
                self.store.set_campaign_state(
                    campaign.id,
                    CampaignState::Active,
                    None,
                    self.clock.now(),
                )?;
            }
            campaign =
                self.store
                    .set_campaign_config(campaign.id, &self.evaluator, self.config_text)?;
        }
        if let Some(end) = already_stopped(&campaign) {
            return Ok(Some(end));
        }
        // A tampered store holds the campaign at once, even with nothing queued; after that,
        // before every evaluation and launch (`stop_decision_before`).
        if let Some(reason) = self.tampered()? {
            return self.record_decision(&campaign, StopDecision::Hold(reason));
        }
        // When the stop rule was last asked while nothing was queued.
        let mut idle_check: Option<UnixMillis> = None;
        loop {
            if cancel.is_cancelled() {
                return Ok(Some(RunEnd::Interrupted));
            }
            if self.drained() {
                return Ok(Some(RunEnd::Idle));
            }
            let campaign = self.campaign()?;
            if self.store.with_workers().is_some()
                && self
                    .store
                    .unfinished_evaluations(campaign.id)?
                    .iter()
                    .any(|e| e.state == EvaluationState::Running)
            {
                // A worker that died while others work: its evaluation is recovered now, not
                // at the next `tally run` (`docs/team.md#workers`). Only a running evaluation
                // can be an orphan, so an idle campaign costs no write.
                self.recover(&campaign)?;
            }
            let work = match self.next_work(&campaign, rule_failed)? {
                Some(work) => {
                    idle_check = None;
                    work
                }
                None if until_idle => return Ok(Some(RunEnd::Idle)),
                None => {
                    // Nothing to evaluate and waiting for candidates: a stop limit that the work
                    // just done (or the clock) reached ends the campaign now, or `tally run`
                    // would wait for ever for candidates it must not start (`docs/campaign.md#stop-rules`, `docs/campaign.md#commands`). Holds
                    // wait for the next evaluation.
                    let now = self.clock.now();
                    // Due once IDLE_STOP_CHECK has passed, or at once if the clock was set back.
                    let due = |at: UnixMillis| {
                        let waited = now.0 - at.0;
                        waited < 0 || waited as u128 >= IDLE_STOP_CHECK.as_millis()
                    };
                    if idle_check.is_none_or(due) {
                        idle_check = Some(now);
                        let decision = self.stop_decision(&campaign)?;
                        if matches!(decision, StopDecision::Stop(_)) {
                            return self.record_decision(&campaign, decision);
                        }
                    }
                    self.clock.sleep(POLL);
                    continue;
                }
            };
            // The stop rule, before every evaluation; then a judgement needs a bar with a score
            // (`docs/campaign.md#baseline`).
            let decision = match self.stop_decision(&campaign)? {
                StopDecision::Go if judges(&campaign, &work) => self
                    .unscored_bar(&campaign, work_bar(&campaign, &work))?
                    .map_or(StopDecision::Go, StopDecision::Hold),
                other => other,
            };
            if !matches!(decision, StopDecision::Go) {
                self.give_up_resumed(&campaign, &work)?;
            }
            if let Some(end) = self.record_decision(&campaign, decision)? {
                return Ok(Some(end));
            }
            let end = match work {
                Work::Queued(evaluation) => {
                    self.do_queued(&campaign, &evaluation, cancel, rule_failed)?
                }
                Work::Pending(candidate) => {
                    self.do_pending(&campaign, candidate, cancel, rule_failed)?
                }
            };
            if end == EvaluationEnd::Interrupted {
                return Ok(Some(RunEnd::Interrupted));
            }
            if one {
                return Ok(None);
            }
        }
    }

    /// Asks the stop rule with nothing queued, as `tally run` does while it waits for candidates:
    /// a stop limit that the work just done (or the clock) reached stops the campaign now;
    /// holds wait for the next evaluation or launch. For the implementer driver, whose agents
    /// may still work when the queue runs dry (`docs/implementers.md#stop-grace`).
    pub fn stop_reached(&self) -> Result<Option<RunEnd>> {
        let campaign = self.campaign()?;
        if let Some(end) = already_stopped(&campaign) {
            return Ok(Some(end));
        }
        match self.stop_decision(&campaign)? {
            decision @ StopDecision::Stop(_) => self.record_decision(&campaign, decision),
            StopDecision::Hold(_) | StopDecision::Go => Ok(None),
        }
    }

    /// Records the stop rule's answer in the campaign's state: a hold or a stop is stored with
    /// its reason and returned; a go makes a held campaign active again and returns `None`.
    fn record_decision(
        &self,
        campaign: &Campaign,
        decision: StopDecision,
    ) -> Result<Option<RunEnd>> {
        let (state, reason, end) = match decision {
            StopDecision::Go => {
                if campaign.state != CampaignState::Active {
                    self.store.set_campaign_state(
                        campaign.id,
                        CampaignState::Active,
                        None,
                        self.clock.now(),
                    )?;
                }
                return Ok(None);
            }
            StopDecision::Hold(reason) => {
                (CampaignState::Held, reason.clone(), RunEnd::Held(reason))
            }
            StopDecision::Stop(reason) => (
                CampaignState::Stopped,
                reason.clone(),
                RunEnd::Stopped(reason),
            ),
        };
        self.store
            .set_campaign_state(campaign.id, state, Some(&reason), self.clock.now())?;
        Ok(Some(end))
    }

    /// Asks the stop rule before an implementer launch, with the facts a launch grows projected
    /// (`docs/implementers.md#gating`): `None` to go (a held campaign becomes active again), or
    /// the hold or stop it records.
    pub fn before_launch(&self) -> Result<Option<RunEnd>> {
        let campaign = self.campaign()?;
        if let Some(end) = already_stopped(&campaign) {
            return Ok(Some(end));
        }
        let decision = self.stop_decision_before(&campaign, false, facts::Upcoming::Launch)?;
        self.record_decision(&campaign, decision)
    }

    /// The stop rule's answer now (a rule that fails holds).
    fn stop_decision(&self, campaign: &Campaign) -> Result<StopDecision> {
        self.stop_decision_at(campaign, false)
    }

    /// The stop rule's answer now, telling it whether an evaluation is in flight.
    pub(crate) fn stop_decision_at(
        &self,
        campaign: &Campaign,
        in_flight: bool,
    ) -> Result<StopDecision> {
        self.stop_decision_before(campaign, in_flight, facts::Upcoming::Evaluation)
    }

    /// The stop rule's answer before `upcoming` (an evaluation or an implementer launch): the
    /// facts that action grows carry their projection. A store written by something other than
    /// tally holds first, whatever the rule says.
    pub(crate) fn stop_decision_before(
        &self,
        campaign: &Campaign,
        in_flight: bool,
        upcoming: facts::Upcoming,
    ) -> Result<StopDecision> {
        if let Some(reason) = self.tampered()? {
            return Ok(StopDecision::Hold(reason));
        }
        let mut data = view::into_campaign_data(
            self.store.snapshot(campaign.id)?,
            self.settings,
            &self.evaluator,
        );
        data.agent_runs = view::agent_runs(self.store, campaign.id)?;
        let now_s = self.clock.now().0 as f64 / 1000.0;
        Ok(
            facts::check_stop(self.providers, &data, now_s, in_flight, upcoming)
                .unwrap_or_else(|e| StopDecision::Hold(format!("the stop rule failed: {e}"))),
        )
    }

    /// The hold reason when the store shows writes that did not come from tally
    /// (`docs/store.md#guard`): one cheap look at the store's guard.
    fn tampered(&self) -> Result<Option<String>> {
        Ok(self
            .store
            .tampering()?
            .map(|why| format!("store tampered: {why}")))
    }

    /// Evaluations a killed `tally run` left `running` are abandoned; their candidates stay
    /// pending and are evaluated again. Queued ones stay queued. With workers, only those whose
    /// worker is gone (`docs/team.md#workers`). With a runner that adopts its attempts (Slurm,
    /// `docs/team.md#adopting`) and one worker, they are resumed instead: they stay `running`,
    /// [`Engine::next_work`] hands them out first, and their samples recorded so far are kept.
    fn recover(&self, campaign: &Campaign) -> Result<()> {
        const NOTE: &str = "tally run ended while it was running; evaluated again";
        let resume = self.resumes(campaign);
        let orphans = match self.store.with_workers() {
            Some(workers) => workers.abandon_orphans(campaign.id, NOTE, self.clock.now())?,
            None => {
                let mut orphans = Vec::new();
                for evaluation in self.store.unfinished_evaluations(campaign.id)? {
                    if evaluation.state == EvaluationState::Running && resume {
                        self.observer.note(&format!(
                            "{}: resuming the evaluation an earlier tally run left (its recorded \
                             samples are kept, its jobs adopted)",
                            evaluation.candidate
                        ));
                    } else if evaluation.state == EvaluationState::Running {
                        self.store.end_evaluation(
                            evaluation.id,
                            EvaluationState::Abandoned,
                            Some(NOTE),
                            self.clock.now(),
                        )?;
                        orphans.push(evaluation);
                    }
                }
                orphans
            }
        };
        for evaluation in orphans {
            self.observer.note(&format!(
                "{}: an earlier tally run ended during its evaluation; evaluating it again",
                evaluation.candidate
            ));
            self.queue_again(campaign, &evaluation)?;
        }
        Ok(())
    }

    /// Whether evaluations a killed run left are resumed rather than abandoned: the runner adopts
    /// its attempts, and this process is the campaign's only worker (workers abandon a gone
    /// worker's evaluation, `docs/team.md#workers`).
    fn resumes_evaluations(&self) -> bool {
        self.runner.adopts_attempts() && self.store.with_workers().is_none()
    }

    /// Whether [`Engine::run`] resumes the evaluations a killed run left in `campaign`: the
    /// runner adopts its attempts, one worker, the campaign is not stopped, and the evaluator
    /// is the one they were measured under (samples of another evaluator would not count).
    fn resumes(&self, campaign: &Campaign) -> bool {
        self.resumes_evaluations()
            && campaign.state != CampaignState::Stopped
            && campaign.evaluator == self.evaluator
    }

    /// The log directories of the evaluations a killed `tally run` left running that
    /// [`Engine::run`] resumes (`docs/team.md#adopting`): the attempts recorded there are to be
    /// adopted, not cleaned up. Empty when it resumes nothing (it abandons them).
    pub fn resumed_log_dirs(&self) -> Result<Vec<PathBuf>> {
        let campaign = self.campaign()?;
        if !self.resumes(&campaign) {
            return Ok(Vec::new());
        }
        Ok(self
            .store
            .unfinished_evaluations(campaign.id)?
            .into_iter()
            .filter(|e| e.state == EvaluationState::Running)
            .map(|e| self.log_root.join(format!("evaluation-{}", e.id.0)))
            .collect())
    }

    /// A resumed evaluation that the stop rule holds back is abandoned as a killed run's
    /// would have been (its candidate stays pending; the next `tally run` cancels its jobs).
    fn give_up_resumed(&self, campaign: &Campaign, work: &Work) -> Result<()> {
        if let Work::Queued(evaluation) = work
            && evaluation.state == EvaluationState::Running
            && self.resumes_evaluations()
        {
            self.store.end_evaluation(
                evaluation.id,
                EvaluationState::Abandoned,
                Some("tally run ended while it was running; the stop rule held it back"),
                self.clock.now(),
            )?;
            self.queue_again(campaign, evaluation)?;
        }
        Ok(())
    }

    /// An evaluation that did not run to its end (killed, or Ctrl-C) is queued again as it
    /// was — baseline, confirm and remeasure jobs; a judge job needs nothing, its candidate is
    /// still pending and is evaluated again.
    pub(crate) fn queue_again(&self, campaign: &Campaign, evaluation: &Evaluation) -> Result<()> {
        if evaluation.kind != EvaluationKind::Judge {
            self.store.queue_evaluation(&NewEvaluation {
                campaign: campaign.id,
                candidate: evaluation.candidate,
                bar: evaluation.bar,
                kind: evaluation.kind,
                repeats: evaluation.repeats,
                queued: self.clock.now(),
            })?;
        }
        Ok(())
    }

    fn next_work(
        &self,
        campaign: &Campaign,
        rule_failed: &BTreeSet<CandidateId>,
    ) -> Result<Option<Work>> {
        // A changed evaluator re-measures the head before anything is judged — once: a head
        // that failed in an evaluation that ran to its end under this evaluator is not measured
        // again and again (its bar samples, or verdict step 3, say what happened).
        if let Some(head) = campaign.head {
            let abandoned: BTreeSet<EvaluationId> = self
                .store
                .list_evaluations(campaign.id)?
                .into_iter()
                .filter(|e| e.state == EvaluationState::Abandoned)
                .map(|e| e.id)
                .collect();
            let measured = self
                .store
                .measurements_of_candidate(campaign.id, head)?
                .iter()
                .any(|m| {
                    let tried = m.evaluator == self.evaluator
                        && m.is_full_benchmark()
                        && m.evaluation.is_some_and(|e| !abandoned.contains(&e));
                    tried
                        || (counts(m, &self.evaluator)
                            && m.metrics.contains_key(&self.settings.primary().name))
                });
            let queued = self
                .store
                .unfinished_evaluations(campaign.id)?
                .iter()
                .any(|e| e.candidate == head && e.bar.is_none());
            if !measured && !queued {
                let new = NewEvaluation {
                    campaign: campaign.id,
                    candidate: head,
                    bar: None,
                    kind: EvaluationKind::Remeasure,
                    repeats: self.settings.repeats(),
                    queued: self.clock.now(),
                };
                // A worker claims the remeasure in the write that queues it; when another
                // worker was first, there is other work to look for.
                let claimed = match self.store.with_workers() {
                    Some(workers) => workers.claim_candidate(&new)?,
                    None => Some(self.store.queue_evaluation(&new)?),
                };
                if let Some(e) = claimed {
                    self.observer.note(&format!(
                        "measuring the head ({head}) under the current evaluator first"
                    ));
                    return Ok(Some(Work::Queued(e)));
                }
            }
        }
        // A resumed evaluation (left running by a killed run) first, then the queue.
        let resume = self.resumes_evaluations();
        let unfinished = self.store.unfinished_evaluations(campaign.id)?;
        let resumed = unfinished
            .iter()
            .find(|e| resume && e.state == EvaluationState::Running);
        if let Some(e) = resumed
            .or_else(|| {
                unfinished
                    .iter()
                    .find(|e| e.state == EvaluationState::Queued)
            })
            .cloned()
        {
            return Ok(Some(Work::Queued(e)));
        }
        // Workers skip candidates another worker is evaluating.
        let busy: BTreeSet<CandidateId> = match self.store.with_workers() {
            Some(_) => self
                .store
                .unfinished_evaluations(campaign.id)?
                .iter()
                .map(|e| e.candidate)
                .collect(),
            None => BTreeSet::new(),
        };
        let pending = self
            .store
            .list_candidates(campaign.id)?
            .into_iter()
            .find(|c| {
                c.verdict == Verdict::Pending
                    && !c.is_hand_set()
                    && !rule_failed.contains(&c.id)
                    && !busy.contains(&c.id)
            });
        Ok(pending.map(|c| Work::Pending(c.id)))
    }

    fn do_pending(
        &self,
        campaign: &Campaign,
        candidate: CandidateId,
        cancel: &CancelToken,
        rule_failed: &mut BTreeSet<CandidateId>,
    ) -> Result<EvaluationEnd> {
        let bar = campaign.head;
        let repeats = self.settings.repeats();
        let new = NewEvaluation {
            campaign: campaign.id,
            candidate,
            bar: if repeats > 1 { bar } else { None },
            kind: EvaluationKind::Judge,
            repeats,
            queued: self.clock.now(),
        };
        let evaluation = match self.store.with_workers() {
            Some(workers) => match workers.claim_candidate(&new)? {
                Some(claimed) => claimed,
                // Another worker claimed it first.
                None => return Ok(EvaluationEnd::Finished),
            },
            None => self.store.queue_evaluation(&new)?,
        };
        self.do_queued(campaign, &evaluation, cancel, rule_failed)
    }

    fn do_queued(
        &self,
        campaign: &Campaign,
        evaluation: &Evaluation,
        cancel: &CancelToken,
        rule_failed: &mut BTreeSet<CandidateId>,
    ) -> Result<EvaluationEnd> {
        let workers = self.store.with_workers();
        let mut running = match workers {
            // A worker's evaluation is claimed: already running, or started now unless another
            // worker started it first.
            Some(_) if evaluation.state == EvaluationState::Running => {
                self.begin_claimed(campaign, evaluation.clone())?
            }
            Some(w) => match w.claim_evaluation(evaluation.id, self.clock.now())? {
                Some(claimed) => self.begin_claimed(campaign, claimed)?,
                None => return Ok(EvaluationEnd::Finished),
            },
            // Left running by a killed run and resumed (`recover`): its recorded samples stay.
            None if evaluation.state == EvaluationState::Running => {
                let mut running = self.begin_claimed(campaign, evaluation.clone())?;
                running.resumed = true;
                running
            }
            None => self.begin_evaluation(campaign, evaluation)?,
        };
        // A worker ends its evaluation only once the verdict is written, so that no other
        // worker takes the candidate, still pending, in between (`docs/team.md#workers`).
        let finish_late = workers.is_some();
        // The correctness gate, before any timed sample (`docs/campaign.md#checks`).
        match self.gate_checks(campaign, evaluation, cancel)? {
            Gate::Clear => {}
            Gate::Interrupted => {
                self.store.end_evaluation(
                    evaluation.id,
                    EvaluationState::Abandoned,
                    Some("interrupted during its checks"),
                    self.clock.now(),
                )?;
                self.queue_again(campaign, evaluation)?;
                return Ok(EvaluationEnd::Interrupted);
            }
            Gate::Failed(reason) => {
                if !finish_late {
                    self.finish_evaluation(&running)?;
                }
                let candidate = evaluation.candidate;
                let bar = evaluation.bar.or(campaign.head);
                self.write_verdict(campaign, candidate, Verdict::Discard, &reason, bar)?;
                if finish_late {
                    self.finish_evaluation(&running)?;
                }
                self.observer
                    .note(&format!("{candidate}: discard — {reason} (not measured)"));
                return Ok(EvaluationEnd::Finished);
            }
        }
        let repeats = running.evaluation().repeats;
        if self.run_samples(campaign, &mut running, repeats, cancel, &mut || Ok(None))?
            == SamplesEnd::Interrupted
        {
            // Ctrl-C re-queues the work (`docs/campaign.md#crash-safety`), as a killed run's is by `recover`.
            self.queue_again(campaign, evaluation)?;
            return Ok(EvaluationEnd::Interrupted);
        }
        let campaign = self.campaign()?;
        let candidate = evaluation.candidate;
        let current = self
            .store
            .candidate(campaign.id, candidate)?
            .ok_or_else(|| EngineError::Refused(format!("{candidate} disappeared")))?;
        let judged = match evaluation.kind {
            EvaluationKind::Baseline => false,
            // The head measured again (new evaluator): nothing to judge.
            EvaluationKind::Remeasure if campaign.head == Some(candidate) => false,
            _ => !current.is_hand_set(),
        };
        if !judged {
            self.finish_evaluation(&running)?;
            if evaluation.kind == EvaluationKind::Baseline {
                self.judge_baseline(&campaign, candidate)?;
            }
            return Ok(EvaluationEnd::Finished);
        }
        let bar = evaluation.bar.or(campaign.head);
        let paired = evaluation.bar.map(|_| evaluation.id);
        let only = (evaluation.kind == EvaluationKind::Confirm).then_some(evaluation.id);
        // The rule may ask for more pairs, measured in this same evaluation (`docs/verdicts.md#more-pairs`).
        let ruled = self.judge_measuring(
            &campaign,
            &mut running,
            candidate,
            bar,
            (only, paired),
            cancel,
        )?;
        let judgement = match ruled {
            Ruled::Judged(j) => {
                if !finish_late {
                    self.finish_evaluation(&running)?;
                }
                j
            }
            Ruled::Failed(why) => {
                if !finish_late {
                    self.finish_evaluation(&running)?;
                }
                self.write_verdict(&campaign, candidate, Verdict::Pending, &why, bar)?;
                if finish_late {
                    self.finish_evaluation(&running)?;
                }
                self.observer
                    .note(&format!("{candidate} stays pending: {why}"));
                rule_failed.insert(candidate);
                return Ok(EvaluationEnd::Finished);
            }
            Ruled::Interrupted => {
                self.queue_again(&campaign, evaluation)?;
                return Ok(EvaluationEnd::Interrupted);
            }
        };
        let (verdict, reason) = match evaluation.kind {
            EvaluationKind::Confirm if judgement.outcome == Verdict::Keep => {
                (Verdict::Keep, format!("{} (confirmed)", judgement.reason))
            }
            EvaluationKind::Confirm => (
                Verdict::Interesting,
                format!("did not confirm: {}", judgement.reason),
            ),
            _ if judgement.outcome == Verdict::Keep && self.providers.confirm => {
                // Re-measure the keep once more before it becomes the head (`docs/campaign.md#after-the-rule`).
                self.observer.note(&format!(
                    "{candidate} would be kept; confirming with a new evaluation"
                ));
                self.store.queue_evaluation(&NewEvaluation {
                    campaign: campaign.id,
                    candidate,
                    bar,
                    kind: EvaluationKind::Confirm,
                    repeats: self.settings.repeats(),
                    queued: self.clock.now(),
                })?;
                if finish_late {
                    self.finish_evaluation(&running)?;
                }
                return Ok(EvaluationEnd::Finished);
            }
            _ if judgement.outcome == Verdict::Crash => {
                // Say why: the first failure of this evaluation's candidate samples.
                let why = self
                    .store
                    .measurements_of_evaluation(evaluation.id)?
                    .into_iter()
                    .find(|m| m.candidate == candidate && m.error.is_some())
                    .and_then(|m| m.error);
                match why {
                    Some(why) => (Verdict::Crash, format!("{}: {why}", judgement.reason)),
                    None => (Verdict::Crash, judgement.reason),
                }
            }
            _ => (judgement.outcome, judgement.reason),
        };
        match self.write_verdict(&campaign, candidate, verdict, &reason, bar)? {
            Written::Applied | Written::HandSet => {}
            Written::HeadMoved(head) => {
                // Someone kept first: judge again against the new head (`docs/campaign.md#after-the-rule`).
                self.observer.note(&format!(
                    "{candidate}: the head moved to {} while it was measured; judging it again against the new head",
                    head.map_or("nothing".into(), |h| h.to_string())
                ));
                self.store.queue_evaluation(&NewEvaluation {
                    campaign: campaign.id,
                    candidate,
                    bar: head.filter(|_| self.settings.repeats() > 1),
                    kind: EvaluationKind::Judge,
                    repeats: self.settings.repeats(),
                    queued: self.clock.now(),
                })?;
            }
        }
        if finish_late {
            self.finish_evaluation(&running)?;
        }
        Ok(EvaluationEnd::Finished)
    }
}

/// The bar the work is judged against: the evaluation's own, else the head.
fn work_bar(campaign: &Campaign, work: &Work) -> Option<CandidateId> {
    match work {
        Work::Queued(e) => e.bar.or(campaign.head),
        Work::Pending(_) => campaign.head,
    }
}

/// Whether the work ends in a judgement against a bar: everything but measuring the baseline
/// and measuring the head again.
fn judges(campaign: &Campaign, work: &Work) -> bool {
    match work {
        Work::Queued(e) => match e.kind {
            EvaluationKind::Baseline => false,
            EvaluationKind::Remeasure => campaign.head != Some(e.candidate),
            _ => true,
        },
        Work::Pending(_) => true,
    }
}

/// The `[plugins.stop_rule]` table of a config text, as canonical JSON (`None` when the text does
/// not parse).
fn stop_table(config_text: &str) -> Option<String> {
    let table: toml::Table = config_text.parse().ok()?;
    let plugins = table.get("plugins").and_then(|p| p.as_table());
    let stop = plugins.and_then(|p| p.get("stop_rule")).cloned();
    Some(match stop {
        Some(v) => tally_config::toml_to_json(v).to_string(),
        None => "null".into(),
    })
}

/// A stopped campaign's end, with its stored reason.
fn already_stopped(campaign: &Campaign) -> Option<RunEnd> {
    (campaign.state == CampaignState::Stopped)
        .then(|| RunEnd::Stopped(campaign.reason.clone().unwrap_or_else(|| "stopped".into())))
}
