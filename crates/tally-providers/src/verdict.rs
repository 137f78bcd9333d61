//! The built-in verdict rules `bootstrap` (`docs/campaign.md#bootstrap`, the default) and `min_speedup`
//! (`docs/campaign.md#min-speedup`): their parameters, the checks of their values, and thin wrappers around
//! `tally-stats`'s [`BootstrapRule`] and [`MinSpeedupRule`], which do all the deciding (and, told
//! how the pairs are measured, ask for more pairs: `docs/verdicts.md#more-pairs`).
//!
//! `confirm` is declared here so `tally.toml` may set it and `tally plugins` documents it, but it
//! is the engine that reads it (it re-measures a keep before moving the head); the rules ignore
//! it.

use serde_json::json;
use tally_plugin::{
    Entry, Judgement, ParamKind, ParamSpec, Params, ProviderError, ProviderInfo, Ruling, Sampling,
    VerdictCase, VerdictRule,
};
use tally_stats::{BootstrapRule, Confidence, DEFAULT_MAX_EXTRA_PAIRS, MinSpeedupRule};

use crate::checks::Checks;

/// The parameters both rules share.
fn bootstrap_params() -> Vec<ParamSpec> {
    vec![
        ParamSpec::optional(
            "confidence",
            ParamKind::Number,
            json!(Confidence::DEFAULT),
            "one-sided confidence of the bounds, strictly between 0.5 and 1",
        ),
        ParamSpec::optional(
            "resamples",
            ParamKind::Integer,
            json!(10_000),
            "bootstrap resamples per bound, at least 1",
        ),
        ParamSpec::optional(
            "seed",
            ParamKind::Integer,
            json!(0),
            "generator seed: the same measurements and seed give the same verdict",
        ),
        ParamSpec::optional(
            "max_extra_pairs",
            ParamKind::Integer,
            json!(DEFAULT_MAX_EXTRA_PAIRS),
            "pairs beyond repeats a candidate may be given, to re-measure a pair with a far sample \
             or to look again when the first pairs are inconclusive; 0 judges the repeats alone",
        ),
        ParamSpec::optional(
            "confirm",
            ParamKind::Boolean,
            json!(false),
            "re-measure a keep once more against the same bar before it becomes the head",
        ),
    ]
}

/// The registry entry of `bootstrap`.
pub(crate) fn bootstrap_entry() -> Entry<dyn VerdictRule> {
    Entry {
        check: None,
        info: ProviderInfo::builtin(
            "bootstrap",
            "keeps a candidate when a paired bootstrap and Student-t bound show its primary beats the bar",
            bootstrap_params(),
        ),
        build: |params| {
            let rule = read_bootstrap(params, Checks::new(params))?;
            Ok(Box::new(Bootstrap(rule)))
        },
    }
}

/// The registry entry of `min_speedup`.
pub(crate) fn min_speedup_entry() -> Entry<dyn VerdictRule> {
    let mut params = bootstrap_params();
    params.push(ParamSpec::required(
        "min_speedup",
        ParamKind::Number,
        "the smallest relative gain a keep must show, as a fraction (0.05 = 5%)",
    ));
    Entry {
        check: None,
        info: ProviderInfo::builtin(
            "min_speedup",
            "bootstrap, but a keep whose relative gain is below min_speedup becomes interesting",
            params,
        ),
        build: |params| {
            let mut checks = Checks::new(params);
            let min_speedup = checks.number(
                "min_speedup",
                |x| x >= 0.0,
                "a fraction of at least 0, such as 0.05 for 5%",
            );
            let bootstrap = read_bootstrap(params, checks)?;
            let rule = MinSpeedupRule::new(bootstrap, min_speedup.unwrap_or(0.0))
                .map_err(|e| vec![problem(params, "min_speedup", &e.to_string())])?;
            Ok(Box::new(MinSpeedup(rule)))
        },
    }
}

/// Checks and reads the shared parameters; `checks` may already hold problems of the caller's
/// own parameters, which are returned with these.
fn read_bootstrap(
    params: &Params,
    mut checks: Checks<'_>,
) -> Result<BootstrapRule, Vec<tally_plugin::ConfigProblem>> {
    let confidence = checks.number(
        "confidence",
        |x| Confidence::new(x).is_ok(),
        "a number strictly between 0.5 and 1, such as 0.95",
    );
    let resamples = checks.integer(
        "resamples",
        1,
        u64::from(u32::MAX),
        "a whole number of resamples from 1 to 4294967295, such as 10000",
    );
    let seed = checks.integer("seed", 0, u64::MAX, "a whole number of at least 0");
    let max_extra_pairs = checks.integer(
        "max_extra_pairs",
        0,
        MAX_EXTRA_PAIRS,
        "a whole number of pairs from 0 to 1000, such as 3",
    );
    if params.get("confirm").is_some() && params.bool("confirm").is_none() {
        checks.problem("confirm", "expected true or false");
    }
    checks.finish()?;
    let defaults = BootstrapRule::default();
    BootstrapRule::new(
        confidence.unwrap_or(defaults.confidence.value()),
        resamples.map_or(defaults.resamples.get(), |n| n as u32),
        seed.unwrap_or(defaults.seed),
    )
    .map(|rule| {
        rule.with_max_extra_pairs(max_extra_pairs.map_or(DEFAULT_MAX_EXTRA_PAIRS, |n| n as u32))
    })
    .map_err(|e| vec![problem(params, "confidence", &e.to_string())])
}

/// The most extra pairs a rule may ask for per candidate: as many as `repeats` may be.
const MAX_EXTRA_PAIRS: u64 = 1000;

fn problem(params: &Params, name: &str, message: &str) -> tally_plugin::ConfigProblem {
    tally_plugin::ConfigProblem::missing(params.key(name), message)
}

/// `bootstrap` as a provider.
struct Bootstrap(BootstrapRule);

impl VerdictRule for Bootstrap {
    fn decide(&self, case: &VerdictCase) -> Result<Judgement, ProviderError> {
        Ok(self.0.decide(case))
    }

    fn rule(&self, case: &VerdictCase, sampling: &Sampling) -> Result<Ruling, ProviderError> {
        Ok(self.0.rule(case, sampling))
    }
}

/// `min_speedup` as a provider.
struct MinSpeedup(MinSpeedupRule);

impl VerdictRule for MinSpeedup {
    fn decide(&self, case: &VerdictCase) -> Result<Judgement, ProviderError> {
        Ok(self.0.decide(case))
    }

    fn rule(&self, case: &VerdictCase, sampling: &Sampling) -> Result<Ruling, ProviderError> {
        Ok(self.0.rule(case, sampling))
    }
}
