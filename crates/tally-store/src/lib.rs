//! `tally-store`: durable storage for the campaign half — the backend-neutral [`Store`] trait,
//! its SQLite implementation [`SqliteStore`] (versioned migrations, WAL, one transaction per
//! write), and, behind the `test-support` feature, the conformance suite `contract` every
//! backend must pass.
//!
//! It records and counts; it does not judge, schedule, or read `tally.toml` (the engine does),
//! and it does not pick the database location (`.tally/tally.db` is the caller's default).
//! Schema, migration policy and crash-safety: `docs/store.md`.

#[cfg(feature = "test-support")]
pub mod contract;
mod error;
mod records;
mod sqlite;
mod store;

pub use error::StoreError;
pub use records::{
    CampaignSnapshot, CampaignTotals, EvaluationCounts, EvaluationDuration, HeadUpdate,
    NewCampaign, NewCandidate, NewEvaluation, NewMeasurement, VerdictCounts, VerdictWrite,
    VerdictWriteOutcome,
};
pub use sqlite::{APPLICATION_ID, SqliteOptions, SqliteStore, Synchronous};
pub use store::Store;
