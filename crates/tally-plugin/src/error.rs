//! The error a provider call can end with. In-tree providers rarely fail; external ones can exit
//! non-zero, time out or answer nonsense, and the host must say which provider did what.

/// A failed provider call.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{provider}: {message}")]
pub struct ProviderError {
    /// The provider, as the user names it (`gpu_hours`, `exec ./my-rule.py`).
    pub provider: String,
    /// What went wrong, one sentence.
    pub message: String,
}

impl ProviderError {
    /// A failure of `provider`.
    pub fn new(provider: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            provider: provider.into(),
            message: message.into(),
        }
    }
}
