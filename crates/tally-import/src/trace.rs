//! What an importer's reader hands to the shared emitter: the facts of one trace file and its GPU
//! events, in a format-neutral shape.
//!
//! Both readers (Kineto JSON, Nsight Systems SQLite) reduce their input to a [`TraceFacts`], a
//! list of [`RangeSpan`](crate::linking::RangeSpan)s, a launch table and a stream of
//! [`GpuEvent`]s; everything after that (linking, device identity, records, summary) is shared in
//! [`crate::emit`]. Nothing here reads files.

use std::collections::BTreeMap;
use std::path::PathBuf;

use tally_evidence::{Nanos, Text};

/// The trace formats tally imports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TraceFormat {
    /// PyTorch profiler / Kineto Chrome trace JSON (plain or gzip).
    Kineto,
    /// Nsight Systems `nsys export --type sqlite` (plain or gzip).
    Nsys,
}

impl TraceFormat {
    /// The context `source` (`kineto`, `nsys`).
    pub fn source(self) -> &'static str {
        match self {
            Self::Kineto => "kineto",
            Self::Nsys => "nsys",
        }
    }
    /// The producer id that scopes tally's refs for this format.
    pub fn producer(self) -> &'static str {
        match self {
            Self::Kineto => "tally.trace.kineto",
            Self::Nsys => "tally.trace.nsys",
        }
    }
}

/// The kind of a GPU event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum GpuKind {
    /// A kernel.
    Kernel,
    /// A copy.
    Memcpy,
    /// A set.
    Memset,
}

impl GpuKind {
    /// The activity kind written (`gpu_kernel`, `gpu_memcpy`, `gpu_memset`).
    pub fn activity_kind(self) -> &'static str {
        match self {
            Self::Kernel => "gpu_kernel",
            Self::Memcpy => "gpu_memcpy",
            Self::Memset => "gpu_memset",
        }
    }
}

/// One kernel, copy or set as the trace recorded it, times already in integer ns.
#[derive(Clone, Debug)]
pub struct GpuEvent {
    /// Start (ns).
    pub start: Nanos,
    /// End (ns, ≥ start).
    pub end: Nanos,
    /// Kind.
    pub kind: GpuKind,
    /// Kernel or copy name.
    pub name: String,
    /// Device index (CUDA ordinal within the process).
    pub device: Option<u32>,
    /// Stream.
    pub stream: Option<u64>,
    /// CUPTI correlation id (0 in the trace means none).
    pub correlation: Option<u64>,
    /// CUDA graph id.
    pub graph_id: Option<u64>,
    /// The process, for formats that hold several (Nsight); `None` for Kineto.
    pub pid: Option<i64>,
}

pub use crate::launches::LaunchTable;

/// Everything known about one input after its first pass.
#[derive(Clone, Debug)]
pub struct TraceFacts {
    /// Format.
    pub format: TraceFormat,
    /// The input as given.
    pub path: PathBuf,
    /// `{source}:{file name}:{content hash}`: attachment id and prefix of every id.
    pub trace_key: Text,
    /// Host name recorded in the trace.
    pub host: Option<Text>,
    /// Distributed rank.
    pub rank: Option<u64>,
    /// World size.
    pub world_size: Option<u64>,
    /// `cupti`, `roctracer`.
    pub backend: Option<Text>,
    /// Its version.
    pub backend_version: Option<Text>,
    /// Serving engine (`vllm` when the trace says so).
    pub engine: Option<Text>,
    /// Its version.
    pub engine_version: Option<Text>,
    /// Device index → device name (`deviceProperties`, `TARGET_INFO_GPU`).
    pub device_names: BTreeMap<u32, Text>,
    /// (pid, device index) → UUID the trace itself names (Nsight).
    pub trace_uuids: BTreeMap<(i64, u32), Text>,
    /// The process that made most launch calls (ties: the smallest pid); names Kineto devices.
    pub main_pid: Option<i64>,
    /// The clock domain of every record of this input.
    pub clock_domain: Text,
    /// The earliest timestamp seen (ns), for a deterministic `created_at_ns`.
    pub earliest_ns: Option<Nanos>,
    /// Things the reader skipped or could not resolve, for the summary.
    pub notes: Vec<String>,
    /// Counts of rows/events deliberately not imported, by what they were.
    pub not_imported: BTreeMap<String, u64>,
}

/// Picks the process with most launch calls (ties: smallest pid).
pub fn main_pid(launches: &LaunchTable) -> Option<i64> {
    let mut counts: BTreeMap<i64, u64> = BTreeMap::new();
    for (pid, _, _) in launches.calls() {
        *counts.entry(pid).or_default() += 1;
    }
    let best = counts.values().copied().max()?;
    counts
        .into_iter()
        .find(|&(_, n)| n == best)
        .map(|(pid, _)| pid)
}

/// The clock domain of a trace recorded by process `pid` on `host`: one name per host process
/// clock, independent of where the file lies.
pub fn clock_domain(
    format: TraceFormat,
    host: Option<&str>,
    rank: Option<u64>,
    pid: Option<i64>,
) -> Text {
    let host = host.unwrap_or("unknown-host");
    let rank = rank.map(|r| format!(":rank{r}")).unwrap_or_default();
    let pid = pid.map(|p| format!(":pid{p}")).unwrap_or_default();
    format!("{}:{host}{rank}{pid}", format.source()).into()
}
