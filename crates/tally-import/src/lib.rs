//! `tally-import`: profiler traces in, inference evidence out (and back out to Perfetto).
//!
//! Importers for PyTorch profiler (Kineto) Chrome traces ([`import_kineto`]) and Nsight Systems
//! SQLite exports ([`import_nsys`]) stream a trace into `infer.*` records: one artifact identity
//! record, the trace's iterations (`ProfilerStep#N`, engine ranges, `--iterations` matches) and
//! its GPU activities linked to the iteration whose range contains their launch call. Timestamps
//! are converted from decimal text to integer nanoseconds exactly ([`decimal`]). Records go to a
//! sink callback, so a multi-gigabyte trace is imported in memory bounded by its launch calls.
//! [`link_trace_activities`] joins engine and trace records by correlation ids (never by
//! timestamps) and [`export_perfetto`] writes records as a Chrome trace-event file.
//!
//! This crate reads trace files and writes nothing but what its callers hand it a writer for; it
//! does not resolve or account artifacts (that is `tally-evidence`) and never prints.

pub mod decimal;
pub mod device_time;
mod driver;
pub mod emit;
pub mod error;
pub mod kineto;
pub mod launches;
pub mod link;
pub mod linking;
pub mod nsys;
pub mod options;
pub mod perfetto;
mod source;
pub mod summary;
pub mod trace;

pub use driver::{ARTIFACT_KIND, check_inputs, import_kineto, import_nsys, import_to_vec};
pub use error::{Error, Result};
pub use link::{LinkOutcome, link_trace_activities};
pub use options::{Detail, DeviceUuidOption, ImportOptions, Phase, Progress};
pub use perfetto::{PerfettoSummary, export_perfetto};
pub use summary::{DeviceSummary, ImportSummary, InputSummary, UuidSource};
pub use trace::TraceFormat;
