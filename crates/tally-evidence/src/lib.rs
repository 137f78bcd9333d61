//! `tally-evidence`: inference correlation evidence, read, resolved and accounted.
//!
//! This crate reproduces stormlog 0.4.3's `correlation_accounting` (and the codec around it) in
//! Rust, with the same names: the event model ([`model`]), the JSONL reader for schema versions
//! 1–4 ([`read`]) and writer for v2/v4 ([`write`](mod@write)), resolution into a [`CorrelationGraph`]
//! ([`resolve`]), GPU-time accounting into [`RunAccounting`] ([`account`]), clock alignment
//! ([`align`]) and request-share validation ([`shares`]).
//!
//! Layering inside the crate: [`model`], [`fingerprint`], [`interval`], [`resolve`], [`account`],
//! [`align`] and [`shares`] are pure (no I/O; [`resolve`] and [`account`] only split their final
//! sorts over rayon's global pool); [`read`] and [`write`](mod@write) own files, decompression,
//! memory maps and the parallel parse. The behaviour is specified in
//! `docs/evidence.md`, with tally's deliberate decisions.

pub mod account;
pub mod align;
pub mod error;
pub mod fingerprint;
pub mod interval;
pub mod json;
pub mod model;
pub mod read;
pub mod resolve;
pub mod shares;
mod text_order;
pub mod write;

pub use account::{
    BusySpan, DeviceClock, DeviceTimes, GpuTime, IterationTiming, RunAccounting, account_gpu_time,
};
pub use align::{AlignedTimestamp, align_timestamp, alignment_offset_bounds, covering_alignments};
pub use error::{Error, Origin, Result};
pub use model::*;
pub use resolve::{
    CorrelationGraph, EntityTable, GraphCounts, ReferenceKind, ResolvedEvent, Resolver, SortedView,
    UnresolvedReference, resolve_inference_events,
};
pub use shares::{RequestShareEstimate, ShareBudget, validate_request_shares};
