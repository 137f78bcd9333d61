//! The measurement record (`docs/campaign.md#vocabulary`, `docs/campaign.md#evaluating`): one run of the evaluate command on one
//! revision — its wall time, metrics, error, pairing, evaluator, attempt facts, logs and the
//! slot where the evidence half hands over GPU time — plus per-unit results ([`UnitValues`]).
//!
//! Data only: running the command is `tally-runner`'s job, averaging and judging is the
//! verdict's, and whether a measurement enters a mean (success, current evaluator) is decided by
//! the reader from these fields.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::ids::{CampaignId, CandidateId, ConfigTextId, EvaluationId, MeasurementId, UnixMillis};
use crate::judging::Actor;
use crate::wire_word::wire_word;

wire_word!(
    /// Which side of an evaluation a sample measured (`TALLY_SIDE`).
    Side, "side" {
        /// The candidate being judged.
        Candidate => "candidate",
        /// The bar it is judged against (the sample belongs to the bar's candidate).
        Bar => "bar",
    }
);

/// Per-unit results of one measurement (`docs/campaign.md#units`): metric → unit id → contribution.
pub type UnitValues = BTreeMap<String, BTreeMap<String, f64>>;

/// The slot where an evaluation hands over evidence about the GPU time it used ("the two halves
/// meet"). Both parts are optional and empty by default.
#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct EvidenceRef {
    /// Where the evidence artifact is: a path (usually under `.tally/`) or a blob reference.
    pub artifact: Option<String>,
    /// GPU busy time the evidence accounts for, in nanoseconds.
    pub gpu_busy_ns: Option<u64>,
}

impl EvidenceRef {
    /// True when neither part is set.
    pub fn is_empty(&self) -> bool {
        self.artifact.is_none() && self.gpu_busy_ns.is_none()
    }
}

wire_word!(
    /// Where the elapsed time of a [`Held`] allocation came from
    /// (`docs/campaign.md#gpu-hours`), best first.
    HeldFrom, "held-time source" {
        /// Slurm's accounting (`sacct`'s `ElapsedRaw`).
        Sacct => "sacct",
        /// The controller's view of the job (`scontrol show job`'s `RunTime`, or `EndTime` −
        /// `StartTime`), when accounting does not answer.
        Scontrol => "scontrol",
        /// tally's own measured wall time, when Slurm said neither.
        Wall => "wall",
    }
);

/// What a sample run as a Slurm job held (`docs/campaign.md#gpu-hours`): the GPUs allocated to
/// the job and how long it held them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Held {
    /// GPUs allocated to the job (`gres/gpu` of its allocated TRES, else the count of the
    /// configured `gres`); 0 when the job held none that Slurm knows of.
    pub gpus: u32,
    /// How long the job held them, nanoseconds.
    pub elapsed_ns: u64,
    /// Where `elapsed_ns` came from.
    pub from: HeldFrom,
}

impl Held {
    /// Elapsed time in seconds.
    pub fn seconds(&self) -> f64 {
        self.elapsed_ns as f64 / 1e9
    }
}

/// One sample: one run of the evaluate command (or one report added by hand).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// Store-assigned id; ids grow in the order measurements were recorded.
    pub id: MeasurementId,
    /// The campaign.
    pub campaign: CampaignId,
    /// The candidate whose revision ran (for a bar sample: the bar's candidate).
    pub candidate: CandidateId,
    /// The evaluation job that took it (`None` for `tally measurement add`).
    pub evaluation: Option<EvaluationId>,
    /// Candidate or bar side of its evaluation.
    pub side: Side,
    /// Sample index within its evaluation and side (`TALLY_SAMPLE`), from 0.
    pub sample: u32,
    /// 1 for a first attempt, 2 for the retry of a sample killed from outside.
    pub attempt: u32,
    /// The failed attempt this one retries.
    pub retry_of: Option<MeasurementId>,
    /// The sample of the other side that ran next to it. Symmetric: the store links both
    /// measurements of a pair when the second is recorded.
    pub pair: Option<MeasurementId>,
    /// The evaluator identity it ran under (`docs/campaign.md#pairs`).
    pub evaluator: String,
    /// `None` = the full benchmark; reserved for cheaper partial benchmarks: nothing records
    /// one yet, but every reader of means already keeps to `None` (`is_full_benchmark`).
    pub rung: Option<String>,
    /// Wall time of the evaluate process in nanoseconds (`None` when unknown, e.g. a report
    /// with `"seconds": null`). The GPU-hours ledger sums these.
    pub duration_ns: Option<u64>,
    /// Whatever `METRIC name=value` lines it printed (finite values only), even on failure.
    pub metrics: BTreeMap<String, f64>,
    /// `None` on success; otherwise one sentence saying why it failed.
    pub error: Option<String>,
    /// When the process started.
    pub started: UnixMillis,
    /// When it ended.
    pub ended: UnixMillis,
    /// Captured stdout.
    pub stdout_log: Option<PathBuf>,
    /// Captured stderr.
    pub stderr_log: Option<PathBuf>,
    /// Evidence handed over by the evaluation.
    pub evidence: EvidenceRef,
    /// The `tally.toml` text it ran with.
    pub config: Option<ConfigTextId>,
    /// The loop, or the person who added it by hand.
    pub recorded_by: Actor,
    /// What the Slurm job that ran it held; `None` for a local run or a report added by hand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<Held>,
}

impl Measurement {
    /// True when it succeeded (no error); only these enter means.
    pub fn is_success(&self) -> bool {
        self.error.is_none()
    }

    /// True for the full benchmark (`rung` is `None`).
    pub fn is_full_benchmark(&self) -> bool {
        self.rung.is_none()
    }

    /// Wall time in seconds, as the external-provider JSON shows it (`docs/plugins.md`).
    pub fn seconds(&self) -> Option<f64> {
        self.duration_ns.map(|ns| ns as f64 / 1e9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sides_and_seconds() {
        assert_eq!(Side::Bar.as_str(), "bar");
        assert_eq!("candidate".parse::<Side>(), Ok(Side::Candidate));
        assert_eq!(serde_json::to_string(&Side::Bar).unwrap(), "\"bar\"");
        let m = Measurement {
            id: MeasurementId(1),
            campaign: CampaignId(1),
            candidate: CandidateId(0),
            evaluation: None,
            side: Side::Candidate,
            sample: 0,
            attempt: 1,
            retry_of: None,
            pair: None,
            evaluator: "e".into(),
            rung: None,
            duration_ns: Some(2_500_000_000),
            metrics: BTreeMap::new(),
            error: None,
            started: UnixMillis(0),
            ended: UnixMillis(2_500),
            stdout_log: None,
            stderr_log: None,
            evidence: EvidenceRef::default(),
            config: None,
            recorded_by: Actor::Loop,
            held: None,
        };
        assert_eq!(m.seconds(), Some(2.5));
        assert!(m.is_success() && m.is_full_benchmark() && m.evidence.is_empty());
        let json = serde_json::to_value(&m).unwrap();
        assert_eq!(json["recorded_by"], "loop");
        assert_eq!(json["side"], "candidate");
        let person = serde_json::to_value(Actor::Person("ana".into())).unwrap();
        assert_eq!(person, serde_json::json!({"person": "ana"}));
    }
}
