//! The resolved settings a campaign runs with: what `tally.toml` says, checked, with defaults
//! filled in. The engine sees only these (ripgrep's low-args → high-args split).

use tally_model::{Direction, Role};
use tally_plugin::Params;

use crate::checks::ChecksSettings;
use crate::executor::ExecutorSettings;
use crate::implementer::ImplementerSettings;

/// One `[[metrics]]` entry.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricSpec {
    /// Name as printed in METRIC lines.
    pub name: String,
    /// Which way is better.
    pub direction: Direction,
    /// Primary, guardrail or watch.
    pub role: Role,
    /// Guardrail: how much worse it may get, in its own units.
    pub margin: Option<f64>,
    /// Hard limit on the value.
    pub floor: Option<f64>,
    /// Pairs per evaluation.
    pub repeats: u32,
    /// One sample is the truth: the aggregate comparison is allowed.
    pub deterministic: bool,
}

/// A provider chosen in `tally.toml`, with its checked parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct ProviderChoice {
    /// The provider's name.
    pub provider: String,
    /// The dotted key of its table (`plugins.fact_source[0]`), for messages.
    pub key: String,
    /// Checked parameters, defaults filled in.
    pub params: Params,
    /// The table as written, as canonical JSON text (to notice when it changes).
    pub table_json: String,
}

/// Which sections a surface shows.
#[derive(Clone, Debug, PartialEq)]
pub enum SectionChoice {
    /// Every installed section of the surface, sorted by (order, name), minus `exclude`.
    Default {
        /// Section names to hide.
        exclude: Vec<String>,
    },
    /// Exactly these, in this order.
    Explicit(Vec<ProviderChoice>),
}

/// Everything `tally.toml` says, resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// Campaign name.
    pub name: String,
    /// The evaluate argv (no shell).
    pub evaluate: Vec<String>,
    /// Seconds per sample before the process group is killed.
    pub evaluate_timeout_s: f64,
    /// Repo-relative, git-ignored paths made available read-only in every checkout.
    pub link: Vec<String>,
    /// How many `tally run` workers may evaluate at once (1 to 64; above 1 only on a
    /// PostgreSQL store, `docs/team.md#workers`).
    pub evaluation_slots: u32,
    /// The metrics, in file order.
    pub metrics: Vec<MetricSpec>,
    /// `[plugins.verdict_rule]`.
    pub verdict_rule: ProviderChoice,
    /// `[plugins.stop_rule]`.
    pub stop_rule: ProviderChoice,
    /// `[[plugins.fact_source]]`, in file order.
    pub fact_sources: Vec<ProviderChoice>,
    /// `[status]`.
    pub status: SectionChoice,
    /// `[brief]`.
    pub brief: SectionChoice,
    /// `[implementer]`; `None`: no implementers.
    pub implementer: Option<ImplementerSettings>,
    /// `[checks]`; `None`: no checks before the samples.
    pub checks: Option<ChecksSettings>,
    /// `[executor]`: where samples run.
    pub executor: ExecutorSettings,
}

impl Settings {
    /// The primary metric (validation guarantees exactly one).
    pub fn primary(&self) -> &MetricSpec {
        self.metrics
            .iter()
            .find(|m| m.role == Role::Primary)
            .expect("validated settings have a primary metric")
    }

    /// Metrics the verdict judges: the primary and the guardrails.
    pub fn judging_metrics(&self) -> impl Iterator<Item = &MetricSpec> {
        self.metrics.iter().filter(|m| m.role != Role::Watch)
    }

    /// The campaign's repeats: the largest `repeats` among the judging metrics
    /// (`docs/campaign.md#pairs`).
    pub fn repeats(&self) -> u32 {
        self.judging_metrics().map(|m| m.repeats).max().unwrap_or(1)
    }

    /// Metric names a sample must print (judging metrics; a missing watch metric does not fail a
    /// sample).
    pub fn required_metrics(&self) -> Vec<String> {
        self.judging_metrics().map(|m| m.name.clone()).collect()
    }
}
