//! `[checks]` runs (`docs/campaign.md#checks`) on either backend: one row per finished check
//! run of a candidate, written in one transaction after its last command ended; the statements
//! and row decoding. Rows are read in insertion order: SQLite's `rowid`, PostgreSQL's `id`
//! (handed out under the store's write lock).

use tally_contract::CheckRecord;
use tally_model::{CandidateId, UnixMillis};

use super::dialect::{Cells, bad};
use crate::error::Error;

/// The columns both backends store, in the order of [`insert`]'s `?2`… placeholders.
const COLUMNS: &str = "campaign_id, candidate, checks_key, commands, passed, failed_check, \
                       reason, started_ms, ended_ms";

/// A finished check run: campaign, candidate, key, commands, passed (0/1), failed check,
/// reason, started, ended; with `id` first when `with_id` (PostgreSQL's `?1`, and every other
/// placeholder one later).
pub(crate) fn insert(with_id: bool) -> String {
    if with_id {
        format!(
            "INSERT INTO checks (id, {COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
        )
    } else {
        format!("INSERT INTO checks ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)")
    }
}

/// The check runs of campaign `?1`'s candidate `?2`, oldest first by `order` (`rowid` or `id`).
pub(crate) fn select_of_candidate(order: &str) -> String {
    format!(
        "SELECT candidate, checks_key, commands, passed, failed_check, reason, started_ms, \
         ended_ms FROM checks WHERE campaign_id = ?1 AND candidate = ?2 ORDER BY {order}"
    )
}

/// A row of [`select_of_candidate`].
pub(crate) fn from_row(row: &impl Cells) -> Result<CheckRecord, Error> {
    let passed: i64 = row.number(3, "check passed")?;
    Ok(CheckRecord {
        candidate: CandidateId(row.number(0, "check candidate")?),
        key: row.string(1, "checks key")?,
        commands: row.number(2, "check commands")?,
        passed: match passed {
            0 => false,
            1 => true,
            other => return Err(bad("check passed", format!("{other} is neither 0 nor 1"))),
        },
        failed_check: row.text(4)?,
        reason: row.text(5)?,
        started: UnixMillis(row.number(6, "check started_ms")?),
        ended: UnixMillis(row.number(7, "check ended_ms")?),
    })
}
