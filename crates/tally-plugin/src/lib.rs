//! `tally-plugin`: the plugin contract, a small crate that rarely changes (like `tracing-core`).
//!
//! Four capabilities — [`VerdictRule`], [`StopRule`], [`FactSource`], [`Section`] — as traits; typed
//! provider parameters ([`ParamSpec`] → [`Params`]) checked against `tally.toml` with every
//! [`ConfigProblem`] at its dotted key; the [`Registry`] that maps provider names to build
//! functions; the serialisable views ([`view`]) providers read, which are also the JSON shapes
//! of the external-provider protocol (`docs/campaign.md#external-providers`); and
//! [`SectionOutput`], a section as the host ran it (the engine produces it, `tally-report`
//! renders it).
//!
//! The engine depends on this crate, never the reverse. Nothing here does I/O.

pub mod error;
pub mod fact;
pub mod params;
pub mod problem;
pub mod registry;
pub mod section;
pub mod stop;
pub mod verdict;
pub mod view;

pub use error::ProviderError;
pub use fact::{
    FactInfo, FactSource, HOST_FACTS, TOTAL_USD, TOTAL_USD_PARTS, host_facts, unsupplied_facts,
};
pub use params::{ParamKind, ParamSpec, Params, check_params};
pub use problem::ConfigProblem;
pub use registry::{Build, Capability, Check, Entry, ProviderInfo, Registry};
pub use section::{Block, Figure, Rendered, Section, SectionInput, SectionOutput, Surface, Table};
pub use stop::{FactReading, StopDecision, StopInput, StopRule};
pub use verdict::{
    Criterion, Guardrail, Judgement, MoreSamples, Ruling, Sampling, Side, VerdictCase, VerdictRule,
};
pub use view::{
    AgentRunView, CampaignData, CampaignSummary, CandidateView, Facts, MeasurementView, MetricView,
};
