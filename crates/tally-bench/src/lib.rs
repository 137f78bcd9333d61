//! `tally bench`: a load generator for OpenAI-compatible inference endpoints whose every figure
//! is defined (`docs/bench.md`), and a fake server whose timing is known exactly, so tests can
//! compare each figure with an analytic value.
//!
//! Pure parts: [`rng`] and [`dist`] (seeded draws), [`arrivals`] (schedules), [`workload`]
//! (prompts and lengths), [`sse`] and [`openai`] (the wire format), [`record`], [`stats`] and
//! [`summary`] (figures). I/O parts: [`timer`] (precise deadlines), [`client`] (one request,
//! stamped per frame), [`runner`] (closed and open loops, phases), [`output`] (JSONL records,
//! METRIC lines), [`convert`] (evidence records) and [`fake`] (the test server).

pub mod alarm;
pub mod arrivals;
pub mod client;
pub mod convert;
pub mod dist;
mod error;
pub mod fake;
pub mod openai;
pub mod output;
pub mod record;
pub mod rng;
pub mod runner;
pub mod rx_stamp;
pub mod sse;
pub mod stats;
pub mod steal;
pub mod summary;
pub mod timer;
pub mod workload;

pub use error::{BenchError, SpecError};
