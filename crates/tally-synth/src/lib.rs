//! `tally-synth`: seeded, realistic inference evidence for tests and benchmarks.
//!
//! A [`Scenario`] describes a continuous-batching LLM serving run on several hosts (see
//! [`topology`] for the deployment, [`simulate`] for the scheduler). Generation has two stages:
//! the simulation produces format-neutral [`Happening`]s (engine steps with their member
//! requests and GPU work, attempts, clock probes); a lowering turns them into stormlog
//! correlation records ([`InferenceRecord`]). A second lowering, [`kineto`], writes the same
//! happenings as PyTorch profiler (Kineto) Chrome traces, one per GPU worker process
//! ([`write_kineto`]). [`Delivery`] then adds the faults of real collection —
//! redelivered records, shuffled order, legacy v1 records — and [`write_artifact`] writes the
//! result through `tally_artifact`'s writer as a v2 or v4 artifact.
//!
//! Everything streams: records are produced step by step and written as they come, so memory is
//! bounded by the requests in flight (plus the shuffle window), never by the run's length. The
//! same scenario and delivery always give byte-identical output. Generated records are valid
//! for stormlog 0.4.3 and avoid every Python-specific corner of `docs/evidence.md#python-isms` (metadata holds
//! only strings and integers, all integers fit in `i64`).
//!
//! With the defaults a run produces about [`RECORDS_PER_REQUEST`] records per request, like the
//! reference's own synthetic traces (`docs/evidence.md#reference-performance`: about 1 M lines for 52 631 requests).

mod contexts;
pub mod delivery;
mod extras;
mod gpu_work;
pub mod happening;
pub mod kineto;
mod lower;
mod shapes;
pub mod simulate;
pub mod topology;

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use tally_artifact::write::{ArtifactForm, ArtifactWriter};
use tally_evidence::InferenceRecord;

pub use delivery::{DEFAULT_SHUFFLE_WINDOW, Delivered};
pub use happening::Happening;
pub use kineto::{
    KinetoOptions, KinetoSummary, KinetoTrace, KinetoTraceSummary, kineto_traces, write_kineto,
    write_kineto_to,
};
pub use simulate::Simulation;
pub use topology::Topology;

use extras::Extras;
use lower::Lowering;
use simulate::SimulationParams;

/// Average records per request with the default parameters (measured; used to size a run for
/// a target record count).
pub const RECORDS_PER_REQUEST: f64 = 19.4;

/// Everything that can go wrong while generating.
#[derive(Debug, thiserror::Error)]
pub enum SynthError {
    /// A parameter is out of range.
    #[error("invalid synthetic scenario: {0}")]
    InvalidParameter(String),
    /// Writing the artifact failed.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The output's name.
        path: String,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
}

/// A simulated serving run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scenario {
    /// Seed of every random choice.
    pub seed: u64,
    /// Logical requests to serve (≥ 1).
    pub requests: u64,
    /// Serving hosts (≥ 1); host `i` follows pattern `i % 4` (see [`topology`]).
    pub hosts: u32,
    /// Requests the client keeps in flight per host (≥ 1).
    pub concurrency: u32,
    /// Per-mille of requests whose first attempt fails and is retried.
    pub retry_per_mille: u32,
    /// Dangling references to plant (each is one entry of the reference's `unresolved`).
    pub unresolved: u64,
}

impl Scenario {
    /// A scenario of `requests` requests on four hosts, 24 in flight per host, 6% retried,
    /// nothing planted.
    pub fn new(seed: u64, requests: u64) -> Self {
        Self {
            seed,
            requests,
            hosts: 4,
            concurrency: 24,
            retry_per_mille: 60,
            unresolved: 0,
        }
    }

    /// A default scenario sized to produce about `records` records.
    pub fn with_target_records(seed: u64, records: u64) -> Self {
        let requests = (records as f64 / RECORDS_PER_REQUEST).round().max(1.0) as u64;
        Self::new(seed, requests)
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), SynthError> {
        let invalid = |m: &str| Err(SynthError::InvalidParameter(m.to_owned()));
        if self.requests == 0 {
            return invalid("requests must be at least 1");
        }
        if self.hosts == 0 {
            return invalid("hosts must be at least 1");
        }
        if self.concurrency == 0 {
            return invalid("concurrency must be at least 1");
        }
        if self.retry_per_mille > 1000 {
            return invalid("retry_per_mille must be at most 1000");
        }
        Ok(())
    }

    /// The deployment (hosts, GPUs, clocks), drawn from the seed.
    pub fn topology(&self) -> Topology {
        Topology::draw(self.seed, self.hosts, &mut stream_rng(self.seed, 0))
    }

    /// The format-neutral happenings of the run, lazily.
    pub fn happenings(&self) -> Simulation {
        let seed = self.seed;
        Simulation::new(
            Arc::new(self.topology()),
            SimulationParams {
                requests: self.requests,
                concurrency: self.concurrency,
                retry_per_mille: self.retry_per_mille,
            },
            move |host| stream_rng(seed, 1 + u64::from(host)),
        )
    }

    /// The run's correlation records in time order, with the planted references but no
    /// delivery faults and no legacy records.
    pub fn records(&self) -> Records {
        self.records_with_legacy(0)
    }

    fn records_with_legacy(&self, legacy: u64) -> Records {
        let happenings = self.happenings();
        let topology = Arc::clone(happenings.topology());
        Records {
            happenings,
            lowering: Lowering::new(
                topology,
                Extras::new(self.requests, self.unresolved, legacy),
            ),
            pending: Vec::new(),
        }
    }

    /// The records as delivered: with `delivery`'s legacy records, redeliveries and shuffling.
    pub fn delivered(&self, delivery: &Delivery) -> Result<Delivered<Records>, SynthError> {
        self.validate()?;
        delivery.validate()?;
        Ok(Delivered::new(
            self.records_with_legacy(delivery.legacy),
            stream_rng(self.seed, u64::from(u32::MAX) + 1),
            stream_rng(self.seed, u64::from(u32::MAX) + 2),
            delivery.duplicates,
            delivery.shuffle.then_some(delivery.shuffle_window),
        ))
    }
}

/// How records reach the artifact.
#[derive(Clone, Debug, PartialEq)]
pub struct Delivery {
    /// Probability that a record is delivered a second time (0 ≤ p ≤ 1).
    pub duplicates: f64,
    /// Whether to shuffle the delivery order.
    pub shuffle: bool,
    /// Shuffle window in records (0: the whole run, for moderate sizes only).
    pub shuffle_window: usize,
    /// Legacy v1 client records to mix in.
    pub legacy: u64,
}

impl Default for Delivery {
    fn default() -> Self {
        Self {
            duplicates: 0.0,
            shuffle: false,
            shuffle_window: DEFAULT_SHUFFLE_WINDOW,
            legacy: 0,
        }
    }
}

impl Delivery {
    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), SynthError> {
        if !(0.0..=1.0).contains(&self.duplicates) {
            return Err(SynthError::InvalidParameter(format!(
                "duplicates must be a fraction between 0 and 1, not {}",
                self.duplicates
            )));
        }
        Ok(())
    }
}

/// The lazy record stream of a scenario.
pub struct Records {
    happenings: Simulation,
    lowering: Lowering,
    /// Records of the current happening, reversed (popped from the end).
    pending: Vec<InferenceRecord>,
}

impl Iterator for Records {
    type Item = InferenceRecord;

    fn next(&mut self) -> Option<InferenceRecord> {
        while self.pending.is_empty() {
            let happening = self.happenings.next()?;
            self.lowering.lower(happening, &mut self.pending);
            self.pending.reverse();
        }
        self.pending.pop()
    }
}

/// What [`write_artifact`] wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteSummary {
    /// Records written (legacy and duplicates included; v4 definitions excluded).
    pub records: u64,
}

/// Writes the delivered records of `scenario` as an artifact of `form` to `path`.
pub fn write_artifact(
    scenario: &Scenario,
    delivery: &Delivery,
    form: ArtifactForm,
    path: &Path,
) -> Result<WriteSummary, SynthError> {
    let io_error = |source| SynthError::Io {
        path: path.display().to_string(),
        source,
    };
    let file = File::create(path).map_err(io_error)?;
    let (_, summary) = write_artifact_to(scenario, delivery, form, file).map_err(|e| match e {
        SynthError::Io { source, .. } => io_error(source),
        other => other,
    })?;
    Ok(summary)
}

/// Writes the delivered records of `scenario` as an artifact of `form` into `sink`, returning
/// the sink (flushed) and a summary.
pub fn write_artifact_to<W: Write>(
    scenario: &Scenario,
    delivery: &Delivery,
    form: ArtifactForm,
    sink: W,
) -> Result<(W, WriteSummary), SynthError> {
    let io_error = |source| SynthError::Io {
        path: "output".to_owned(),
        source,
    };
    let mut writer = ArtifactWriter::new(sink, form);
    let mut records = 0;
    for record in scenario.delivered(delivery)? {
        writer.write_record(&record).map_err(io_error)?;
        records += 1;
    }
    let sink = writer.finish().map_err(io_error)?;
    Ok((sink, WriteSummary { records }))
}

/// An independent RNG stream of `seed`.
fn stream_rng(seed: u64, stream: u64) -> Xoshiro256PlusPlus {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    // Long jumps give non-overlapping streams; mixing the stream into the seed keeps the
    // number of jumps small.
    let mixed = seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    if stream > 0 {
        rng = Xoshiro256PlusPlus::seed_from_u64(mixed);
        rng.long_jump();
    }
    rng
}
