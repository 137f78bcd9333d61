//! PyTorch profiler (Kineto) Chrome traces of a simulated run, one per GPU worker process.
//!
//! A second lowering of the neutral model: every GPU of every host (one worker process, one
//! tensor-parallel rank) gets the trace its PyTorch profiler would have written — header
//! (`schemaVersion`, `deviceProperties`, CUDA versions, `distributedInfo` on tensor-parallel hosts,
//! `trace_id`, `host_name`), then `traceEvents`: `ProfilerStep#N` `user_annotation` ranges,
//! `cpu_op` events, `cuda_runtime` launch calls (`cudaLaunchKernel`, `cudaMemcpyAsync`,
//! `cudaMemsetAsync`, `cudaGraphLaunch`) with `args.correlation`, `ac2g` flows and the GPU's
//! `kernel`/`gpu_memcpy`/`gpu_memset` events, then metadata events and the footer
//! (`traceName`, `displayTimeUnit`, optionally `baseTimeNanoseconds`). `trace` says what each
//! engine step becomes; `events` spells it.
//!
//! Times are the GPU's trace clock ([`crate::topology::Gpu::trace_clock`]) in microseconds with
//! three decimals, so the nanoseconds of the model survive exactly; with
//! [`KinetoOptions::base_time`] they are relative to a whole-second `baseTimeNanoseconds`.
//!
//! Writing streams: events are written as the simulation produces steps, so memory is bounded by
//! the requests in flight and the number of files, never by the trace's size. The same scenario
//! and options give the same bytes. A run is sized by its request count or, with
//! [`KinetoOptions::target_bytes`], stops after the first engine step that brings the selected
//! traces to that many bytes together (the request count is then unbounded, and the traces are a
//! prefix of a longer run's).
//!
//! This module writes traces only; reading them back is `tally-import`'s job.

mod events;
mod trace;

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::happening::Happening;
use crate::{Scenario, SynthError};

use trace::TraceFile;

/// What to write, and how much.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KinetoOptions {
    /// Engine iterations per `ProfilerStep#N` range (≥ 1): step `N` covers iterations
    /// `(N−1)·k+1 ..= N·k`.
    pub iterations_per_step: u32,
    /// Write `baseTimeNanoseconds` and timestamps relative to it (as PyTorch ≥ 2.4 does).
    pub base_time: bool,
    /// `cpu_op` events per engine iteration that launch nothing (at most 256).
    pub host_ops_per_iteration: u32,
    /// Stop once the selected traces hold this many bytes together (see the module docs).
    pub target_bytes: Option<u64>,
    /// Only the traces of this host.
    pub host: Option<u32>,
    /// Only the traces of this GPU index (within each selected host).
    pub gpu: Option<u32>,
}

impl Default for KinetoOptions {
    fn default() -> Self {
        Self {
            iterations_per_step: 1,
            base_time: false,
            host_ops_per_iteration: 48,
            target_bytes: None,
            host: None,
            gpu: None,
        }
    }
}

/// One trace file: which GPU it is of, and its name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KinetoTrace {
    /// Host index.
    pub host: u32,
    /// GPU index within the host.
    pub gpu: u32,
    /// File name (`rank{host}-dev{gpu}.pt.trace.json`).
    pub file_name: String,
}

/// What was written to one trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KinetoTraceSummary {
    /// The trace.
    pub trace: KinetoTrace,
    /// Bytes of the file.
    pub bytes: u64,
    /// Entries of `traceEvents`.
    pub entries: u64,
    /// GPU events (kernels, copies, sets; each kernel of a graph replay counts).
    pub gpu_events: u64,
    /// `cuda_runtime` launch calls.
    pub launch_calls: u64,
    /// `ProfilerStep#N` ranges.
    pub profiler_steps: u64,
    /// Engine iterations written.
    pub iterations: u64,
    /// Index of the last engine iteration written (0: none).
    pub last_iteration: u64,
}

/// What [`write_kineto`] wrote, one entry per trace in [`kineto_traces`] order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KinetoSummary {
    /// The traces.
    pub traces: Vec<KinetoTraceSummary>,
}

impl KinetoSummary {
    /// Bytes of all traces together.
    pub fn bytes(&self) -> u64 {
        self.traces.iter().map(|t| t.bytes).sum()
    }
}

impl KinetoOptions {
    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), SynthError> {
        let invalid = |m: &str| Err(SynthError::InvalidParameter(m.to_owned()));
        if self.iterations_per_step == 0 {
            return invalid("iterations per profiler step must be at least 1");
        }
        if self.host_ops_per_iteration > 256 {
            return invalid("host ops per iteration must be at most 256");
        }
        Ok(())
    }
}

/// The traces `options` selects from `scenario`'s topology, in host then GPU order.
pub fn kineto_traces(
    scenario: &Scenario,
    options: &KinetoOptions,
) -> Result<Vec<KinetoTrace>, SynthError> {
    scenario.validate()?;
    options.validate()?;
    let topology = scenario.topology();
    if let Some(host) = options.host.filter(|h| *h >= scenario.hosts) {
        return Err(SynthError::InvalidParameter(format!(
            "host {host} does not exist: the scenario has {} hosts (0 to {})",
            scenario.hosts,
            scenario.hosts - 1
        )));
    }
    let traces: Vec<KinetoTrace> = topology
        .hosts
        .iter()
        .filter(|h| options.host.is_none_or(|want| want == h.index))
        .flat_map(|h| {
            h.gpus
                .iter()
                .filter(|g| options.gpu.is_none_or(|want| want == g.index))
                .map(|g| KinetoTrace {
                    host: h.index,
                    gpu: g.index,
                    file_name: format!("rank{}-dev{}.pt.trace.json", h.index, g.index),
                })
        })
        .collect();
    if traces.is_empty() {
        return Err(SynthError::InvalidParameter(format!(
            "no selected host has GPU {}: hosts following pattern 1 and 3 have two GPUs, the others one",
            options.gpu.unwrap_or(0)
        )));
    }
    Ok(traces)
}

/// Writes the selected traces into `sinks` (one per trace, in [`kineto_traces`] order) and
/// returns them with what was written. I/O errors name the trace's file name.
pub fn write_kineto_to<W: Write>(
    scenario: &Scenario,
    options: &KinetoOptions,
    sinks: Vec<W>,
) -> Result<(Vec<W>, KinetoSummary), SynthError> {
    let traces = kineto_traces(scenario, options)?;
    if sinks.len() != traces.len() {
        return Err(SynthError::InvalidParameter(format!(
            "{} sinks given for {} traces",
            sinks.len(),
            traces.len()
        )));
    }
    let io_error = |k: usize| {
        let name = traces[k].file_name.clone();
        move |source| SynthError::Io { path: name, source }
    };
    let mut run = scenario.clone();
    if options.target_bytes.is_some() {
        run.requests = u64::MAX;
    }
    let happenings = run.happenings();
    let topology = std::sync::Arc::clone(happenings.topology());
    let mut files = Vec::with_capacity(traces.len());
    let mut by_host: Vec<Vec<usize>> = vec![Vec::new(); topology.hosts.len()];
    for (k, (trace, sink)) in traces.iter().zip(sinks).enumerate() {
        let host = &topology.hosts[trace.host as usize];
        let trace_id = trace_id(scenario.seed, trace);
        files.push(TraceFile::start(sink, host, trace, trace_id, options).map_err(io_error(k))?);
        by_host[trace.host as usize].push(k);
    }
    for happening in happenings {
        let Happening::Step(step) = happening else {
            continue;
        };
        let selected = &by_host[step.host as usize];
        if selected.is_empty() {
            continue;
        }
        for &k in selected {
            files[k].step(&step).map_err(io_error(k))?;
        }
        if let Some(target) = options.target_bytes
            && files.iter().map(TraceFile::bytes).sum::<u64>() >= target
        {
            break;
        }
    }
    let mut sinks = Vec::with_capacity(files.len());
    let mut summaries = Vec::with_capacity(files.len());
    for (k, file) in files.into_iter().enumerate() {
        let (sink, summary) = file.finish().map_err(io_error(k))?;
        sinks.push(sink);
        summaries.push(summary);
    }
    Ok((sinks, KinetoSummary { traces: summaries }))
}

/// Writes the selected traces under `out`: when one trace is selected, `out` is that file;
/// otherwise `out` is a directory (created if needed) that receives one file per trace, named
/// as [`KinetoTrace::file_name`] says.
pub fn write_kineto(
    scenario: &Scenario,
    options: &KinetoOptions,
    out: &Path,
) -> Result<KinetoSummary, SynthError> {
    let traces = kineto_traces(scenario, options)?;
    let paths: Vec<PathBuf> = if traces.len() == 1 {
        vec![out.to_path_buf()]
    } else {
        fs::create_dir_all(out).map_err(|source| SynthError::Io {
            path: out.display().to_string(),
            source,
        })?;
        traces.iter().map(|t| out.join(&t.file_name)).collect()
    };
    let path_of = |name: &str| {
        let k = traces.iter().position(|t| t.file_name == name);
        k.map_or_else(
            || out.display().to_string(),
            |k| paths[k].display().to_string(),
        )
    };
    let mut sinks = Vec::with_capacity(paths.len());
    for path in &paths {
        let file = File::create(path).map_err(|source| SynthError::Io {
            path: path.display().to_string(),
            source,
        })?;
        sinks.push(BufWriter::with_capacity(1 << 20, file));
    }
    let relocate = |e: SynthError| match e {
        SynthError::Io { path, source } => SynthError::Io {
            path: path_of(&path),
            source,
        },
        other => other,
    };
    let (sinks, summary) = write_kineto_to(scenario, options, sinks).map_err(relocate)?;
    for (k, mut sink) in sinks.into_iter().enumerate() {
        sink.flush().map_err(|source: io::Error| SynthError::Io {
            path: paths[k].display().to_string(),
            source,
        })?;
    }
    Ok(summary)
}

/// A stable 128-bit trace id (as 32 hex digits) from the seed and the trace's place.
fn trace_id(seed: u64, trace: &KinetoTrace) -> u128 {
    let mix = |mut x: u64| {
        // splitmix64's finaliser.
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        x ^ (x >> 31)
    };
    let place = (u64::from(trace.host) << 32) | u64::from(trace.gpu);
    let high = mix(seed ^ 0x6B69_6E65_746F);
    let low = mix(high ^ place);
    (u128::from(high) << 64) | u128::from(low)
}
