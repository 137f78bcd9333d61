//! One GPU's Kineto trace, filled engine step by engine step from the neutral model.
//!
//! A [`TraceFile`] is the PyTorch profiler trace of one worker process (one GPU of one host). For
//! each engine step it writes: `cpu_op` events that launch nothing (input preparation, on the main
//! thread, at the end of the step), then for every GPU operation of its GPU the launch call — a
//! `cpu_op` wrapping a `cuda_runtime` call with `args.correlation` and the `ac2g` flow start — and
//! the GPU side: one `kernel`/`gpu_memcpy`/`gpu_memset` event (pid = device index, tid = stream,
//! same correlation), or one kernel event per kernel of a CUDA-graph replay, all carrying the
//! replay's correlation and `graph id`. Engine steps are grouped `iterations_per_step` at a time
//! into `ProfilerStep#N` `user_annotation` ranges on the main thread (tid = pid), written when the
//! group closes: `[first step's start, last step's end)`.
//!
//! Threads: copies and sets are launched from the main thread, kernels and graph replays from the
//! model's launching thread (a second thread), so a reader must link launches on any thread of
//! the process to the step range on the main thread. Launches the model marks as outside the
//! iteration's profiler range are written 2–17 µs before their group's range starts (in the gap
//! of at least 30 µs the engine leaves between steps); lost launches have no runtime call, and
//! their GPU event carries correlation 0 when the model says CUPTI reported none.
//!
//! Every value written is a function of the model and of counters, never of a random draw, so
//! the same happenings give the same bytes. Choosing which traces to write and when to stop is
//! the parent module's job.

use std::collections::BTreeSet;
use std::io::{self, Write};

use crate::happening::{GpuOp, OpKind, Step};
use crate::topology::{Clock, Host};

use super::events::{EventWriter, JsonStr, Micros, Slice};
use super::{KinetoOptions, KinetoTrace, KinetoTraceSummary};

/// `cpu_op` names of host work that launches nothing, used in turn.
const HOST_OPS: [&str; 12] = [
    "aten::empty",
    "aten::view",
    "aten::slice",
    "aten::select",
    "aten::to",
    "aten::_to_copy",
    "aten::index_select",
    "aten::cat",
    "aten::arange",
    "aten::zeros",
    "aten::as_strided",
    "aten::reshape",
];

/// The open `ProfilerStep#N` group.
struct Group {
    number: u64,
    start_t: i64,
    end_t: i64,
}

/// One trace being written.
pub(crate) struct TraceFile<W> {
    events: EventWriter<W>,
    summary: KinetoTraceSummary,
    pid: u64,
    device: u32,
    clock: Clock,
    /// Subtracted from every clock reading (`baseTimeNanoseconds`, or 0).
    base_ns: i64,
    base_time: bool,
    iterations_per_step: u64,
    host_ops: u32,
    group: Option<Group>,
    external_id: u64,
    streams: BTreeSet<u64>,
    threads: BTreeSet<u64>,
    /// True-time span of everything written: (first, last).
    span: Option<(i64, i64)>,
}

impl<W: Write> TraceFile<W> {
    /// Writes the header of `trace`'s file to `sink`.
    pub(crate) fn start(
        sink: W,
        host: &Host,
        trace: &KinetoTrace,
        trace_id: u128,
        options: &KinetoOptions,
    ) -> io::Result<Self> {
        let gpu = &host.gpus[trace.gpu as usize];
        let clock = gpu.trace_clock.clone();
        // A whole second at least one second before the run started.
        let base_ns = if options.base_time {
            (clock.at(0) - 1_000_000_000).div_euclid(1_000_000_000) * 1_000_000_000
        } else {
            0
        };
        let header = header(host, trace.gpu, trace_id);
        Ok(Self {
            events: EventWriter::start(sink, &header)?,
            summary: KinetoTraceSummary {
                trace: trace.clone(),
                bytes: 0,
                entries: 0,
                gpu_events: 0,
                launch_calls: 0,
                profiler_steps: 0,
                iterations: 0,
                last_iteration: 0,
            },
            pid: gpu.pid,
            device: gpu.index,
            clock,
            base_ns,
            base_time: options.base_time,
            iterations_per_step: u64::from(options.iterations_per_step),
            host_ops: options.host_ops_per_iteration,
            group: None,
            external_id: 0,
            streams: BTreeSet::new(),
            threads: BTreeSet::from([gpu.pid]),
            span: None,
        })
    }

    /// Bytes written so far.
    pub(crate) fn bytes(&self) -> u64 {
        self.events.bytes()
    }

    fn ts(&self, t: i64) -> i64 {
        self.clock.at(t) - self.base_ns
    }

    fn cover(&mut self, from: i64, to: i64) {
        self.span = Some(match self.span {
            None => (from, to),
            Some((a, b)) => (a.min(from), b.max(to)),
        });
    }

    fn next_external_id(&mut self) -> u64 {
        self.external_id += 1;
        self.external_id
    }

    /// Writes one engine step of this trace's host.
    pub(crate) fn step(&mut self, step: &Step) -> io::Result<()> {
        let number = (step.index - 1) / self.iterations_per_step + 1;
        match &mut self.group {
            Some(group) if group.number == number => group.end_t = step.end_t,
            _ => {
                self.close_group()?;
                self.group = Some(Group {
                    number,
                    start_t: step.start_t,
                    end_t: step.end_t,
                });
            }
        }
        self.summary.iterations += 1;
        self.summary.last_iteration = step.index;
        self.cover(step.start_t, step.end_t);
        let n = i64::from(self.host_ops);
        for i in 0..n {
            let ext = self.next_external_id();
            let name = HOST_OPS[(step.index as usize + i as usize) % HOST_OPS.len()];
            let slice = Slice {
                cat: "cpu_op",
                name,
                pid: self.pid,
                tid: self.pid,
                ts_ns: self.ts(step.end_t - 10_000 - (n - i) * 2_500),
                dur_ns: 2_000,
            };
            self.events
                .complete(&slice, |o| write!(o, "\"External id\": {ext}"))?;
        }
        let device = self.device;
        for op in step.gpu_ops.iter().filter(|op| op.gpu == device) {
            self.op(op)?;
        }
        Ok(())
    }

    fn op(&mut self, op: &GpuOp) -> io::Result<()> {
        let ext = self.next_external_id();
        let flow = op.correlation.filter(|_| op.launch.is_some());
        if let Some(launch) = &op.launch {
            let tid = match op.kind {
                OpKind::Memcpy | OpKind::Memset => self.pid,
                OpKind::Kernel => launch.tid,
            };
            self.threads.insert(tid);
            let cpu_t = match (&self.group, op.outside_iteration) {
                (Some(group), true) => {
                    group.start_t - 2_000 - (launch.correlation % 16) as i64 * 1_000
                }
                _ => launch.cpu_t,
            };
            let call_ns = 1_000 + (launch.correlation.wrapping_mul(2_654_435_761) % 1_000) as i64;
            self.cover(cpu_t - 300, cpu_t + call_ns + 300);
            let wrapper = Slice {
                cat: "cpu_op",
                name: cpu_op_name(op),
                pid: self.pid,
                tid,
                ts_ns: self.ts(cpu_t - 300),
                dur_ns: call_ns + 600,
            };
            self.events
                .complete(&wrapper, |o| write!(o, "\"External id\": {ext}"))?;
            let call = Slice {
                cat: "cuda_runtime",
                name: launch.api,
                pid: self.pid,
                tid,
                ts_ns: self.ts(cpu_t),
                dur_ns: call_ns,
            };
            let cbid = callback_id(launch.api);
            self.events.complete(&call, |o| {
                write!(
                    o,
                    "\"External id\": {ext}, \"cbid\": {cbid}, \"correlation\": {}",
                    launch.correlation
                )
            })?;
            if let Some(correlation) = flow {
                let ts = self.ts(cpu_t);
                self.events.flow(true, correlation, self.pid, tid, ts)?;
            }
            self.summary.launch_calls += 1;
        }
        self.streams.insert(op.stream);
        self.cover(op.start_t, op.end_t);
        let gpu = GpuSide {
            ext,
            correlation: op.correlation.unwrap_or(0),
            stream: op.stream,
            graph: op.graph.as_ref().map(|g| g.graph_id),
        };
        match &op.graph {
            Some(graph) => {
                for (k, kernel) in graph.kernels.iter().enumerate() {
                    let flow = flow.filter(|_| k == 0);
                    self.gpu_event(
                        &gpu,
                        OpKind::Kernel,
                        kernel.name,
                        kernel.start_t,
                        kernel.end_t,
                        flow,
                    )?;
                }
            }
            None => self.gpu_event(&gpu, op.kind, op.name, op.start_t, op.end_t, flow)?,
        }
        Ok(())
    }

    fn gpu_event(
        &mut self,
        gpu: &GpuSide,
        kind: OpKind,
        name: &str,
        start_t: i64,
        end_t: i64,
        flow: Option<u64>,
    ) -> io::Result<()> {
        let dur_ns = end_t - start_t;
        let slice = Slice {
            cat: match kind {
                OpKind::Kernel => "kernel",
                OpKind::Memcpy => "gpu_memcpy",
                OpKind::Memset => "gpu_memset",
            },
            name,
            pid: u64::from(self.device),
            tid: gpu.stream,
            ts_ns: self.ts(start_t),
            dur_ns,
        };
        let device = self.device;
        self.events.complete(&slice, |o| {
            write!(
                o,
                "\"External id\": {}, \"device\": {device}, \"context\": 1, \"stream\": {}, \"correlation\": {}",
                gpu.ext, gpu.stream, gpu.correlation
            )?;
            match kind {
                OpKind::Kernel => kernel_args(o, gpu.correlation ^ start_t as u64, gpu.graph),
                OpKind::Memcpy | OpKind::Memset => {
                    let bandwidth = copy_bandwidth(kind, name);
                    write!(
                        o,
                        ", \"bytes\": {}, \"memory bandwidth (GB/s)\": {bandwidth}.0",
                        dur_ns as u64 * bandwidth
                    )
                }
            }
        })?;
        if let Some(id) = flow {
            let ts = self.ts(start_t);
            self.events
                .flow(false, id, u64::from(self.device), gpu.stream, ts)?;
        }
        self.summary.gpu_events += 1;
        Ok(())
    }

    fn close_group(&mut self) -> io::Result<()> {
        let Some(group) = self.group.take() else {
            return Ok(());
        };
        let ext = self.next_external_id();
        let name = format!("ProfilerStep#{}", group.number);
        let slice = Slice {
            cat: "user_annotation",
            name: &name,
            pid: self.pid,
            tid: self.pid,
            ts_ns: self.ts(group.start_t),
            dur_ns: group.end_t - group.start_t,
        };
        self.events
            .complete(&slice, |o| write!(o, "\"External id\": {ext}"))?;
        self.summary.profiler_steps += 1;
        Ok(())
    }

    /// Closes the last step range, writes the metadata events and the footer; returns the sink
    /// and what was written.
    pub(crate) fn finish(mut self) -> io::Result<(W, KinetoTraceSummary)> {
        self.close_group()?;
        let (first, last) = self.span.unwrap_or((0, 0));
        let at = self.ts(first);
        let pid = self.pid;
        let device = u64::from(self.device);
        self.events
            .metadata("process_name", pid, 0, at, "name", "\"python3\"")?;
        self.events
            .metadata("process_labels", pid, 0, at, "labels", "\"CPU\"")?;
        let threads = std::mem::take(&mut self.threads);
        for tid in threads {
            let role = if tid == pid {
                "pt_main_thread"
            } else {
                "pt_thread_1"
            };
            let value = JsonStr(&format!("thread {tid} ({role})")).to_string();
            self.events
                .metadata("thread_name", pid, tid, at, "name", &value)?;
        }
        let gpu_name = JsonStr(&format!("GPU {device}")).to_string();
        self.events
            .metadata("process_name", device, 0, at, "name", &gpu_name)?;
        for stream in std::mem::take(&mut self.streams) {
            let value = JsonStr(&format!("stream {stream} ")).to_string();
            self.events
                .metadata("thread_name", device, stream, at, "name", &value)?;
        }
        self.events.raw(&format!(
            "  {{\n    \"ph\": \"X\", \"cat\": \"Trace\", \"ts\": {}, \"dur\": {},\n    \"pid\": \"Spans\", \"tid\": \"PyTorch Profiler\",\n    \"name\": \"PyTorch Profiler (0)\",\n    \"args\": {{\n      \"Op count\": 0\n    }}\n  }}",
            Micros(at),
            Micros(last - first)
        ))?;
        self.events.raw(&format!(
            "  {{\n    \"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\",\n    \"pid\": \"\", \"tid\": \"\", \"ts\": {}\n  }}",
            Micros(self.ts(last))
        ))?;
        let mut footer = format!(
            ",\n  \"traceName\": {},\n  \"displayTimeUnit\": \"ms\"",
            JsonStr(&format!("/tmp/{}", self.summary.trace.file_name))
        );
        if self.base_time {
            footer.push_str(&format!(",\n  \"baseTimeNanoseconds\": {}", self.base_ns));
        }
        let mut summary = self.summary;
        summary.entries = self.events.entries();
        let (sink, bytes) = self.events.finish(&footer)?;
        summary.bytes = bytes;
        Ok((sink, summary))
    }
}

/// What the GPU events of one operation share.
struct GpuSide {
    ext: u64,
    correlation: u64,
    stream: u64,
    graph: Option<u64>,
}

/// The fields before `traceEvents`: schema, the host's GPUs, CUDA versions, the process group
/// (tensor-parallel hosts only), trace id and host name.
fn header(host: &Host, gpu: u32, trace_id: u128) -> String {
    let mut out = String::from("  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n");
    for (k, g) in host.gpus.iter().enumerate() {
        let separator = if k + 1 < host.gpus.len() { "," } else { "" };
        out.push_str(&format!(
            "    {{\n      \"id\": {}, \"name\": \"NVIDIA H100 80GB HBM3\", \"totalGlobalMem\": 84987740160,\n      \"computeMajor\": 9, \"computeMinor\": 0,\n      \"maxThreadsPerBlock\": 1024, \"maxThreadsPerMultiprocessor\": 2048,\n      \"regsPerBlock\": 65536, \"warpSize\": 32,\n      \"sharedMemPerBlock\": 49152, \"numSms\": 132\n    , \"regsPerMultiprocessor\": 65536, \"sharedMemPerBlockOptin\": 232448, \"sharedMemPerMultiprocessor\": 233472\n    }}{separator}\n",
            g.index
        ));
    }
    out.push_str("  ],\n  \"cupti_version\": 24,\n  \"cuda_runtime_version\": 12080,\n  \"cuda_driver_version\": 12080,\n");
    if host.gpus.len() > 1 {
        let n = host.gpus.len();
        let ranks: Vec<String> = (0..n).map(|r| r.to_string()).collect();
        out.push_str(&format!(
            "  \"distributedInfo\": {{\"backend\": \"nccl\", \"rank\": {gpu}, \"world_size\": {n}, \"pg_count\": 1, \"pg_config\": [{{\"pg_name\": \"0\", \"uid\": 0, \"backend_config\": \"cuda:nccl\", \"pg_size\": {n}, \"ranks\": [{}]}}], \"nccl_version\": \"2.21.5\"}},\n",
            ranks.join(", ")
        ));
    }
    out.push_str(&format!(
        "  \"trace_id\": \"{trace_id:032X}\",\n  \"host_name\": {},\n",
        JsonStr(&host.name)
    ));
    out
}

/// The `cpu_op` that wraps an operation's launch call.
fn cpu_op_name(op: &GpuOp) -> &'static str {
    match (op.kind, op.graph.is_some()) {
        (_, true) => "CUDAGraph::replay",
        (OpKind::Memcpy, _) => "aten::copy_",
        (OpKind::Memset, _) => "aten::zero_",
        (OpKind::Kernel, false) if op.name.starts_with("nccl") => "nccl:all_reduce",
        (OpKind::Kernel, false) if op.name.contains("gemm") => "aten::mm",
        (OpKind::Kernel, false) => "aten::empty_strided",
    }
}

/// CUPTI's callback id of a runtime API (0 for one the writer does not know).
fn callback_id(api: &str) -> u32 {
    match api {
        "cudaLaunchKernel" => 211,
        "cudaMemcpyAsync" => 41,
        "cudaMemsetAsync" => 51,
        "cudaGraphLaunch" => 311,
        _ => 0,
    }
}

/// Bytes per nanosecond (GB/s) of a copy or set.
fn copy_bandwidth(kind: OpKind, name: &str) -> u64 {
    match kind {
        OpKind::Memset => 800,
        _ if name.contains("DtoD") => 1200,
        _ if name.contains("DtoH") => 22,
        _ => 24,
    }
}

/// The launch-configuration `args` of a kernel, derived from `seed` (a mix of its correlation
/// and start), plus its `graph id` when it belongs to a replay.
fn kernel_args(out: &mut impl Write, seed: u64, graph: Option<u64>) -> io::Result<()> {
    let h = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let registers = 32 + (h >> 7) % 5 * 16;
    let shared = (h >> 13) % 4 * 16_384;
    let grid = 1 + (h >> 17) % 528;
    let block = if (h >> 29) & 1 == 0 { 128 } else { 256 };
    // Blocks and warps per SM in thousandths, written as decimals.
    let blocks_milli = grid * 1000 / 132;
    let warps_milli = blocks_milli * block / 32;
    let occupancy = (h >> 33) % 100;
    write!(
        out,
        ", \"registers per thread\": {registers}, \"shared memory\": {shared}, \"blocks per SM\": {}.{:03}, \"warps per SM\": {}.{:03}, \"grid\": [{grid}, 1, 1], \"block\": [{block}, 1, 1], \"est. achieved occupancy %\": {occupancy}",
        blocks_milli / 1000,
        blocks_milli % 1000,
        warps_milli / 1000,
        warps_milli % 1000
    )?;
    if let Some(graph) = graph {
        write!(out, ", \"graph id\": {graph}")?;
    }
    Ok(())
}
