//! The built-in verdict rule `bootstrap` (`docs/campaign.md#bootstrap`, the default); `min_speedup`
//! wraps it (`min_speedup`).
//!
//! A rule answers every case; it never fails (invalid parameters are refused when the rule is
//! built). Asked with a [`Sampling`], it may answer "measure more pairs" instead
//! ([`Step::More`]): the sequential design of `looks`. This module decides outcomes and writes
//! reasons; the statistics are in `compare`, `looks` and the crate's bootstrap, and no store,
//! clock or global state is read.

use std::num::NonZeroU32;

use serde::{Deserialize, Serialize};
use tally_model::Verdict;

use crate::verdict::compare::format_sig4;
use crate::verdict::looks::{self, Design, Walk};
use crate::{
    Bootstrap, Comparison, Confidence, Evidence, Judgement, MoreSamples, Ruling, Sampling,
    SetAside, StatsError, VerdictCase, compare_metric, compare_metric_over, pairs_to_show,
};

/// The default of `max_extra_pairs`: up to three more pairs (six samples) per candidate, beyond
/// its `repeats` (`docs/verdicts.md#more-pairs`).
pub const DEFAULT_MAX_EXTRA_PAIRS: u32 = 3;

/// The `bootstrap` verdict rule and its parameters.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BootstrapRule {
    /// One-sided confidence of the bounds, strictly between 0.5 and 1 (default 0.95).
    pub confidence: Confidence,
    /// Bootstrap resamples (default 10,000).
    pub resamples: NonZeroU32,
    /// Generator seed (default 0); stored with the verdict, it makes the verdict replayable.
    pub seed: u64,
    /// How many pairs beyond `repeats` the rule may ask for per case, to re-measure pairs with a
    /// far sample or to look a second time (default 3; 0: a fixed design, one look at
    /// `confidence`).
    pub max_extra_pairs: u32,
}

impl Default for BootstrapRule {
    fn default() -> Self {
        let bootstrap = Bootstrap::default();
        Self {
            confidence: bootstrap.confidence,
            resamples: bootstrap.resamples,
            seed: bootstrap.seed,
            max_extra_pairs: DEFAULT_MAX_EXTRA_PAIRS,
        }
    }
}

/// A judgement with the comparison of the primary it rests on (absent when the rule decided
/// before comparing: crash, floor, or a bar without a score).
#[derive(Clone, Debug, PartialEq)]
pub struct Assessment {
    /// The outcome and reason.
    pub judgement: Judgement,
    /// The primary's comparison, when one was made.
    pub primary: Option<Comparison>,
    /// The confidence of the primary's bound: the rule's, or a look's share of it.
    pub confidence: Confidence,
    /// The pairs left out of the primary's comparison (far samples), in the order found.
    pub set_aside: Vec<SetAside>,
}

/// What [`BootstrapRule::assess_sampled`] answers.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// The verdict, with the comparison it rests on.
    Judged(Assessment),
    /// Measure more pairs, then ask again.
    More(MoreSamples),
}

impl BootstrapRule {
    /// Validates the parameters: `confidence` in (0.5, 1), `resamples ≥ 1`; `max_extra_pairs`
    /// is the default.
    pub fn new(confidence: f64, resamples: u32, seed: u64) -> Result<Self, StatsError> {
        Ok(Self {
            confidence: Confidence::new(confidence)?,
            resamples: NonZeroU32::new(resamples).ok_or(StatsError::Resamples)?,
            seed,
            max_extra_pairs: DEFAULT_MAX_EXTRA_PAIRS,
        })
    }

    /// The same rule with another `max_extra_pairs`.
    pub fn with_max_extra_pairs(self, max_extra_pairs: u32) -> Self {
        Self {
            max_extra_pairs,
            ..self
        }
    }

    /// The bootstrap these parameters describe.
    pub fn bootstrap(&self) -> Bootstrap {
        Bootstrap {
            confidence: self.confidence,
            resamples: self.resamples,
            seed: self.seed,
        }
    }

    /// Judges `case` as a fixed design (`docs/campaign.md#bootstrap`, decision order 1–7): every
    /// pair in one look at `confidence`, nothing set aside, never a request for more.
    pub fn decide(&self, case: &VerdictCase) -> Judgement {
        self.assess(case).judgement
    }

    /// [`BootstrapRule::decide`], also returning the primary's comparison.
    pub fn assess(&self, case: &VerdictCase) -> Assessment {
        // Without a design the walk never runs, so the step is always judged.
        self.assess_in(case, None).judged()
    }

    /// Judges `case` measured with `sampling`: the sequential design of
    /// `docs/verdicts.md#more-pairs` (far samples set aside and re-measured, a second look when
    /// the first is inconclusive but promising), or a request for the pairs it needs first.
    pub fn rule(&self, case: &VerdictCase, sampling: &Sampling) -> Ruling {
        match self.assess_sampled(case, sampling) {
            Step::Judged(assessment) => Ruling::Judged(assessment.judgement),
            Step::More(more) => Ruling::More(more),
        }
    }

    /// [`BootstrapRule::rule`], also returning the primary's comparison and the pairs set aside.
    pub fn assess_sampled(&self, case: &VerdictCase, sampling: &Sampling) -> Step {
        let repeats = usize::try_from(sampling.repeats).unwrap_or(usize::MAX);
        self.assess_in(case, Some(self.design(repeats, sampling.can_measure)))
    }

    fn design(&self, repeats: usize, can_measure: bool) -> Design {
        Design {
            repeats,
            max_extra_pairs: usize::try_from(self.max_extra_pairs).unwrap_or(usize::MAX),
            can_measure,
        }
    }

    fn assess_in(&self, case: &VerdictCase, design: Option<Design>) -> Step {
        let decided = |outcome, reason: String| {
            Step::Judged(Assessment {
                judgement: Judgement::new(outcome, reason),
                primary: None,
                confidence: self.confidence,
                set_aside: Vec::new(),
            })
        };
        let primary = &case.primary;
        let (candidate, bar) = (&case.candidate, &case.bar);
        // 1. No successful primary on the candidate.
        if candidate.mean(&primary.name).is_none() {
            return decided(Verdict::Crash, "no successful measurement".to_owned());
        }
        // 2. A guardrail past its floor (the first, in configuration order).
        for guardrail in &case.guardrails {
            if let Some(value) = candidate.mean(&guardrail.name)
                && guardrail.past_floor(value)
            {
                let floor = guardrail.floor.unwrap_or(f64::NAN);
                let reason = format!(
                    "floor: {} {} past its floor {}",
                    guardrail.name,
                    format_sig4(value),
                    format_sig4(floor)
                );
                return decided(Verdict::Discard, reason);
            }
        }
        // 3. A bar without a score under this evaluator.
        let no_score = || {
            let reason = format!(
                "candidate#{} has no score under the current evaluator",
                bar.id
            );
            decided(Verdict::Keep, reason)
        };
        if bar.mean(&primary.name).is_none() {
            return no_score();
        }
        // 4. Compare the primary: over the pairs a sequential walk keeps, or every pair.
        let bootstrap = self.bootstrap();
        let (comparison, confidence, pairs, set_aside, notes) =
            match design.and_then(|d| looks::walk(&bootstrap, case, &d)) {
                Some(Walk::More(more)) => return Step::More(more),
                Some(Walk::Judge(w)) => (
                    w.comparison,
                    w.confidence,
                    Some(w.pairs),
                    w.set_aside,
                    w.notes,
                ),
                None => match compare_metric(&bootstrap, primary, candidate, bar) {
                    Some(c) => (c, self.confidence, None, Vec::new(), String::new()),
                    None => return no_score(),
                },
            };
        let mut reason = format!(
            "against candidate#{}: {}",
            bar.id,
            comparison.text(confidence)
        );
        let look = Look {
            confidence,
            pairs: pairs.as_deref(),
        };
        let outcome = self.outcome(case, &comparison, look, &mut reason);
        reason.push_str(&notes);
        Step::Judged(Assessment {
            judgement: Judgement::new(outcome, reason),
            primary: Some(comparison),
            confidence,
            set_aside,
        })
    }

    /// Steps 4–7 once the primary is compared; appends to `reason`.
    fn outcome(
        &self,
        case: &VerdictCase,
        comparison: &Comparison,
        look: Look<'_>,
        reason: &mut String,
    ) -> Verdict {
        if comparison.gain <= 0.0 {
            return Verdict::Discard;
        }
        let bound = comparison.bound();
        if bound.is_none_or(|b| b <= 0.0) {
            // The aggregate path of a noisy metric already says why in its text.
            if !matches!(
                comparison.evidence,
                crate::Evidence::Aggregate {
                    deterministic: false
                }
            ) {
                reason.push_str(": the gain is not significant");
                reason.push_str(&settling_advice(case, comparison, look.confidence));
            }
            return Verdict::Interesting;
        }
        let bootstrap = self.bootstrap();
        let mut past = Vec::new();
        for guardrail in &case.guardrails {
            let criterion = guardrail.criterion();
            let (in_candidate, in_bar) = (
                case.candidate.mean(&guardrail.name).is_some(),
                case.bar.mean(&guardrail.name).is_some(),
            );
            let compared = compare_metric_over(
                &bootstrap,
                &criterion,
                &case.candidate,
                &case.bar,
                look.pairs,
            );
            match compared {
                Some(g) => {
                    // No bound (one pair, or a noisy aggregate) cannot rule out a loss.
                    if g.bound().is_none_or(|b| b < -guardrail.margin) {
                        past.push(g.text(self.confidence));
                    }
                }
                None => {
                    let side = match (in_candidate, in_bar) {
                        (false, false) => "on both sides",
                        (false, true) => "on the candidate",
                        _ => "on the bar",
                    };
                    past.push(format!("{} unmeasured {side}", guardrail.name));
                }
            }
        }
        if past.is_empty() {
            Verdict::Keep
        } else {
            reason.push_str("; guardrails past their margin: ");
            reason.push_str(&past.join(", "));
            Verdict::Interesting
        }
    }
}

/// The look a comparison of the primary was made in: the confidence of its bound, and the pairs
/// it kept (`None`: every pair), over which the guardrails are compared too.
#[derive(Clone, Copy)]
struct Look<'a> {
    confidence: Confidence,
    pairs: Option<&'a [usize]>,
}

impl Step {
    /// The assessment of a judged step; a request for more is judged on nothing.
    fn judged(self) -> Assessment {
        match self {
            Step::Judged(assessment) => assessment,
            Step::More(more) => Assessment {
                judgement: Judgement::new(Verdict::Interesting, more.reason),
                primary: None,
                confidence: Confidence::default(),
                set_aside: Vec::new(),
            },
        }
    }
}

/// What would settle an inconclusive paired comparison, for the reason: the spread of the paired
/// gains and, if the gain and the spread held, how many pairs would show the gain (`repeats`,
/// or `tally candidate remeasure` for more pairs); empty for other paths.
fn settling_advice(case: &VerdictCase, comparison: &Comparison, confidence: Confidence) -> String {
    /// Past this many pairs the gain is within the noise for any practical benchmark.
    const LIMIT: usize = 1000;
    let Evidence::Pairs {
        pairs,
        spread: Some(sd),
        ..
    } = comparison.evidence
    else {
        return String::new();
    };
    let spread = format!("the paired gains vary by {} (sd)", format_sig4(sd));
    match pairs_to_show(comparison.gain, sd, confidence, LIMIT) {
        Some(n) if n > pairs => format!(
            "; {spread}: if gain and spread hold, about {n} pairs would show it (`repeats = {n}`, \
             or `tally candidate remeasure {}` for more pairs)",
            case.candidate.id
        ),
        Some(_) => format!("; {spread}"),
        None => {
            format!("; {spread}: more than {LIMIT} pairs would be needed to show a gain this small")
        }
    }
}
