//! The one error type of `tally-import`.
//!
//! Every error names the input it is about (the path as given) and, where the input has positions,
//! where in it: a JSON line and column of the (decompressed) text, the index of the trace event, or
//! the byte offset at which a compressed stream broke. Messages are lowercase and end with the fix
//! when there is one. Nothing here formats for a terminal; the binary prints `error: {self}`.

use std::io;
use std::path::{Path, PathBuf};

/// Everything that can go wrong while importing, linking or exporting traces.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The input could not be opened or read (not a format problem).
    #[error("{}: {source}", .path.display())]
    Io {
        /// The input.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// The file is cut short or its bytes are damaged: gzip, UTF-8 or JSON syntax.
    #[error("{}: truncated or corrupt trace file at {position}: {message}", .path.display())]
    Corrupt {
        /// The input.
        path: PathBuf,
        /// Where: `line L column C` of the decompressed text, or `byte N` of the file.
        position: String,
        /// What the decoder said.
        message: String,
    },
    /// The file is well-formed but is not the trace format that was asked for.
    #[error("{}: {message}", .path.display())]
    Format {
        /// The input.
        path: PathBuf,
        /// What is missing or wrong, and the fix.
        message: String,
    },
    /// The input is not a regular file (a device, FIFO, socket or directory): an import reads
    /// each trace twice (once for its content hash, once to import it) and refuses such input
    /// before reading a byte, so that an endless one (`/dev/zero`, a pipe) cannot hang it.
    #[error(
        "{}: is {what}, not a trace file; tally trace import reads regular files only (a Kineto \
         JSON trace or an Nsight Systems SQLite export, plain or gzip): save the trace to a file \
         first and name that file",
        .path.display()
    )]
    NotAFile {
        /// The input.
        path: PathBuf,
        /// What it is instead, with its article (`a character device`).
        what: &'static str,
    },
    /// One trace event (or table row) has a value tally cannot use.
    #[error("{}: {location}: {message}", .path.display())]
    Malformed {
        /// The input.
        path: PathBuf,
        /// `traceEvents[i] at line L column C`, or `TABLE row R`.
        location: String,
        /// What is wrong with it.
        message: String,
    },
    /// An option given by the user cannot be applied (a `--device-uuid` or `--iterations` value).
    #[error("{message}")]
    Usage {
        /// What is wrong and the flag that fixes it.
        message: String,
    },
    /// The sink refused a record (writing the artifact failed) or an evidence rule was broken.
    #[error("{0}")]
    Evidence(#[from] tally_evidence::Error),
    /// Writing an output failed.
    #[error("{}: {source}", .name)]
    Write {
        /// The output's display name.
        name: String,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn io(path: &Path, source: io::Error) -> Self {
        Self::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn format(path: &Path, message: impl Into<String>) -> Self {
        Self::Format {
            path: path.to_path_buf(),
            message: message.into(),
        }
    }

    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Self::Usage {
            message: message.into(),
        }
    }
}
