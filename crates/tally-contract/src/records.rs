//! The values that go into and come out of a [`crate::Store`] besides the model types: what a
//! caller supplies to create things (`New*`), the verdict write with its head update, and the
//! bulk and aggregate reads (`CampaignSnapshot`, `CampaignTotals`).
//!
//! Plain data with no behaviour beyond small accessors; the rules they are subject to are
//! documented on the trait methods and enforced by each backend.

use std::collections::BTreeMap;
use std::path::PathBuf;

use tally_model::{
    Actor, Campaign, CampaignId, Candidate, CandidateId, ConfigTextId, Evaluation, EvaluationId,
    EvaluationKind, EvidenceRef, Held, Measurement, MeasurementId, Side, UnitValues, UnixMillis,
    Verdict,
};

/// A campaign to register (`tally init`).
#[derive(Clone, Debug, PartialEq)]
pub struct NewCampaign {
    /// Unique in the store.
    pub name: String,
    /// The evaluator identity at registration.
    pub evaluator: String,
    /// The `tally.toml` text at registration (stored deduplicated).
    pub config_text: String,
    /// Registration time; also the first `state_since`.
    pub created: UnixMillis,
}

/// A revision to queue (`tally candidate add`, and the baseline at `init`).
#[derive(Clone, Debug, PartialEq)]
pub struct NewCandidate {
    /// The full commit id.
    pub revision: String,
    /// Who proposes it.
    pub proposed_by: String,
    /// `--note`.
    pub note: Option<String>,
    /// When it was queued.
    pub created: UnixMillis,
}

/// What a verdict write does to the campaign's head, in the same transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeadUpdate {
    /// Leave the head alone. Refused when the candidate is the head and the new verdict is not
    /// `keep` (the head is always a keep).
    Unchanged,
    /// Make this candidate the head, provided the head is still `expected` (the bar it was
    /// judged against); otherwise nothing is written and the outcome is
    /// [`VerdictWriteOutcome::HeadMoved`] (`docs/campaign.md#after-the-rule`: a would-be keep is judged again
    /// against the new head). The verdict must be `keep`.
    MakeHead {
        /// The head the caller believes is current.
        expected: Option<CandidateId>,
    },
    /// Set the head unconditionally, e.g. back to an earlier keep when a person discards the
    /// head by hand. The target must be a `keep` once the write is done (or `None`).
    Set(Option<CandidateId>),
}

/// One verdict write (`set_verdict`).
#[derive(Clone, Debug, PartialEq)]
pub struct VerdictWrite {
    /// The new verdict. Writing `pending` hands the candidate (back) to the loop: its
    /// `verdict_set_by` becomes `None`, whoever writes it.
    pub verdict: Verdict,
    /// The one-line reason.
    pub reason: Option<String>,
    /// The loop or a person. A loop write on a candidate whose verdict a person set is refused
    /// ([`VerdictWriteOutcome::HandSet`]).
    pub by: Actor,
    /// When.
    pub at: UnixMillis,
    /// The bar it was judged against.
    pub judged_against: Option<CandidateId>,
    /// What happens to the head.
    pub head: HeadUpdate,
}

/// What a verdict write did. Only `Applied` wrote anything.
#[derive(Clone, Debug, PartialEq)]
#[must_use]
pub enum VerdictWriteOutcome {
    /// Written (with its head update); the candidate as it now is.
    Applied(Candidate),
    /// Refused: a person set this candidate's verdict, and the loop never overwrites it. The
    /// candidate as it is.
    HandSet(Candidate),
    /// Refused: [`HeadUpdate::MakeHead`] expected another head. The current head.
    HeadMoved(Option<CandidateId>),
}

/// An evaluation to queue.
#[derive(Clone, Debug, PartialEq)]
pub struct NewEvaluation {
    /// The campaign.
    pub campaign: CampaignId,
    /// The candidate to measure.
    pub candidate: CandidateId,
    /// The bar to measure next to it (`None`: unpaired).
    pub bar: Option<CandidateId>,
    /// Why.
    pub kind: EvaluationKind,
    /// Pairs (paired) or samples (unpaired); at least 1.
    pub repeats: u32,
    /// When it was queued.
    pub queued: UnixMillis,
}

/// A measurement to record: every field of [`Measurement`] but the id, plus its per-unit
/// results, written in one transaction.
#[derive(Clone, Debug, PartialEq)]
pub struct NewMeasurement {
    /// The campaign.
    pub campaign: CampaignId,
    /// The candidate whose revision ran (the bar's candidate for a bar sample).
    pub candidate: CandidateId,
    /// The evaluation (must be `running`), or `None` for a report added by hand.
    pub evaluation: Option<EvaluationId>,
    /// Candidate or bar side; must match the evaluation's candidate or bar.
    pub side: Side,
    /// Sample index within its evaluation and side.
    pub sample: u32,
    /// 1, or 2 for a retry.
    pub attempt: u32,
    /// The failed measurement this retries (same campaign and candidate).
    pub retry_of: Option<MeasurementId>,
    /// The already recorded sample of the other side of the same evaluation that ran next to
    /// this one; the store links it back to this one.
    pub pair: Option<MeasurementId>,
    /// Evaluator identity.
    pub evaluator: String,
    /// `None` = full benchmark (reserved: nothing records a partial benchmark yet).
    pub rung: Option<String>,
    /// Wall time, ns.
    pub duration_ns: Option<u64>,
    /// Printed metrics (finite values only).
    pub metrics: BTreeMap<String, f64>,
    /// `None` on success.
    pub error: Option<String>,
    /// Process start.
    pub started: UnixMillis,
    /// Process end.
    pub ended: UnixMillis,
    /// Captured stdout (UTF-8 path).
    pub stdout_log: Option<PathBuf>,
    /// Captured stderr (UTF-8 path).
    pub stderr_log: Option<PathBuf>,
    /// Evidence handed over.
    pub evidence: EvidenceRef,
    /// The config text it ran with (`record_config_text`).
    pub config: Option<ConfigTextId>,
    /// The loop or a person.
    pub recorded_by: Actor,
    /// Per-unit results (finite values).
    pub units: UnitValues,
    /// What the Slurm job that ran it held (`docs/campaign.md#gpu-hours`); `None` otherwise.
    pub held: Option<Held>,
}

/// Everything `tally status` needs from the store, read in one consistent snapshot.
#[derive(Clone, Debug, PartialEq)]
pub struct CampaignSnapshot {
    /// The campaign.
    pub campaign: Campaign,
    /// All its candidates, oldest first.
    pub candidates: Vec<Candidate>,
    /// All its measurements (both sides, failed and retried included), in id order.
    pub measurements: Vec<Measurement>,
    /// All its evaluations, in id order.
    pub evaluations: Vec<Evaluation>,
}

/// Candidates per verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct VerdictCounts {
    /// `pending`.
    pub pending: u64,
    /// `keep` (the baseline included).
    pub keep: u64,
    /// `interesting`.
    pub interesting: u64,
    /// `discard`.
    pub discard: u64,
    /// `crash`.
    pub crash: u64,
}

impl VerdictCounts {
    /// All candidates.
    pub fn total(&self) -> u64 {
        self.pending + self.judged()
    }

    /// Candidates with a verdict other than `pending`.
    pub fn judged(&self) -> u64 {
        self.keep + self.interesting + self.discard + self.crash
    }
}

/// Evaluations per state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct EvaluationCounts {
    /// `queued`.
    pub queued: u64,
    /// `running` (in flight — or left over by a killed `tally run`).
    pub running: u64,
    /// `finished`.
    pub finished: u64,
    /// `abandoned`.
    pub abandoned: u64,
}

/// Aggregates that facts and stop rules read without loading every row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct CampaignTotals {
    /// Candidates per verdict.
    pub verdicts: VerdictCounts,
    /// Judged candidates numbered after the highest-numbered `keep` (all judged candidates when
    /// there is no keep) — the `without_keep` fact and the `plateau` limit.
    pub judged_since_last_keep: u64,
    /// Measurements of every candidate (both sides, failed and retried included).
    pub measurements: u64,
    /// Those with an error.
    pub failed_measurements: u64,
    /// Σ `duration_ns` over all of them (unknown durations count 0): the `gpu_hours` ledger.
    pub duration_ns: u64,
    /// The earliest measurement start.
    pub first_measurement_started: Option<UnixMillis>,
    /// The earliest evaluation start (`max_hours` counts from here).
    pub first_evaluation_started: Option<UnixMillis>,
    /// Evaluations per state.
    pub evaluations: EvaluationCounts,
}

/// The summed wall time of one finished evaluation (for `reserve` projections, `docs/campaign.md#stop-rules`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EvaluationDuration {
    /// The evaluation.
    pub evaluation: EvaluationId,
    /// Σ `duration_ns` of all its measurements (both sides, failed and retried included).
    pub duration_ns: u64,
    /// How many measurements that is.
    pub measurements: u64,
}
