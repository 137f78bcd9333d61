//! Capability `verdict_rule`: judge a candidate against its bar (`docs/campaign.md#verdict`). The case and
//! judgement types are `tally-stats`'s (pure data with serde), re-exported here so providers need
//! only this crate.

pub use tally_stats::{Criterion, Guardrail, Judgement, Side, VerdictCase};

use crate::error::ProviderError;
use crate::registry::ProviderInfo;

/// A verdict rule. Built-in rules answer every case; an external one may fail, which leaves the
/// candidate pending with the error as the reason.
pub trait VerdictRule: Send + Sync {
    /// The judgement of one case.
    fn decide(&self, case: &VerdictCase) -> Result<Judgement, ProviderError>;

    /// What this built provider says about itself beyond its registry entry: an external
    /// provider's own name, doc and parameters, learnt from its `describe` answer. `None` (the
    /// default) for built-ins, whose [`Entry::info`](crate::Entry) says it all.
    fn described(&self) -> Option<&ProviderInfo> {
        None
    }
}
