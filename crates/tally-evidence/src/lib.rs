//! `tally-evidence`: inference correlation evidence in memory: modelled, compared, resolved and
//! accounted.
//!
//! This crate reproduces stormlog 0.4.3's `correlation_accounting` in Rust, with the same names:
//! the event model ([`model`]), record equality and content fingerprints ([`fingerprint`]),
//! Python's JSON dialect and the JSON value of metadata ([`json`]), resolution into a
//! [`CorrelationGraph`] ([`resolve`]), GPU-time accounting into [`RunAccounting`] ([`account`],
//! [`interval`]), clock alignment ([`align`]) and request-share validation ([`shares`]). Reading
//! and writing artifacts (the JSONL codec) is `tally-artifact`'s, which builds on this crate.
//!
//! What it does not do: no I/O (no files, standard streams, memory maps or decompression), no
//! clock reads, no printing, and no threads of its own: [`resolve`] and [`account`] split their
//! reference checks, sorts and sweeps over rayon's global pool (which rayon starts on first use).
//! Inside the crate dependencies point one way: [`model`] uses no other module; [`json`] and
//! [`fingerprint`] build on it, [`resolve`] on those, and [`account`], [`align`] and [`shares`]
//! on [`resolve`]. The behaviour is specified in `docs/evidence.md`, with tally's deliberate
//! decisions.

pub mod account;
pub mod align;
pub mod error;
pub mod fingerprint;
pub mod interval;
pub mod json;
pub mod model;
pub mod resolve;
pub mod shares;
mod text_order;

pub use account::{
    BusySpan, DeviceClock, DeviceTimes, GpuTime, IterationTiming, KernelTime, RunAccounting,
    account_gpu_time, activity_name, kernel_times, measured_summed_ns,
};
pub use align::{AlignedTimestamp, align_timestamp, alignment_offset_bounds, covering_alignments};
pub use error::{Error, Origin, Result};
pub use model::*;
pub use resolve::{
    CorrelationGraph, EntityTable, GraphCounts, ReferenceKind, ResolvedEvent, Resolver, SortedView,
    UnresolvedReference, resolve_inference_events,
};
pub use shares::{RequestShareEstimate, ShareBudget, validate_request_shares};
