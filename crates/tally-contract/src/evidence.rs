//! Where the two halves of tally meet: what an evidence artifact an evaluate command handed over
//! accounts for ([`Evidence`]), so a measurement records the GPU busy time behind it and not only
//! its wall time, and the [`EvidenceAccountant`] that reads it. A runner keeps the artifact and
//! asks the accountant; the binary supplies one built on `tally-evidence`, so no runner depends
//! on the evidence half.
//!
//! The GPU busy time of an artifact is the sum over its device clocks of `busy_ns` (the union of
//! each device's busy intervals, `docs/evidence.md#accounting`): GPU-time in the sense of
//! GPU-seconds, with overlapping kernels on one device counted once and two devices counted
//! twice.

use std::path::Path;

/// What an evidence artifact accounts for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evidence {
    /// GPU busy time: the sum over the artifact's device clocks of the union of their busy
    /// intervals, in nanoseconds.
    pub gpu_busy_ns: u64,
    /// Device clocks (device and clock domain) with measurable GPU activity.
    pub devices: usize,
}

/// Reads, resolves and accounts evidence artifacts (the JSONL of `docs/evidence.md`, any schema
/// version, plain or gzip). Object-safe and `Send + Sync`: runners hold an
/// `Arc<dyn EvidenceAccountant>`.
pub trait EvidenceAccountant: Send + Sync {
    /// Accounts the artifact kept at `artifact`: its GPU busy time. The error is one clause that
    /// names the file and, when it is a line, the line (`<path>: line N: <message>`, as
    /// `tally trace account` prints it); a runner makes it the attempt's
    /// `bad evidence file: <why>` failure.
    fn account(&self, artifact: &Path) -> Result<Evidence, String>;
}
