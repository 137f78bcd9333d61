//! Idea rows (`docs/implementers.md#ideas`) on either backend: the statements, the checks a new
//! idea passes before it is inserted, and decoding a row.

use tally_contract::{Idea, IdeaState, NewIdea};
use tally_model::{CampaignId, CandidateId, UnixMillis};

use super::dialect::{Cells, bad};
use crate::error::{Error, StoreError};

const COLUMNS: &str = "campaign_id, number, title, text, attempts, base, state, reason, \
                       added_by, created_ms, state_since_ms";

/// One idea: `?1` campaign, `?2` number.
pub(crate) fn select_one() -> String {
    format!("SELECT {COLUMNS} FROM ideas WHERE campaign_id = ?1 AND number = ?2")
}

/// Every idea of campaign `?1`, by number.
pub(crate) fn select_all() -> String {
    format!("SELECT {COLUMNS} FROM ideas WHERE campaign_id = ?1 ORDER BY number")
}

/// The number the next idea of campaign `?1` gets (run under the store's write lock).
pub(crate) const NEXT_NUMBER: &str =
    "SELECT COALESCE(MAX(number), 0) + 1 FROM ideas WHERE campaign_id = ?1";

/// A new idea, `ready`: campaign, number, title, text, attempts, base, added_by, created.
pub(crate) fn insert() -> String {
    format!(
        "INSERT INTO ideas ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'ready', NULL, ?7, ?8, ?8)"
    )
}

/// A state change: campaign, number, state, reason, since.
pub(crate) const SET_STATE: &str = "UPDATE ideas SET state = ?3, reason = ?4, \
                                    state_since_ms = ?5 WHERE campaign_id = ?1 AND number = ?2";

/// What a new idea must be before the database sees it (the base is checked by the backend).
pub(crate) fn check_new(new: &NewIdea) -> Result<(), StoreError> {
    if new.title.trim().is_empty() {
        return Err(StoreError::invalid(
            "idea title",
            "it is empty; give the idea a one-line title",
        ));
    }
    if new.attempts == Some(0) {
        return Err(StoreError::invalid("idea attempts", "0; allow at least 1"));
    }
    Ok(())
}

/// A row of [`select_one`] / [`select_all`].
pub(crate) fn from_row(row: &impl Cells) -> Result<Idea, Error> {
    let state = row.string(6, "idea state")?;
    Ok(Idea {
        campaign: CampaignId(row.number(0, "idea campaign")?),
        number: row.number(1, "idea number")?,
        title: row.string(2, "idea title")?,
        text: row.string(3, "idea text")?,
        attempts: row.opt_number(4, "idea attempts")?,
        base: row.opt_number(5, "idea base")?.map(CandidateId),
        state: IdeaState::parse(&state)
            .ok_or_else(|| bad("idea state", format!("unknown idea state {state:?}")))?,
        reason: row.text(7)?,
        added_by: row.string(8, "idea added_by")?,
        created: UnixMillis(row.number(9, "idea created_ms")?),
        state_since: UnixMillis(row.number(10, "idea state_since_ms")?),
    })
}
