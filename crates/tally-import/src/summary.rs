//! The import report: what the CLI prints after an import (counts, links, per-device time).
//!
//! Plain data, sorted where order carries no meaning, so two imports of the same inputs report
//! identically. Formatting for a terminal belongs to the binary.

use std::collections::BTreeMap;
use std::path::PathBuf;

use tally_evidence::Nanos;

use crate::trace::TraceFormat;

/// Where a device's identity came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum UuidSource {
    /// The trace names the GPU's UUID (Nsight `TARGET_INFO_GPU`).
    Trace,
    /// `--device-uuid`.
    Option,
    /// Derived from the trace's host, process, device index and properties (`derived:` prefix).
    Derived,
    /// No device index at all: the activities are unmeasured.
    Unknown,
}

impl UuidSource {
    /// The spelling printed (`trace`, `option`, `derived`, `unknown`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Trace => "trace",
            Self::Option => "option",
            Self::Derived => "derived",
            Self::Unknown => "unknown",
        }
    }
}

/// One device of one input: its identity and the exact time of its GPU events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceSummary {
    /// The process for multi-process formats (Nsight).
    pub pid: Option<i64>,
    /// The device index in the trace.
    pub device_index: Option<u32>,
    /// Its name, when the trace gives one.
    pub name: Option<String>,
    /// The identity written to the records' contexts.
    pub device_uuid: Option<String>,
    /// Where that identity came from.
    pub uuid_source: UuidSource,
    /// Union of all GPU event intervals (kernels, copies, sets).
    pub busy_ns: Nanos,
    /// Sum of their lengths.
    pub summed_ns: Nanos,
    /// Number of GPU events.
    pub count: u64,
    /// Union of the kernels alone.
    pub kernel_busy_ns: Nanos,
    /// Number of kernels.
    pub kernel_count: u64,
}

/// The report of one input file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputSummary {
    /// The input as given.
    pub path: PathBuf,
    /// Its format.
    pub format: TraceFormat,
    /// Attachment id / id prefix.
    pub trace_key: String,
    /// Clock domain of its records.
    pub clock_domain: String,
    /// Host named by the trace.
    pub host: Option<String>,
    /// Rank named by the trace.
    pub rank: Option<u64>,
    /// GPU events read.
    pub gpu_events: u64,
    /// GPU activity records emitted (equal to `gpu_events` at kernel detail).
    pub activity_records: u64,
    /// Runtime activity records emitted (`emit_runtime`).
    pub runtime_records: u64,
    /// Launch calls read.
    pub launch_calls: u64,
    /// Iterations found (emitted or engine-named).
    pub iterations: u64,
    /// GPU events linked to an iteration.
    pub linked_gpu_events: u64,
    /// GPU events left unresolved, by reason.
    pub unresolved_gpu_events: BTreeMap<String, u64>,
    /// GPU events of CUDA graphs (graph id, or launched by a graph launch call).
    pub graph_gpu_events: u64,
    /// Per device, sorted by (pid, device index).
    pub devices: Vec<DeviceSummary>,
    /// What was counted but not imported, by what it was.
    pub not_imported: BTreeMap<String, u64>,
    /// Free-text notes (skipped entries, ambiguous identities).
    pub notes: Vec<String>,
}

/// The report of one import.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportSummary {
    /// The run id written.
    pub run_id: String,
    /// The session id written.
    pub session_id: String,
    /// Record granularity used.
    pub detail: crate::options::Detail,
    /// Records passed to the sink.
    pub records: u64,
    /// One entry per input, in the order given.
    pub inputs: Vec<InputSummary>,
}
