//! Ideas (`docs/implementers.md#ideas`): what an implementer is asked to try, queued by a person
//! with `tally idea add`. The [`IdeaStore`] trait is separate from [`crate::Store`] so that a
//! backend gains ideas without the campaign contract changing; the same rules hold (one
//! transaction per write, instants from the caller, `Ok(None)` for a missing lookup, writes
//! naming a missing campaign fail with `NoSuchCampaign`).

use tally_model::{CampaignId, CandidateId, UnixMillis};

use crate::error::StoreError;

/// Where an idea stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdeaState {
    /// Waiting for an implementer.
    Ready,
    /// Set aside (by hand, or after it failed to start twice); never launched.
    Parked,
    /// Its attempts are used up.
    Done,
}

impl IdeaState {
    /// The stored and printed name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ready => "ready",
            Self::Parked => "parked",
            Self::Done => "done",
        }
    }

    /// The state with this name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "ready" => Some(Self::Ready),
            "parked" => Some(Self::Parked),
            "done" => Some(Self::Done),
            _ => None,
        }
    }
}

/// A stored idea.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Idea {
    /// The campaign.
    pub campaign: CampaignId,
    /// Its number within the campaign, from 1.
    pub number: u32,
    /// One line.
    pub title: String,
    /// What to try, in the person's words (may be empty).
    pub text: String,
    /// Attempts allowed; `None`: the `[implementer] attempts` in force.
    pub attempts: Option<u32>,
    /// The candidate to start from; `None`: the head at launch.
    pub base: Option<CandidateId>,
    /// Where it stands.
    pub state: IdeaState,
    /// Why it is in that state (set when parked).
    pub reason: Option<String>,
    /// Who queued it.
    pub added_by: String,
    /// When it was queued.
    pub created: UnixMillis,
    /// When its state last changed.
    pub state_since: UnixMillis,
}

/// An idea to queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewIdea {
    /// One line, non-empty.
    pub title: String,
    /// What to try.
    pub text: String,
    /// Attempts allowed (≥ 1), or the configured default.
    pub attempts: Option<u32>,
    /// The candidate to start from (must exist), or the head at launch.
    pub base: Option<CandidateId>,
    /// Who queues it.
    pub added_by: String,
    /// Now.
    pub created: UnixMillis,
}

/// Durable storage of ideas.
pub trait IdeaStore: Send + Sync {
    /// Queues an idea, `ready`, numbered after the campaign's last one.
    fn add_idea(&self, campaign: CampaignId, new: &NewIdea) -> Result<Idea, StoreError>;

    /// One idea.
    fn idea(&self, campaign: CampaignId, number: u32) -> Result<Option<Idea>, StoreError>;

    /// Every idea of a campaign, by number.
    fn list_ideas(&self, campaign: CampaignId) -> Result<Vec<Idea>, StoreError>;

    /// Sets an idea's state and reason, stamping `state_since = at`. `Ok(None)` when there is
    /// no such idea.
    fn set_idea_state(
        &self,
        campaign: CampaignId,
        number: u32,
        state: IdeaState,
        reason: Option<&str>,
        at: UnixMillis,
    ) -> Result<Option<Idea>, StoreError>;
}
