//! How a claimed evaluation names its worker slot (`docs/team.md#workers`), shared by both
//! backends: the note of a `running` evaluation reads `worker slot N (tally pid=…)` until the
//! evaluation ends and its note is replaced. Recovery reads the slot back to tell a live
//! worker's evaluation from a gone one's.

use tally_model::Evaluation;

/// How a claimed evaluation's note starts; the slot follows.
pub(crate) const SLOT_NOTE: &str = "worker slot ";

/// The note that marks an evaluation as claimed by `slot` of this process.
pub(crate) fn claim_note(slot: u32) -> String {
    format!("{SLOT_NOTE}{slot} (tally pid={})", std::process::id())
}

/// The slot a running evaluation's note names, if any.
pub(crate) fn slot_of(evaluation: &Evaluation) -> Option<u32> {
    let rest = evaluation.note.as_deref()?.strip_prefix(SLOT_NOTE)?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}
