//! The one error type of `tally-model`: parsing user-typed identifiers and words.
//!
//! Nothing here does I/O, so there is nothing else that can fail.

/// Everything that can go wrong while parsing model values from text.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ModelError {
    /// A candidate id that is not `candidate#N`, `#N` or `N`.
    #[error("bad candidate id {0:?}: expected candidate#N, #N or N (N a whole number)")]
    BadCandidateId(String),
    /// A word outside a closed vocabulary (verdict, side, state, ...).
    #[error("bad {what} {value:?}: expected one of {expected}")]
    UnknownWord {
        /// What was being parsed (`verdict`, `side`, ...).
        what: &'static str,
        /// The text given.
        value: String,
        /// The accepted spellings, comma-separated.
        expected: String,
    },
}
