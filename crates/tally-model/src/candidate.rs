//! The candidate record (`campaign.md` §1): one git revision proposed for a campaign, its parent
//! and its verdict with who set it.
//!
//! Data only: the verdict is decided by a verdict rule, and the rule that the loop never
//! overwrites a hand-set verdict is enforced by the store.

use serde::{Deserialize, Serialize};

use crate::ids::{CampaignId, CandidateId, UnixMillis};
use crate::verdict::{Actor, Verdict};

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
