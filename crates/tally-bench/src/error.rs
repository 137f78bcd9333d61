//! The library's errors: a bad specification string (usage), a failed preflight, and I/O.

/// A command-line value that does not parse (a distribution, an arrival file, a fault).
#[derive(Debug, thiserror::Error)]
#[error("{spec:?}: {message}")]
pub struct SpecError {
    /// The text that was given.
    pub spec: String,
    /// What is wrong with it.
    pub message: String,
}

impl SpecError {
    /// A new error about `spec`.
    pub fn new(spec: &str, message: impl Into<String>) -> Self {
        Self {
            spec: spec.to_owned(),
            message: message.into(),
        }
    }
}

/// Why a benchmark run could not produce metrics.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A value of the configuration is invalid (exit 2).
    #[error(transparent)]
    Usage(#[from] SpecError),
    /// The endpoint failed its preflight request (exit 3).
    #[error("preflight request to {url} failed: {message}")]
    Preflight {
        /// The endpoint, credentials stripped.
        url: String,
        /// What went wrong, or what the server said (API key scrubbed).
        message: String,
    },
    /// Reading or writing a file.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// A stop was requested (a signal, named here) before the first measured request.
    #[error("interrupted ({0}) before the first measured request: nothing was measured")]
    Interrupted(String),
    /// The async runtime could not start.
    #[error("cannot start the runtime: {0}")]
    Runtime(std::io::Error),
}
