//! `tally-contract`: the contracts the campaign engine works through, below every adapter that
//! implements them — the [`Store`] trait with its records, its error and (behind the
//! `test-support` feature) the conformance suite every backend must pass.
//!
//! Why a crate of its own rather than more of `tally-model`: the model is plain data that the
//! plugin contract hands to providers, while these are behaviour — traits a backend or an
//! executor implements — and an engine that depends on them alone compiles without SQLite.
//!
//! Architecture invariant: traits and the plain values they exchange; it does no I/O, spawns
//! nothing, reads no clock, and names no database or process library (backend errors are
//! boxed). Every trait is object-safe, so the engine takes `&dyn` implementations.

#[cfg(feature = "test-support")]
pub mod conformance;
mod error;
mod records;
mod store;

pub use error::{BackendError, StoreError};
pub use records::{
    CampaignSnapshot, CampaignTotals, EvaluationCounts, EvaluationDuration, HeadUpdate,
    NewCampaign, NewCandidate, NewEvaluation, NewMeasurement, VerdictCounts, VerdictWrite,
    VerdictWriteOutcome,
};
pub use store::Store;
