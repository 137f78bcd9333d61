//! The one error type of `tally-evidence`, which `tally-artifact`'s reader returns too.
//!
//! Every error says where it comes from when there is a place to say: the input's name (a path,
//! or `-` for standard input) and the 1-based physical line. Its `Display` is the whole message
//! the binary prints after `error: `, in the shape `evidence-cli.md` fixes:
//! `<FILE>: line N: <message>` for a bad line, `<FILE>: <message>` for a refusal that the
//! reference reports without a position (conflicting identities, several run ids), and the bare
//! message for API-level refusals (alignment, shares). Messages are the reference's wording.

use std::fmt;
use std::io;

use crate::model::Text;

/// Where a record was read: the input's display name and its 1-based physical line.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Origin {
    /// The input's display name (path as given, or `-`); `None` for records built in memory.
    pub source: Option<Text>,
    /// The 1-based physical line; `None` when not read from a file.
    pub line: Option<u64>,
}

impl Origin {
    /// A record read from `source` at `line`.
    pub fn at(source: Text, line: u64) -> Self {
        Self {
            source: Some(source),
            line: Some(line),
        }
    }
}

/// Everything that can go wrong in this crate and in `tally-artifact`'s reader.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A line or record is invalid; `message` is the reference's wording without any prefix.
    #[error("{}", located(.origin, true, .message))]
    Record {
        /// Where.
        origin: Origin,
        /// What is wrong.
        message: String,
    },
    /// Reading an input failed (made by `tally-artifact`'s reader; this crate does no I/O).
    #[error("{}: {source}", .name)]
    Io {
        /// The input's display name.
        name: Text,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// Two records share `(session_id, producer_id, event_id)` but differ.
    #[error("{}", located(.origin, false, "conflicting event identity"))]
    ConflictingEventIdentity {
        /// The record that conflicted with an earlier one.
        origin: Origin,
    },
    /// Two records name the same entity but describe it differently.
    #[error("{}", located(.origin, false, "conflicting entity identity"))]
    ConflictingEntityIdentity {
        /// The record that conflicted with an earlier one.
        origin: Origin,
    },
    /// Correlation records of more than one run.
    #[error("{}", located(.origin, false, "correlation artifact contains multiple run_id values"))]
    MultipleRunIds {
        /// The first record whose run differs.
        origin: Origin,
    },
    /// An API-level refusal (alignment, share validation); the reference's wording.
    #[error("{message}")]
    Refused {
        /// Why.
        message: String,
    },
    /// A value would not fit tally's integer nanoseconds.
    #[error("{}", located(.origin, true, .message))]
    OutOfRange {
        /// Where, when it came from a file.
        origin: Origin,
        /// What overflowed, and the fix.
        message: String,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A refusal with the given message.
    pub fn refused(message: impl Into<String>) -> Self {
        Self::Refused {
            message: message.into(),
        }
    }

    /// The message without file or line (what the conformance cases call the error).
    pub fn message(&self) -> String {
        match self {
            Self::Record { message, .. } | Self::OutOfRange { message, .. } => message.clone(),
            Self::Io { source, .. } => source.to_string(),
            Self::ConflictingEventIdentity { .. } => "conflicting event identity".into(),
            Self::ConflictingEntityIdentity { .. } => "conflicting entity identity".into(),
            Self::MultipleRunIds { .. } => {
                "correlation artifact contains multiple run_id values".into()
            }
            Self::Refused { message } => message.clone(),
        }
    }

    /// Whether this is an error of resolution (two records that conflict, or of two runs), as
    /// opposed to one of reading: the reference reads every file of an artifact before it
    /// resolves any record, so a line that cannot be read in any file comes first.
    pub fn is_resolution(&self) -> bool {
        matches!(
            self,
            Self::ConflictingEventIdentity { .. }
                | Self::ConflictingEntityIdentity { .. }
                | Self::MultipleRunIds { .. }
        )
    }

    /// The origin, when the error is about a record.
    pub fn origin(&self) -> Option<&Origin> {
        match self {
            Self::Record { origin, .. }
            | Self::OutOfRange { origin, .. }
            | Self::ConflictingEventIdentity { origin }
            | Self::ConflictingEntityIdentity { origin }
            | Self::MultipleRunIds { origin } => Some(origin),
            Self::Io { .. } | Self::Refused { .. } => None,
        }
    }
}

struct Located<'a> {
    origin: &'a Origin,
    with_line: bool,
    message: &'a str,
}

impl fmt::Display for Located<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(source) = &self.origin.source {
            write!(f, "{source}: ")?;
        }
        if let (true, Some(line)) = (self.with_line, self.origin.line) {
            write!(f, "line {line}: ")?;
        }
        f.write_str(self.message)
    }
}

fn located<'a>(origin: &'a Origin, with_line: bool, message: &'a str) -> Located<'a> {
    Located {
        origin,
        with_line,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_matches_the_cli_contract() {
        let e = Error::Record {
            origin: Origin::at("a.jsonl".into(), 4),
            message: "unknown context_id: c1".into(),
        };
        assert_eq!(e.to_string(), "a.jsonl: line 4: unknown context_id: c1");
        let e = Error::ConflictingEventIdentity {
            origin: Origin::at("a.jsonl".into(), 2),
        };
        assert_eq!(e.to_string(), "a.jsonl: conflicting event identity");
        assert_eq!(Error::refused("x").to_string(), "x");
    }
}
