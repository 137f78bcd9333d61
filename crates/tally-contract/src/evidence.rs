//! Where the two halves of tally meet: what an evidence artifact an evaluate command handed over
//! accounts for ([`Evidence`]), so a measurement records the GPU busy time behind it and not only
//! its wall time.
//!
//! The GPU busy time of an artifact is the sum over its device clocks of `busy_ns` (the union of
//! each device's busy intervals, `docs/evidence.md#accounting`): GPU-time in the sense of
//! GPU-seconds, with overlapping kernels on one device counted once and two devices counted
//! twice.

/// What an evidence artifact accounts for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evidence {
    /// GPU busy time: the sum over the artifact's device clocks of the union of their busy
    /// intervals, in nanoseconds.
    pub gpu_busy_ns: u64,
    /// Device clocks (device and clock domain) with measurable GPU activity.
    pub devices: usize,
}
