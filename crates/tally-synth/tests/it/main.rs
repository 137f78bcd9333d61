//! Integration tests of `tally-synth`: determinism, scale, delivery faults, the neutral model's
//! invariants, and the validity of every generated record (checked with rules we control, since
//! the reader lives elsewhere).

mod delivery;
mod determinism;
mod happenings;
mod kineto;
mod validity;

use tally_evidence::{CorrelationEvent, InferenceRecord};

/// The correlation events of a record list (legacy records skipped).
pub fn events(records: &[InferenceRecord]) -> Vec<&CorrelationEvent> {
    records
        .iter()
        .filter_map(|r| match r {
            InferenceRecord::Event(e) => Some(e),
            InferenceRecord::Legacy(_) => None,
        })
        .collect()
}
