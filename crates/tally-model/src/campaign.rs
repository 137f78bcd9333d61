//! The campaign record: [`Campaign`] and its [`CampaignState`] (`campaign.md` §1).
//!
//! Data only. Deciding when to hold or stop is the stop rule's job; the config text here is a
//! record of what was last registered, never read back as configuration (commands read
//! `tally.toml` itself every time).

use serde::{Deserialize, Serialize};

use crate::ids::{CampaignId, CandidateId, ConfigTextId, UnixMillis};
use crate::wire_word::wire_word;

wire_word!(
    /// Whether a campaign starts new work (`campaign.md` §1).
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
    /// The current evaluator identity (`campaign.md` §3.3): a hash computed by the engine.
    pub evaluator: String,
    /// The latest `keep` (the bar for new candidates); `None` until the baseline is kept.
    pub head: Option<CandidateId>,
    /// The stored `tally.toml` text last registered for the campaign.
    pub config: ConfigTextId,
    /// That text itself.
    pub config_text: String,
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
