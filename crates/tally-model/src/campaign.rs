//! A campaign and what it holds besides measurements: the [`Campaign`] record and its
//! [`CampaignState`], the [`Candidate`]s proposed for it, and the [`Evaluation`] jobs that
//! measure them (`docs/campaign.md#vocabulary`, `docs/campaign.md#pairs`, `docs/campaign.md#crash-safety`).
//!
//! Data only. Deciding when to hold or stop is the stop rule's job, deciding verdicts the
//! verdict rule's, and scheduling evaluations the engine's; the rule that the loop never
//! overwrites a hand-set verdict is enforced by the store. The config text here is a record of
//! what was last registered, never read back as configuration (commands read `tally.toml`
//! itself every time).

use serde::{Deserialize, Serialize};

use crate::ids::{CampaignId, CandidateId, ConfigTextId, EvaluationId, UnixMillis};
use crate::judging::{Actor, Verdict};
use crate::wire_word::wire_word;

wire_word!(
    /// Whether a campaign starts new work (`docs/campaign.md#vocabulary`).
    CampaignState, "campaign state" {
        /// Evaluations start.
        Active => "active",
        /// Reversible pause: nothing new starts; asked again before each evaluation.
        Held => "held",
        /// Ended by a stop rule or by hand; `tally campaign resume` or a changed
        /// `[plugins.stop_rule]` table makes it active again.
        Stopped => "stopped",
    }
);

/// One optimisation goal in one repository.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Campaign {
    /// Store-assigned id.
    pub id: CampaignId,
    /// The `name` of `tally.toml`; unique in a store.
    pub name: String,
    /// Active, held or stopped.
    pub state: CampaignState,
    /// Why it is held or stopped (`None` when active, or when no reason was given).
    pub reason: Option<String>,
    /// When `state` last changed (creation counts).
    pub state_since: UnixMillis,
    /// When the campaign was registered.
    pub created: UnixMillis,
    /// The current evaluator identity (`docs/campaign.md#pairs`): a hash computed by the engine.
    pub evaluator: String,
    /// The latest `keep` (the bar for new candidates); `None` until the baseline is kept.
    pub head: Option<CandidateId>,
    /// The stored `tally.toml` text last registered for the campaign.
    pub config: ConfigTextId,
    /// That text itself.
    pub config_text: String,
}

/// One proposed revision of a campaign.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// The campaign it belongs to.
    pub campaign: CampaignId,
    /// Its number within the campaign (`candidate#0` is the baseline).
    pub id: CandidateId,
    /// The full commit id (40 or 64 hex digits); never abbreviated.
    pub revision: String,
    /// The head when it was proposed; `None` for the baseline (or anything proposed before
    /// the campaign had a head).
    pub parent: Option<CandidateId>,
    /// Who proposed it: a person's or script's name, `init` for the baseline, later an agent.
    pub proposed_by: String,
    /// The `--note` text given when it was queued.
    pub note: Option<String>,
    /// `pending` until judged.
    pub verdict: Verdict,
    /// The one-line reason of the verdict (also used while pending, e.g. why a verdict rule
    /// failed).
    pub reason: Option<String>,
    /// Who set the current verdict: `None` while the candidate is the loop's to judge (pending,
    /// or handed back to the loop), [`Actor::Loop`], or a person. The loop never overwrites a
    /// verdict set by a person.
    pub verdict_set_by: Option<Actor>,
    /// The bar it was judged against (`None` when not judged or judged without a bar).
    pub judged_against: Option<CandidateId>,
    /// When it was queued.
    pub created: UnixMillis,
    /// When its current verdict was set (`None` while pending).
    pub judged: Option<UnixMillis>,
}

impl Candidate {
    /// True when a person set the current verdict, so the loop must leave it alone.
    pub fn is_hand_set(&self) -> bool {
        self.verdict_set_by.as_ref().is_some_and(Actor::is_person)
    }
}

wire_word!(
    /// Why an evaluation runs.
    EvaluationKind, "evaluation kind" {
        /// The baseline measured by `tally init` (unpaired samples).
        Baseline => "baseline",
        /// Measuring a candidate so it can be judged.
        Judge => "judge",
        /// The independent re-measurement of a would-be keep (`confirm = true`, `docs/campaign.md#after-the-rule`).
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_spell_as_the_spec_says() {
        assert_eq!(CampaignState::Held.as_str(), "held");
        assert_eq!(
            "stopped".parse::<CampaignState>(),
            Ok(CampaignState::Stopped)
        );
        assert_eq!(
            serde_json::to_string(&CampaignState::Active).unwrap(),
            "\"active\""
        );
        let err = "paused".parse::<CampaignState>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "bad campaign state \"paused\": expected one of active, held, stopped"
        );
    }
}
