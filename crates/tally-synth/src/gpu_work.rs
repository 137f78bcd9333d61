//! The GPU work one engine step launches on each GPU of its host.
//!
//! Per GPU and step: an input copy (host to device) on a copy stream; then either eager prefill
//! kernels on the compute stream (overlapped, under tensor parallelism, by an all-reduce on the
//! NCCL stream, and otherwise sometimes by a KV-cache block copy on the copy stream) or, for
//! decode-only steps, one CUDA-graph replay whose kernels run back to back (sometimes touching);
//! an occasional memset; and the copy of the sampled tokens back to the host on a second copy
//! stream. Every operation has a launch call with a CUPTI
//! correlation id, except a few whose launch the profiler lost, and a few launched outside the
//! iteration's profiler range — those become unattributed activities.
//!
//! Only integer arithmetic is used, so the same seed draws the same work on every platform.

use rand::RngExt;
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::happening::{GpuOp, GraphKernel, GraphReplay, Launch, OpKind};

const COMPUTE_STREAM: u64 = 7;
const NCCL_STREAM: u64 = 13;
const H2D_STREAM: u64 = 20;
const D2H_STREAM: u64 = 24;

const PREFILL_KERNELS: [&str; 6] = [
    "flash_fwd_splitkv_kernel",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64",
    "fused_add_rms_norm_kernel",
    "act_and_mul_kernel<silu>",
    "rotary_embedding_kernel",
    "reshape_and_cache_flash_kernel",
];

const GRAPH_KERNELS: [&str; 5] = [
    "rms_norm_kernel",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64",
    "paged_attention_v2_kernel",
    "act_and_mul_kernel<silu>",
    "cross_device_reduce_1stage",
];

/// Batch sizes the engine captured CUDA graphs for; a decode batch replays the smallest one
/// that fits.
const CAPTURED_BATCH_SIZES: [u64; 10] = [1, 2, 4, 8, 16, 24, 32, 48, 64, 128];

/// What the step asks of each GPU.
pub(crate) struct StepShape {
    pub start_t: i64,
    pub end_t: i64,
    pub prefill_tokens: u64,
    pub decode_seqs: u64,
    pub tensor_parallel: bool,
}

/// Per-GPU launch state that persists across steps.
pub(crate) struct GpuLauncher {
    /// The GPU's index within the host.
    pub gpu: u32,
    /// The launching thread.
    pub tid: u64,
    /// The last CUPTI correlation id handed out.
    pub correlation: u64,
}

/// Draws the step's operations on one GPU, appending them to `ops`.
pub(crate) fn draw_ops(
    rng: &mut Xoshiro256PlusPlus,
    launcher: &mut GpuLauncher,
    step: &StepShape,
    ops: &mut Vec<GpuOp>,
) {
    let mut out = OpSink {
        cpu_t: step.start_t + rng.random_range(5_000..20_000i64),
        ops,
    };
    let h2d_start = step.start_t + rng.random_range(20_000..60_000i64);
    let h2d_end = h2d_start + rng.random_range(8_000..40_000i64);
    out.push(
        rng,
        launcher,
        OpSpec {
            stream: H2D_STREAM,
            kind: OpKind::Memcpy,
            name: "Memcpy HtoD (Pinned -> Device)",
            api: "cudaMemcpyAsync",
            span: (h2d_start, h2d_end),
            graph: None,
        },
    );
    let mut t = h2d_end + rng.random_range(2_000..6_000i64);
    if rng.random_range(0..10u32) == 0 {
        let end = t + rng.random_range(1_000..4_000i64);
        out.push(
            rng,
            launcher,
            OpSpec {
                stream: COMPUTE_STREAM,
                kind: OpKind::Memset,
                name: "Memset (Device)",
                api: "cudaMemsetAsync",
                span: (t, end),
                graph: None,
            },
        );
        t = end + rng.random_range(1_000..3_000i64);
    }
    // The compute takes about 80% of the step; the copies and launch gaps the rest.
    let budget = ((step.end_t - step.start_t) * 8 / 10 - (t - step.start_t)).max(50_000);
    let compute_start = t;
    if step.prefill_tokens > 0 {
        let count = rng.random_range(3..=5usize);
        let durations = split(rng, budget, count);
        for (k, duration) in durations.into_iter().enumerate() {
            let name = PREFILL_KERNELS[(k + rng.random_range(0..PREFILL_KERNELS.len())) % 6];
            out.push(
                rng,
                launcher,
                OpSpec {
                    stream: COMPUTE_STREAM,
                    kind: OpKind::Kernel,
                    name,
                    api: "cudaLaunchKernel",
                    span: (t, t + duration),
                    graph: None,
                },
            );
            t += duration + rng.random_range(1_000..8_000i64);
        }
        if !step.tensor_parallel && rng.random_range(0..10u32) < 3 {
            // A KV-cache block copy on the copy stream, overlapping the compute.
            let start = compute_start + budget / 3;
            let end = start + budget * rng.random_range(5..15i64) / 100;
            out.push(
                rng,
                launcher,
                OpSpec {
                    stream: H2D_STREAM,
                    kind: OpKind::Memcpy,
                    name: "Memcpy DtoD (Device -> Device)",
                    api: "cudaMemcpyAsync",
                    span: (start, end),
                    graph: None,
                },
            );
        }
        if step.tensor_parallel {
            let start = compute_start + budget * 4 / 10;
            let end = start + budget * rng.random_range(10..25i64) / 100;
            out.push(
                rng,
                launcher,
                OpSpec {
                    stream: NCCL_STREAM,
                    kind: OpKind::Kernel,
                    name: "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
                    api: "cudaLaunchKernel",
                    span: (start, end),
                    graph: None,
                },
            );
        }
    } else {
        let count = rng.random_range(8..=24usize);
        let durations = split(rng, budget, count);
        let mut kernels = Vec::with_capacity(count);
        for (k, duration) in durations.into_iter().enumerate() {
            kernels.push(GraphKernel {
                name: GRAPH_KERNELS[k % GRAPH_KERNELS.len()],
                start_t: t,
                end_t: t + duration,
            });
            // A third of the kernels start the instant the previous one ends.
            t += duration + rng.random_range(0..3i64) * rng.random_range(0..2_500i64);
        }
        let span = (kernels[0].start_t, kernels[count - 1].end_t);
        let graph_id = CAPTURED_BATCH_SIZES
            .iter()
            .position(|size| *size >= step.decode_seqs)
            .unwrap_or(CAPTURED_BATCH_SIZES.len()) as u64
            + 1;
        out.push(
            rng,
            launcher,
            OpSpec {
                stream: COMPUTE_STREAM,
                kind: OpKind::Kernel,
                name: kernels[0].name,
                api: "cudaGraphLaunch",
                span,
                graph: Some(GraphReplay { graph_id, kernels }),
            },
        );
        t = span.1;
    }
    let d2h_start = t + rng.random_range(1_000..4_000i64);
    let d2h_end = d2h_start + rng.random_range(3_000..12_000i64);
    out.push(
        rng,
        launcher,
        OpSpec {
            stream: D2H_STREAM,
            kind: OpKind::Memcpy,
            name: "Memcpy DtoH (Device -> Pinned)",
            api: "cudaMemcpyAsync",
            span: (d2h_start, d2h_end),
            graph: None,
        },
    );
}

/// What one operation is, before its launch is drawn.
struct OpSpec {
    stream: u64,
    kind: OpKind,
    name: &'static str,
    api: &'static str,
    span: (i64, i64),
    graph: Option<GraphReplay>,
}

/// Collects a GPU's operations, drawing each one's launch call.
struct OpSink<'a> {
    cpu_t: i64,
    ops: &'a mut Vec<GpuOp>,
}

impl OpSink<'_> {
    fn push(&mut self, rng: &mut Xoshiro256PlusPlus, launcher: &mut GpuLauncher, spec: OpSpec) {
        launcher.correlation += rng.random_range(1..=6u64);
        self.cpu_t += rng.random_range(3_000..15_000i64);
        let lost = rng.random_range(0..1000u32) < 15;
        let outside = !lost && rng.random_range(0..1000u32) < 10;
        let correlation = if lost && rng.random_bool(0.5) {
            None
        } else {
            Some(launcher.correlation)
        };
        let launch = (!lost).then_some(Launch {
            api: spec.api,
            correlation: launcher.correlation,
            cpu_t: self.cpu_t,
            tid: launcher.tid,
        });
        self.ops.push(GpuOp {
            gpu: launcher.gpu,
            stream: spec.stream,
            kind: spec.kind,
            name: spec.name,
            start_t: spec.span.0,
            end_t: spec.span.1,
            launch,
            correlation,
            outside_iteration: outside,
            graph: spec.graph,
        });
    }
}

/// Splits `total` ns into `parts` random positive durations summing to about `total`.
fn split(rng: &mut Xoshiro256PlusPlus, total: i64, parts: usize) -> Vec<i64> {
    let weights: Vec<i64> = (0..parts).map(|_| rng.random_range(1..=10i64)).collect();
    let sum: i64 = weights.iter().sum();
    weights
        .into_iter()
        .map(|w| (total * w / sum).max(1_000))
        .collect()
}
