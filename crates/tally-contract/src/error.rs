//! The one error type of a [`crate::Store`], whatever the backend.
//!
//! Messages are lowercase, name the store file (or `:memory:`) and the thing involved, and end
//! with the fix when there is one. Backend failures keep their source error, boxed, so this
//! crate names no database library.

use tally_model::{CampaignId, CandidateId, EvaluationId, EvaluationState, MeasurementId};

/// What a database library said, kept as the source of a [`StoreError`].
pub type BackendError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Everything a store can fail with.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database file could not be opened or set up.
    #[error("cannot open the store {path}: {source}")]
    Open {
        /// The store's location.
        path: String,
        /// What the database library said.
        #[source]
        source: BackendError,
    },
    /// The file is a SQLite database of some other program.
    #[error(
        "{path} is not a tally store (its SQLite application id is {found:#x}); point \
         --database at another file"
    )]
    NotATallyStore {
        /// The store's location.
        path: String,
        /// The application id found in the file header.
        found: i64,
    },
    /// The file was written by a newer tally.
    #[error(
        "the store {path} has schema version {found}, newer than this tally knows \
         ({known}); upgrade tally to open it"
    )]
    SchemaTooNew {
        /// The store's location.
        path: String,
        /// The schema version in the file.
        found: i64,
        /// The newest version this build knows.
        known: usize,
    },
    /// Applying a migration failed (nothing was changed: migrations run in one transaction).
    #[error("cannot migrate the store {path}: {source}")]
    Migration {
        /// The store's location.
        path: String,
        /// What the migration library said.
        #[source]
        source: BackendError,
    },
    /// Another process kept the database locked past the busy timeout.
    #[error(
        "the store {path} stayed locked by another tally process for {timeout_ms} ms; try \
         again when it is done"
    )]
    Busy {
        /// The store's location.
        path: String,
        /// The busy timeout that ran out.
        timeout_ms: u128,
    },
    /// Any other database failure, whatever the backend (SQLite or PostgreSQL).
    #[error("store {path}: {source}")]
    Database {
        /// The store's location (empty until the failing call returns).
        path: String,
        /// What the database library said.
        #[source]
        source: BackendError,
    },
    /// `create_campaign` with a name already registered.
    #[error(
        "a campaign named {name:?} already exists in the store; pick another `name` in \
         tally.toml"
    )]
    CampaignExists {
        /// The name.
        name: String,
    },
    /// A campaign id the store does not have.
    #[error("no {0} in the store")]
    NoSuchCampaign(CampaignId),
    /// A candidate its campaign does not have.
    #[error("no {candidate} in {campaign}")]
    NoSuchCandidate {
        /// The campaign.
        campaign: CampaignId,
        /// The candidate asked for.
        candidate: CandidateId,
    },
    /// A measurement id the store does not have.
    #[error("no {0} in the store")]
    NoSuchMeasurement(MeasurementId),
    /// An evaluation id the store does not have.
    #[error("no {0} in the store")]
    NoSuchEvaluation(EvaluationId),
    /// An evaluation state change that its current state does not allow.
    #[error("{evaluation} is {found}; {wanted}")]
    EvaluationState {
        /// The evaluation.
        evaluation: EvaluationId,
        /// Its current state.
        found: EvaluationState,
        /// What the call needed, and the fix.
        wanted: String,
    },
    /// A value the store refuses (non-finite number, empty name, broken link, ...).
    #[error("invalid {what}: {why}")]
    InvalidValue {
        /// The field, e.g. `metrics["tok_s"]`.
        what: String,
        /// Why, ending with the fix when there is one.
        why: String,
    },
}

impl StoreError {
    /// Shorthand for [`StoreError::InvalidValue`].
    pub fn invalid(what: impl Into<String>, why: impl Into<String>) -> Self {
        Self::InvalidValue {
            what: what.into(),
            why: why.into(),
        }
    }
}
