//! The built-in verdict rules: `bootstrap` (`docs/campaign.md#bootstrap`, the default) and `min_speedup`
//! (`docs/campaign.md#min-speedup`, `bootstrap` plus a minimum relative gain).
//!
//! A rule answers every case; it never fails (invalid parameters are refused when the rule is
//! built). This module decides outcomes and writes reasons; the statistics are in `compare` and
//! the crate's bootstrap, and no store, clock or global state is read.

use std::num::NonZeroU32;

use serde::{Deserialize, Serialize};
use tally_model::Verdict;

use crate::verdict::compare::format_sig4;
use crate::{
    Bootstrap, Comparison, Confidence, Evidence, Judgement, StatsError, VerdictCase,
    compare_metric, pairs_to_show,
};

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
}

impl Default for BootstrapRule {
    fn default() -> Self {
        let bootstrap = Bootstrap::default();
        Self {
            confidence: bootstrap.confidence,
            resamples: bootstrap.resamples,
            seed: bootstrap.seed,
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
}

impl BootstrapRule {
    /// Validates the parameters: `confidence` in (0.5, 1), `resamples ≥ 1`.
    pub fn new(confidence: f64, resamples: u32, seed: u64) -> Result<Self, StatsError> {
        Ok(Self {
            confidence: Confidence::new(confidence)?,
            resamples: NonZeroU32::new(resamples).ok_or(StatsError::Resamples)?,
            seed,
        })
    }

    /// The bootstrap these parameters describe.
    pub fn bootstrap(&self) -> Bootstrap {
        Bootstrap {
            confidence: self.confidence,
            resamples: self.resamples,
            seed: self.seed,
        }
    }

    /// Judges `case` (`docs/campaign.md#bootstrap`, decision order 1–7).
    pub fn decide(&self, case: &VerdictCase) -> Judgement {
        self.assess(case).judgement
    }

    /// [`BootstrapRule::decide`], also returning the primary's comparison.
    pub fn assess(&self, case: &VerdictCase) -> Assessment {
        let decided = |outcome, reason: String| Assessment {
            judgement: Judgement::new(outcome, reason),
            primary: None,
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
        let bootstrap = self.bootstrap();
        let Some(comparison) = compare_metric(&bootstrap, primary, candidate, bar) else {
            let reason = format!(
                "candidate#{} has no score under the current evaluator",
                bar.id
            );
            return decided(Verdict::Keep, reason);
        };
        // 4. Compare the primary.
        let mut reason = format!(
            "against candidate#{}: {}",
            bar.id,
            comparison.text(self.confidence)
        );
        let outcome = self.outcome(case, &comparison, &mut reason);
        Assessment {
            judgement: Judgement::new(outcome, reason),
            primary: Some(comparison),
        }
    }

    /// Steps 4–7 once the primary is compared; appends to `reason`.
    fn outcome(&self, case: &VerdictCase, comparison: &Comparison, reason: &mut String) -> Verdict {
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
                reason.push_str(&settling_advice(case, comparison, self.confidence));
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
            let compared = compare_metric(&bootstrap, &criterion, &case.candidate, &case.bar);
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

/// The `min_speedup` verdict rule (`docs/campaign.md#min-speedup`): `bootstrap`, then a keep whose relative gain is
/// below `min_speedup` becomes `interesting`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "MinSpeedupParams", into = "MinSpeedupParams")]
pub struct MinSpeedupRule {
    /// The bootstrap rule it wraps.
    pub bootstrap: BootstrapRule,
    /// The minimum relative gain, as a fraction (0.05 = 5%).
    pub min_speedup: f64,
}

impl MinSpeedupRule {
    /// Validates `min_speedup` (finite, ≥ 0).
    pub fn new(bootstrap: BootstrapRule, min_speedup: f64) -> Result<Self, StatsError> {
        if !(min_speedup.is_finite() && min_speedup >= 0.0) {
            return Err(StatsError::MinSpeedup(min_speedup));
        }
        Ok(Self {
            bootstrap,
            min_speedup,
        })
    }

    /// Judges `case`.
    pub fn decide(&self, case: &VerdictCase) -> Judgement {
        self.assess(case).judgement
    }

    /// [`MinSpeedupRule::decide`], also returning the primary's comparison.
    pub fn assess(&self, case: &VerdictCase) -> Assessment {
        let mut assessment = self.bootstrap.assess(case);
        if assessment.judgement.outcome != Verdict::Keep {
            return assessment;
        }
        // Only a keep that compared the primary has a bar mean (step 3 keeps have none). The
        // comparison shows paired means over the pairs path and the sides' means otherwise.
        let Some(comparison) = &assessment.primary else {
            return assessment;
        };
        if comparison.bar == 0.0 {
            return assessment;
        }
        let speedup = comparison.gain / comparison.bar.abs();
        if speedup < self.min_speedup {
            let judgement = &mut assessment.judgement;
            judgement.outcome = Verdict::Interesting;
            judgement.reason.push_str(&format!(
                "; {:.1}% is below min_speedup {:.0}%",
                speedup * 100.0,
                self.min_speedup * 100.0
            ));
        }
        assessment
    }
}

/// `min_speedup`'s parameters as written in `[plugins.verdict_rule]`: bootstrap's, flat.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct MinSpeedupParams {
    #[serde(default)]
    confidence: Confidence,
    #[serde(default = "default_resamples")]
    resamples: NonZeroU32,
    #[serde(default)]
    seed: u64,
    min_speedup: f64,
}

fn default_resamples() -> NonZeroU32 {
    BootstrapRule::default().resamples
}

impl TryFrom<MinSpeedupParams> for MinSpeedupRule {
    type Error = StatsError;
    fn try_from(p: MinSpeedupParams) -> Result<Self, StatsError> {
        let bootstrap = BootstrapRule {
            confidence: p.confidence,
            resamples: p.resamples,
            seed: p.seed,
        };
        Self::new(bootstrap, p.min_speedup)
    }
}

impl From<MinSpeedupRule> for MinSpeedupParams {
    fn from(rule: MinSpeedupRule) -> Self {
        Self {
            confidence: rule.bootstrap.confidence,
            resamples: rule.bootstrap.resamples,
            seed: rule.bootstrap.seed,
            min_speedup: rule.min_speedup,
        }
    }
}
