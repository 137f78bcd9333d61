//! `tally-store`: durable storage for the campaign half — [`SqliteStore`], the SQLite
//! implementation of the backend-neutral [`Store`] trait of `tally-contract` (versioned
//! migrations, WAL, one transaction per write). The trait and its records are re-exported here
//! for callers that open this backend; the conformance suite every backend must pass is
//! `tally_contract::conformance`.
//!
//! It records and counts; it does not judge, schedule, or read `tally.toml` (the engine does),
//! and it does not pick the database location (`.tally/tally.db` is the caller's default).
//! Schema, migration policy and crash-safety: `docs/store.md`.

mod error;
mod sqlite;

pub use sqlite::{APPLICATION_ID, SqliteOptions, SqliteStore, Synchronous};
pub use tally_contract::{
    CampaignSnapshot, CampaignTotals, EvaluationCounts, EvaluationDuration, HeadUpdate, Idea,
    IdeaState, IdeaStore, NewCampaign, NewCandidate, NewEvaluation, NewIdea, NewMeasurement,
    NewRun, Run, RunCommit, RunEnd, RunSettlement, Store, StoreError, VerdictCounts, VerdictWrite,
    VerdictWriteOutcome,
};
