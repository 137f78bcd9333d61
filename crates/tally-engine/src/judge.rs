//! Judging (`docs/campaign.md#verdict`): build the verdict case of a candidate against its bar from the
//! store, ask the verdict rule, apply the host's own rules around it (a failed bar sample, no
//! complete pair), and write the verdict with its head move in one store transaction.
//!
//! What counts: successful full-benchmark measurements under the current evaluator (see
//! [`view::counts`]); pairs are the candidate samples whose `pair` is a counting sample of the
//! bar. A confirmation is judged on its own evaluation only, so it is independent.

use std::collections::BTreeMap;

use tally_contract::{HeadUpdate, VerdictWrite, VerdictWriteOutcome};
use tally_model::{
    Actor, Campaign, CandidateId, EvaluationId, Measurement, MeasurementId, Side as MSide,
    UnitValues, Verdict,
};
use tally_plugin::{
    Criterion, Guardrail, Judgement, MoreSamples, Ruling, Sampling, Side, VerdictCase,
};

use crate::engine::Engine;
use crate::error::Result;
use crate::view::{self, counts};

/// What writing a verdict did.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Written {
    /// Written.
    Applied,
    /// A person set this verdict; left alone.
    HandSet,
    /// A keep could not become the head: someone else kept first. The head now.
    HeadMoved(Option<CandidateId>),
}

/// The verdict rule's answer: a judgement (with the host's pairing rules applied), a request
/// for more pairs, or why the rule failed (the candidate then stays pending).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Asked {
    /// The judgement.
    Judged(Judgement),
    /// Measure these pairs, then ask again.
    More(MoreSamples),
    /// The rule failed, or asked for more when none can be measured.
    Failed(String),
}

impl Engine<'_> {
    /// The case of `candidate` against `bar` (no bar: nothing to compare with), restricted to
    /// one evaluation's measurements when `only` is set.
    pub(crate) fn case(
        &self,
        campaign: &Campaign,
        candidate: CandidateId,
        bar: Option<CandidateId>,
        only: Option<EvaluationId>,
    ) -> Result<VerdictCase> {
        let in_scope = |m: &Measurement| only.is_none_or(|e| m.evaluation == Some(e));
        let cand_ms: Vec<Measurement> = self
            .store
            .measurements_of_candidate(campaign.id, candidate)?
            .into_iter()
            .filter(|m| counts(m, &self.evaluator) && in_scope(m))
            .collect();
        let cand_units = self.store.units_of_candidate(campaign.id, candidate)?;
        let (bar_ms, bar_units) = match bar {
            Some(bar) => (
                self.store
                    .measurements_of_candidate(campaign.id, bar)?
                    .into_iter()
                    .filter(|m| counts(m, &self.evaluator) && in_scope(m))
                    .collect::<Vec<_>>(),
                self.store.units_of_candidate(campaign.id, bar)?,
            ),
            None => (Vec::new(), BTreeMap::new()),
        };

        let judging: Vec<&str> = self
            .settings
            .judging_metrics()
            .map(|m| m.name.as_str())
            .collect();
        let bar_by_id: BTreeMap<MeasurementId, &Measurement> =
            bar_ms.iter().map(|m| (m.id, m)).collect();
        let mut cand_samples: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        let mut bar_samples: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        if bar.is_some_and(|b| b != candidate) {
            for m in cand_ms.iter().filter(|m| m.side == MSide::Candidate) {
                let Some(partner) = m.pair.and_then(|p| bar_by_id.get(&p)) else {
                    continue;
                };
                for name in &judging {
                    if let (Some(c), Some(b)) = (m.metrics.get(*name), partner.metrics.get(*name)) {
                        cand_samples.entry((*name).into()).or_default().push(*c);
                        bar_samples.entry((*name).into()).or_default().push(*b);
                    }
                }
            }
        }

        let primary = self.settings.primary();
        Ok(VerdictCase {
            primary: Criterion {
                name: primary.name.clone(),
                direction: primary.direction,
                deterministic: primary.deterministic,
            },
            guardrails: self
                .settings
                .metrics
                .iter()
                .filter(|m| m.role == tally_model::Role::Guardrail)
                .map(|m| Guardrail {
                    name: m.name.clone(),
                    direction: m.direction,
                    margin: m.margin.unwrap_or(0.0),
                    floor: m.floor,
                    deterministic: m.deterministic,
                })
                .collect(),
            candidate: Side {
                id: u64::from(candidate.0),
                means: view::means(&cand_ms, &self.evaluator),
                units: unit_means(&cand_ms, &cand_units),
                samples: cand_samples,
            },
            bar: Side {
                id: bar.map_or(0, |b| u64::from(b.0)),
                means: view::means(&bar_ms, &self.evaluator),
                units: unit_means(&bar_ms, &bar_units),
                samples: bar_samples,
            },
        })
    }

    /// Asks the verdict rule (`sampling` says whether it may ask for more pairs), then applies the
    /// host's pairing rules (`docs/campaign.md#pairs`): a bar sample that failed is named in the
    /// reason, and with no complete pair a successful candidate is `interesting`, never a keep.
    pub(crate) fn assess(
        &self,
        campaign: &Campaign,
        candidate: CandidateId,
        bar: Option<CandidateId>,
        (only, paired): (Option<EvaluationId>, Option<EvaluationId>),
        sampling: &Sampling,
    ) -> Result<Asked> {
        let case = self.case(campaign, candidate, bar, only)?;
        let judgement = match self.providers.verdict.rule(&case, sampling) {
            Ok(Ruling::Judged(j)) => j,
            Ok(Ruling::More(more)) if sampling.can_measure && more.pairs > 0 => {
                return Ok(Asked::More(more));
            }
            Ok(Ruling::More(more)) => {
                return Ok(Asked::Failed(format!(
                    "the verdict rule asked for more pairs when none can be measured: {}",
                    more.reason
                )));
            }
            Err(e) => return Ok(Asked::Failed(format!("the verdict rule failed: {e}"))),
        };
        // A keep needs a bar with a score: whatever the rule says, nothing is kept by comparing
        // with nothing (`docs/campaign.md#baseline`).
        let primary = &self.settings.primary().name;
        if judgement.outcome == Verdict::Keep && !case.bar.means.contains_key(primary) {
            let why = self.unscored_bar(campaign, bar.filter(|b| *b != candidate))?;
            return Ok(Asked::Judged(Judgement::new(
                Verdict::Interesting,
                why.unwrap_or_else(|| format!("no score of `{primary}` for the bar")),
            )));
        }
        let Some(evaluation) = paired else {
            return Ok(Asked::Judged(judgement));
        };
        let samples = self.store.measurements_of_evaluation(evaluation)?;
        let bar_failure = samples
            .iter()
            .filter(|m| m.side == MSide::Bar && m.error.is_some() && !is_retried(m, &samples))
            .min_by_key(|m| m.sample);
        let complete_pairs = samples
            .iter()
            .filter(|m| m.side == MSide::Candidate && m.is_success() && m.pair.is_some())
            .count();
        let Some(failed) = bar_failure else {
            return Ok(Asked::Judged(judgement));
        };
        let note = format!(
            "the bar failed on pair {}: {}",
            failed.sample + 1,
            failed.error.as_deref().unwrap_or("failed")
        );
        let candidate_ok = samples
            .iter()
            .any(|m| m.side == MSide::Candidate && m.is_success());
        if complete_pairs == 0 && candidate_ok && judgement.outcome != Verdict::Crash {
            return Ok(Asked::Judged(Judgement::new(
                Verdict::Interesting,
                format!("no complete pair to judge: {note}"),
            )));
        }
        Ok(Asked::Judged(Judgement::new(
            judgement.outcome,
            format!("{}; {note}", judgement.reason),
        )))
    }

    /// Writes a loop verdict; a keep becomes the head if the head is still `bar`.
    pub(crate) fn write_verdict(
        &self,
        campaign: &Campaign,
        candidate: CandidateId,
        verdict: Verdict,
        reason: &str,
        bar: Option<CandidateId>,
    ) -> Result<Written> {
        let head = if verdict == Verdict::Keep {
            HeadUpdate::MakeHead { expected: bar }
        } else {
            HeadUpdate::Unchanged
        };
        let write = VerdictWrite {
            verdict,
            reason: Some(reason.to_string()),
            by: Actor::Loop,
            at: self.clock.now(),
            judged_against: bar,
            head,
        };
        let written = match self.store.set_verdict(campaign.id, candidate, &write)? {
            VerdictWriteOutcome::Applied(_) => Written::Applied,
            VerdictWriteOutcome::HandSet(_) => Written::HandSet,
            VerdictWriteOutcome::HeadMoved(head) => Written::HeadMoved(head),
        };
        if written == Written::Applied {
            self.observer.judged(candidate, verdict, reason);
        }
        Ok(written)
    }

    /// Assess and write in one go (no confirmation), used when a report is added by hand.
    pub(crate) fn judge(
        &self,
        campaign: &Campaign,
        candidate: CandidateId,
        bar: CandidateId,
        paired: Option<EvaluationId>,
    ) -> Result<Written> {
        // Nothing more can be measured for a report added by hand: the rule judges what is there.
        let sampling = Sampling {
            repeats: self.settings.repeats(),
            can_measure: false,
        };
        match self.assess(campaign, candidate, Some(bar), (None, paired), &sampling)? {
            Asked::Judged(j) => {
                self.write_verdict(campaign, candidate, j.outcome, &j.reason, Some(bar))
            }
            // `assess` answers `More` only when more can be measured.
            Asked::Failed(why) | Asked::More(MoreSamples { reason: why, .. }) => {
                self.write_verdict(campaign, candidate, Verdict::Pending, &why, Some(bar))
            }
        }
    }
}

/// Whether a failed measurement was retried by a later attempt of the same sample.
fn is_retried(m: &Measurement, all: &[Measurement]) -> bool {
    all.iter().any(|other| other.retry_of == Some(m.id))
}

/// Mean contribution per unit, per metric, over the measurements that have units.
fn unit_means(
    measurements: &[Measurement],
    units: &BTreeMap<MeasurementId, UnitValues>,
) -> BTreeMap<String, BTreeMap<String, f64>> {
    let mut sums: BTreeMap<String, BTreeMap<String, (f64, u32)>> = BTreeMap::new();
    for m in measurements {
        let Some(values) = units.get(&m.id) else {
            continue;
        };
        for (metric, per_unit) in values {
            for (unit, value) in per_unit {
                let e = sums
                    .entry(metric.clone())
                    .or_default()
                    .entry(unit.clone())
                    .or_default();
                e.0 += value;
                e.1 += 1;
            }
        }
    }
    sums.into_iter()
        .map(|(metric, per_unit)| {
            (
                metric,
                per_unit
                    .into_iter()
                    .map(|(u, (s, n))| (u, s / f64::from(n)))
                    .collect(),
            )
        })
        .collect()
}
