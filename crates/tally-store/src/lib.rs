//! `tally-store`: durable storage for the campaign half — [`SqliteStore`], the SQLite
//! implementation of the backend-neutral [`Store`] trait of `tally-contract` (versioned
//! migrations, WAL, one transaction per write), and, with the `postgres` feature, `PgStore`,
//! the same contract on a PostgreSQL database shared by a team (`docs/team.md`). The trait and its records are re-exported here
//! for callers that open this backend; the conformance suite every backend must pass is
//! `tally_contract::conformance`.
//!
//! It records and counts; it does not judge, schedule, or read `tally.toml` (the engine does),
//! and it does not pick the database location (`.tally/tally.db` is the caller's default).
//! Schema, migration policy and crash-safety: `docs/store.md`.

#[cfg(feature = "postgres")]
mod copy;
mod error;
#[cfg(feature = "postgres")]
mod pg;
mod shared;
mod slot_note;
mod sqlite;

#[cfg(feature = "postgres")]
pub use copy::{CopySummary, copy_sqlite_to_postgres};
#[cfg(feature = "postgres")]
pub use pg::{PgOptions, PgRunLock, PgStore, RunLockError, RunLockHeld, redact};
pub use sqlite::guard::{WRITER_FUNCTION, allow_writes};
pub use sqlite::{APPLICATION_ID, SqliteOptions, SqliteStore, Synchronous};
pub use tally_contract::{
    CampaignSnapshot, CampaignTotals, EvaluationCounts, EvaluationDuration, HeadUpdate, Idea,
    IdeaState, IdeaStore, ImplementerStore, NewCampaign, NewCandidate, NewEvaluation, NewIdea,
    NewMeasurement, NewRun, Run, RunCommit, RunEnd, RunSettlement, RunUsage, Store, StoreError,
    VerdictCounts, VerdictWrite, VerdictWriteOutcome, WorkerStore,
};
