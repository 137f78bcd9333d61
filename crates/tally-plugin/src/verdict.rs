//! Capability `verdict_rule`: judge a candidate against its bar (`docs/campaign.md#verdict`). The case and
//! judgement types are `tally-stats`'s (pure data with serde), re-exported here so providers need
//! only this crate. A rule told how the pairs are measured ([`Sampling`]) may ask for more pairs
//! instead of judging ([`Ruling::More`], `docs/verdicts.md#more-pairs`); only built-in rules do,
//! since the JSON protocol of out-of-tree rules carries a case and a judgement.

pub use tally_stats::{
    Criterion, Guardrail, Judgement, MoreSamples, Ruling, Sampling, Side, VerdictCase,
};

use crate::error::ProviderError;
use crate::registry::ProviderInfo;

/// A verdict rule. Built-in rules answer every case; an external one may fail, which leaves the
/// candidate pending with the error as the reason.
pub trait VerdictRule: Send + Sync {
    /// The judgement of one case, on the pairs it has.
    fn decide(&self, case: &VerdictCase) -> Result<Judgement, ProviderError>;

    /// The judgement of a case measured with `sampling`, or a request for more pairs first.
    /// The default is [`VerdictRule::decide`]: a rule that does not override it (every
    /// out-of-tree rule) never asks for more.
    fn rule(&self, case: &VerdictCase, sampling: &Sampling) -> Result<Ruling, ProviderError> {
        let _ = sampling;
        self.decide(case).map(Ruling::Judged)
    }

    /// What this built provider says about itself beyond its registry entry: an external
    /// provider's own name, doc and parameters, learnt from its `describe` answer. `None` (the
    /// default) for built-ins, whose [`Entry::info`](crate::Entry) says it all.
    fn described(&self) -> Option<&ProviderInfo> {
        None
    }
}
