//! Capability `stop_rule`: before every evaluation, read facts and answer go, hold or stop
//! (`docs/campaign.md#stop-rules`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::ProviderError;
use crate::registry::ProviderInfo;
use crate::view::MetricView;

/// A stop rule's answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopDecision {
    /// Start the next evaluation.
    Go,
    /// Start nothing new; ask again later. The reason is shown in status.
    Hold(String),
    /// End the campaign.
    Stop(String),
}

/// One fact as the host read it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FactReading {
    /// The value, and how much it is expected to grow with the next evaluation (when the source
    /// projects it).
    Value {
        /// Current value.
        value: f64,
        /// Expected growth from the next evaluation.
        projection: Option<f64>,
    },
    /// The fact source failed: never read as zero.
    Failed(String),
}

/// What a stop rule is asked with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StopInput {
    /// The facts the rule asked for.
    pub facts: BTreeMap<String, FactReading>,
    /// The primary metric (name and direction, for `target`).
    pub primary: MetricView,
    /// Whether an evaluation is in flight.
    pub in_flight: bool,
}

/// A stop rule.
pub trait StopRule: Send + Sync {
    /// The facts this rule reads (the host gathers only these, plus what sections want).
    fn wanted_facts(&self) -> Vec<String>;
    /// Go, hold or stop.
    fn check(&self, input: &StopInput) -> Result<StopDecision, ProviderError>;

    /// What this built provider says about itself beyond its registry entry: an external
    /// provider's own name, doc and parameters, learnt from its `describe` answer (its wanted
    /// facts are [`StopRule::wanted_facts`]). `None` (the default) for built-ins, whose
    /// [`Entry::info`](crate::Entry) says it all.
    fn described(&self) -> Option<&ProviderInfo> {
        None
    }
}
