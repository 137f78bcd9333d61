//! The engine's one error type: what stops a command (a store failure, an invalid config, a
//! refused request). Failures of a *sample* are not errors: they are recorded as
//! measurements with an `error` sentence.

use tally_contract::StoreError;
use tally_plugin::ConfigProblem;

/// Why an engine call could not do its work.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The store failed. Its message names the store (`store <path>: ...`) or what it refused
    /// (`no candidate#3 in campaign#1`) itself: a prefix would say "store" twice.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// `tally.toml` (or a provider built from it) has problems; all of them.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Config(Vec<ConfigProblem>),
    /// The campaign in `tally.toml` is not registered yet.
    #[error("campaign `{0}` is not registered: run `tally init` first")]
    NotRegistered(String),
    /// A request the engine refuses (unknown candidate, bad verdict, ...), with the fix.
    #[error("{0}")]
    Refused(String),
}

/// `Result` with [`EngineError`].
pub type Result<T, E = EngineError> = std::result::Result<T, E>;
