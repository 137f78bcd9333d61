//! What providers see of a campaign: plain serialisable views, the same in-process and over the
//! external protocol (`docs/campaign.md#external-providers`). The engine builds them from the store; providers never
//! touch the store.
//!
//! Means and verdict-relevant numbers are already computed under the current evaluator, so a
//! provider never mixes measurements of different evaluators by accident.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A metric as configured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricView {
    /// Name as printed in METRIC lines.
    pub name: String,
    /// `higher` or `lower`.
    pub direction: String,
    /// `primary`, `guardrail` or `watch`.
    pub role: String,
    /// Guardrail margin (absolute units).
    pub margin: Option<f64>,
    /// Hard floor on the value.
    pub floor: Option<f64>,
    /// Pairs per evaluation.
    pub repeats: u32,
    /// Whether one sample is the truth (aggregate comparison allowed).
    pub deterministic: bool,
}

/// The campaign in one object.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CampaignSummary {
    /// Campaign name.
    pub name: String,
    /// `active`, `held` or `stopped`.
    pub state: String,
    /// Why it is held or stopped.
    pub reason: Option<String>,
    /// The head candidate's id.
    pub head: Option<u64>,
    /// The baseline candidate's id.
    pub baseline: Option<u64>,
    /// Candidates with an evaluation queued or unfinished (a re-measurement, a confirmation, a
    /// baseline; one that Ctrl-C interrupted is queued again), which the next `tally run`
    /// measures: ids in order, each once.
    #[serde(default)]
    pub queued: Vec<u64>,
    /// The current evaluator identity.
    pub evaluator: String,
    /// Every configured metric, primary first.
    pub metrics: Vec<MetricView>,
    /// Seconds since the Unix epoch of the first evaluation, if any.
    pub first_evaluation_at: Option<f64>,
    /// The stop rule as configured: `{"provider": ..., <its parameters>}` (the `goal` section
    /// shows progress towards its limits).
    pub stop_rule: serde_json::Value,
}

/// One candidate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CandidateView {
    /// Id (`candidate#<id>`).
    pub id: u64,
    /// Full commit id.
    pub revision: String,
    /// The head when it was proposed.
    pub parent: Option<u64>,
    /// `pending`, `keep`, `interesting`, `discard` or `crash`.
    pub verdict: String,
    /// One-line reason of the verdict.
    pub reason: Option<String>,
    /// The bar its verdict compared it with (`candidate#<id>`): the head when its evaluation
    /// was queued, which is not its parent when the head moved in between; null while pending
    /// or when judged without a bar (the baseline).
    #[serde(default)]
    pub judged_against: Option<u64>,
    /// Who proposed it.
    pub proposed_by: String,
    /// Metric means over its successful full-benchmark measurements under the current evaluator.
    pub metrics: BTreeMap<String, f64>,
}

/// One measurement (sample).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MeasurementView {
    /// Id.
    pub id: u64,
    /// The candidate measured.
    pub candidate: u64,
    /// The evaluation job it belongs to.
    pub evaluation: Option<u64>,
    /// Wall time of the evaluate process, seconds.
    pub seconds: Option<f64>,
    /// Null on success.
    pub error: Option<String>,
    /// The measurement it ran next to (paired design).
    pub pair: Option<u64>,
    /// `candidate` or `bar`.
    pub side: String,
    /// The evaluator identity it ran under.
    pub evaluator: String,
    /// Null for the full benchmark. Reserved: always null for now; a later partial benchmark
    /// (a cheaper rung) will name itself here, and full-benchmark figures leave such samples out.
    pub rung: Option<String>,
    /// Attempt number (2 for the retry of a sample killed from outside).
    pub attempt: u32,
    /// Index of the sample on its side of the evaluation (0-based).
    #[serde(default)]
    pub sample: u32,
    /// Seconds since the Unix epoch when it started.
    pub started_at: Option<f64>,
    /// What it printed.
    pub metrics: BTreeMap<String, f64>,
    /// The evidence artifact the evaluation handed over (`TALLY_EVIDENCE_FILE`), as kept by
    /// tally; null when it wrote none.
    #[serde(default)]
    pub evidence: Option<String>,
    /// GPU busy time the evidence accounts for, seconds (the sum over its device clocks of the
    /// union of their busy intervals); null without accounted evidence.
    #[serde(default)]
    pub gpu_busy_seconds: Option<f64>,
    /// GPUs the Slurm job that ran it held (`docs/campaign.md#gpu-hours`); absent for a local
    /// run or a report added by hand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_gpus: Option<u32>,
    /// How long that job held them, seconds; present exactly when `held_gpus` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_seconds: Option<f64>,
}

/// Everything a fact source or section gets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CampaignData {
    /// The campaign.
    pub campaign: CampaignSummary,
    /// All candidates, oldest first.
    pub candidates: Vec<CandidateView>,
    /// All measurements, oldest first.
    pub measurements: Vec<MeasurementView>,
    /// The implementer runs that have ended, oldest first (`docs/implementers.md#usage`);
    /// empty for a campaign without implementers.
    #[serde(default)]
    pub agent_runs: Vec<AgentRunView>,
}

/// One ended implementer run and what it used.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentRunView {
    /// `run#N`.
    pub run: u32,
    /// How it ended (`finished`, `failed`, `not_started`, ...).
    pub end: String,
    /// Input, output and cached tokens together; null when unknown.
    pub tokens: Option<u64>,
    /// What it cost in USD; null when unknown (never 0 for unknown).
    pub usd: Option<f64>,
    /// Its commits that were queued to be measured (not skipped, refused, recovered or
    /// resolved to an existing candidate).
    #[serde(default)]
    pub measured: u32,
}

/// Facts by name.
pub type Facts = BTreeMap<String, f64>;
