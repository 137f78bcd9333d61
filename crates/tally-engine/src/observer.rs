//! What the engine tells whoever watches it (the binary's progress bar, a test): samples starting
//! and ending, verdicts, holds. The engine never prints; an [`Observer`] decides what to show.

use std::time::Duration;

use tally_model::{CandidateId, Verdict};

/// A sample about to run.
#[derive(Clone, Debug)]
pub struct SampleStart {
    /// The candidate measured.
    pub candidate: CandidateId,
    /// `candidate` or `bar`.
    pub side: &'static str,
    /// Index of the sample within its side (0-based).
    pub sample: u32,
    /// Samples this evaluation will take in all (both sides).
    pub of: u32,
    /// Position of this sample in the evaluation (0-based, both sides).
    pub position: u32,
    /// The per-sample timeout.
    pub timeout: Duration,
}

/// Receives engine events. Every method has an empty default.
pub trait Observer {
    /// A sample is starting.
    fn sample_started(&self, start: &SampleStart) {
        let _ = start;
    }
    /// A sample ended; `error` is `None` on success.
    fn sample_finished(&self, start: &SampleStart, seconds: f64, error: Option<&str>) {
        let _ = (start, seconds, error);
    }
    /// A candidate was judged.
    fn judged(&self, candidate: CandidateId, verdict: Verdict, reason: &str) {
        let _ = (candidate, verdict, reason);
    }
    /// Something worth a line (a hold, a re-measure of the head, a recovered evaluation).
    fn note(&self, message: &str) {
        let _ = message;
    }
}

/// An observer that ignores everything.
#[derive(Debug, Default, Clone, Copy)]
pub struct Silent;

impl Observer for Silent {}
