//! `tally-contract`: the contracts the campaign engine works through, below every adapter that
//! implements them — the [`Store`] trait with its records, its error and (behind the
//! `test-support` feature) the conformance suite every backend must pass; the [`SampleRunner`]
//! trait with the request and the [`Attempt`] it answers, how an attempt ended ([`Outcome`],
//! [`Failure`]) and the retry rule; the [`CancelToken`] that stops a sample in flight; and the
//! [`EvidenceAccountant`] that says what an evidence artifact accounts for ([`Evidence`]); the
//! [`IdeaStore`] of implementer ideas; and the `[checks]` gate ([`CheckRequest`], [`CheckStore`]).
//!
//! Why a crate of its own rather than more of `tally-model`: the model is plain data that the
//! plugin contract hands to providers, while these are behaviour — traits a backend or an
//! executor implements — and an engine that depends on them alone compiles without SQLite or a
//! process library.
//!
//! Architecture invariant: traits and the plain values they exchange; it does no I/O, spawns
//! nothing, reads no clock, and names no database or process library (backend errors are
//! boxed, signals are numbers). Every trait is object-safe, so the engine takes `&dyn`
//! implementations.

mod cancel;
mod checks;
#[cfg(feature = "test-support")]
pub mod conformance;
mod error;
mod evidence;
mod ideas;
mod outcome;
mod records;
mod sample;
mod store;
mod workers;

pub use cancel::{CancelToken, Listening, Wake};
pub use checks::{CheckCommand, CheckOutcome, CheckRecord, CheckRequest, CheckStore};
pub use error::{BackendError, StoreError};
pub use evidence::{Evidence, EvidenceAccountant};
pub use ideas::{
    Idea, IdeaState, IdeaStore, ImplementerStore, NewIdea, NewRun, Run, RunCommit, RunEnd,
    RunSettlement, RunUsage,
};
pub use outcome::{Failure, Outcome, STDERR_LINE_CHARS, error_is_retried, signal_name};
pub use records::{
    CampaignSnapshot, CampaignTotals, EvaluationCounts, EvaluationDuration, HeadUpdate,
    NewCampaign, NewCandidate, NewEvaluation, NewMeasurement, VerdictCounts, VerdictWrite,
    VerdictWriteOutcome,
};
pub use sample::{
    Attempt, CommitId, EvaluateCommand, EvidenceFile, LogFiles, SampleRequest, SampleRunner,
};
pub use store::Store;
pub use workers::WorkerStore;
