//! `tally-model`: the campaign half's domain types, shared by the store, the engine, the
//! verdict rules and the reports.
//!
//! Pure data: no I/O, no database, no process (the one exception is [`UnixMillis::now`], which
//! reads the wall clock). Identifiers are newtypes; wire spellings (`keep`, `higher`, `bar`, ...)
//! live next to the types so every crate spells them the same way, and every type derives serde
//! with those spellings.
//!
//! Time conventions, used everywhere in the campaign half:
//! - wall-clock instants are [`UnixMillis`]: integer milliseconds since the Unix epoch (UTC);
//! - durations of measured work are integer **nanoseconds** (`duration_ns`, `gpu_busy_ns`), so
//!   sums over a campaign are exact; [`Measurement::seconds`] converts at the edge, and
//!   [`nanos_from_seconds`] converts a report file's `seconds` on the way in.

mod campaign;
mod error;
mod ids;
mod judging;
mod measurement;
mod wire_word;

pub use campaign::{
    Campaign, CampaignState, Candidate, Evaluation, EvaluationKind, EvaluationState,
};
pub use error::ModelError;
pub use ids::{
    CampaignId, CandidateId, ConfigTextId, EvaluationId, MeasurementId, UnixMillis,
    nanos_from_seconds,
};
pub use judging::{Actor, Direction, Role, Verdict};
pub use measurement::{EvidenceRef, Held, HeldFrom, Measurement, Side, UnitValues};
