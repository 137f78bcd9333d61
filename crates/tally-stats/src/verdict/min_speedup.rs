//! The `min_speedup` verdict rule (`docs/campaign.md#min-speedup`): `bootstrap`, then a keep
//! whose relative gain is below `min_speedup` becomes `interesting`, with the speedup appended to
//! the reason. Requests for more pairs pass through; the speedup is computed on the comparison
//! `bootstrap` kept (its pairs, after any set aside).

use std::num::NonZeroU32;

use serde::{Deserialize, Serialize};
use tally_model::Verdict;

use crate::verdict::rule::DEFAULT_MAX_EXTRA_PAIRS;
use crate::{
    Assessment, BootstrapRule, Confidence, Judgement, Ruling, Sampling, StatsError, Step,
    VerdictCase,
};

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

    /// Judges `case` as a fixed design (see [`BootstrapRule::decide`]).
    pub fn decide(&self, case: &VerdictCase) -> Judgement {
        self.assess(case).judgement
    }

    /// [`MinSpeedupRule::decide`], also returning the primary's comparison.
    pub fn assess(&self, case: &VerdictCase) -> Assessment {
        self.apply(self.bootstrap.assess(case))
    }

    /// Judges `case` measured with `sampling` (see [`BootstrapRule::rule`]): `bootstrap`'s
    /// requests for more pairs pass through unchanged.
    pub fn rule(&self, case: &VerdictCase, sampling: &Sampling) -> Ruling {
        match self.assess_sampled(case, sampling) {
            Step::Judged(assessment) => Ruling::Judged(assessment.judgement),
            Step::More(more) => Ruling::More(more),
        }
    }

    /// [`MinSpeedupRule::rule`], also returning the primary's comparison.
    pub fn assess_sampled(&self, case: &VerdictCase, sampling: &Sampling) -> Step {
        match self.bootstrap.assess_sampled(case, sampling) {
            Step::Judged(assessment) => Step::Judged(self.apply(assessment)),
            more => more,
        }
    }

    /// A keep whose speedup is below the minimum becomes `interesting`.
    fn apply(&self, mut assessment: Assessment) -> Assessment {
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
    #[serde(default = "default_max_extra_pairs")]
    max_extra_pairs: u32,
    min_speedup: f64,
}

fn default_resamples() -> NonZeroU32 {
    BootstrapRule::default().resamples
}

fn default_max_extra_pairs() -> u32 {
    DEFAULT_MAX_EXTRA_PAIRS
}

impl TryFrom<MinSpeedupParams> for MinSpeedupRule {
    type Error = StatsError;
    fn try_from(p: MinSpeedupParams) -> Result<Self, StatsError> {
        let bootstrap = BootstrapRule {
            confidence: p.confidence,
            resamples: p.resamples,
            seed: p.seed,
            max_extra_pairs: p.max_extra_pairs,
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
            max_extra_pairs: rule.bootstrap.max_extra_pairs,
            min_speedup: rule.min_speedup,
        }
    }
}
