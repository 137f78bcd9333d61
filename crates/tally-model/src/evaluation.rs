//! The evaluation job (`campaign.md` §1, §3.3, §3.4): the unit of work that produces one
//! candidate's measurements (and its bar's, when paired), and the unit the crash recovery of
//! `tally run` re-queues.
//!
//! Data only; the engine decides when an evaluation is queued, started or abandoned, and the
//! store keeps the record so a killed `tally run` can see what was in flight.

use serde::{Deserialize, Serialize};

use crate::ids::{CampaignId, CandidateId, EvaluationId, UnixMillis};
use crate::wire_word::wire_word;

wire_word!(
    /// Why an evaluation runs.
    EvaluationKind, "evaluation kind" {
        /// The baseline measured by `tally init` (unpaired samples).
        Baseline => "baseline",
        /// Measuring a candidate so it can be judged.
        Judge => "judge",
        /// The independent re-measurement of a would-be keep (`confirm = true`, §5.3).
        Confirm => "confirm",
        /// A re-measurement asked for by hand (`tally candidate remeasure`) or by the engine
        /// (the head under a changed evaluator, a keep judged again against a moved head).
        Remeasure => "remeasure",
    }
);

wire_word!(
    /// Where an evaluation is in its life.
    EvaluationState, "evaluation state" {
        /// Waiting for a slot.
        Queued => "queued",
        /// Samples are being taken. Seen by a new `tally run`, this means the previous one died.
        Running => "running",
        /// All its samples were taken (some may have failed).
        Finished => "finished",
        /// Given up before the end (interrupted, killed, superseded); `note` says why.
        Abandoned => "abandoned",
    }
);

impl EvaluationState {
    /// True for `finished` and `abandoned`: no more samples will be recorded under it.
    pub fn is_ended(self) -> bool {
        matches!(self, Self::Finished | Self::Abandoned)
    }
}

/// One evaluation job of a campaign.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Evaluation {
    /// Store-assigned id.
    pub id: EvaluationId,
    /// The campaign.
    pub campaign: CampaignId,
    /// The candidate being measured.
    pub candidate: CandidateId,
    /// The bar measured next to it (`None` when unpaired).
    pub bar: Option<CandidateId>,
    /// Why it runs.
    pub kind: EvaluationKind,
    /// The repeats asked for (pairs when paired, samples otherwise).
    pub repeats: u32,
    /// Where it is.
    pub state: EvaluationState,
    /// Why it was abandoned, or any other remark from the engine.
    pub note: Option<String>,
    /// When it was queued.
    pub queued: UnixMillis,
    /// When its first sample started.
    pub started: Option<UnixMillis>,
    /// When it finished or was abandoned.
    pub ended: Option<UnixMillis>,
}
