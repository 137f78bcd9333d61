//! Format-neutral events of the simulated serving run.
//!
//! A [`Happening`] says what happened in the deployment, in simulated true time (ns since the
//! run started), without choosing any evidence format: an engine step with its member requests
//! and the GPU work it launched, a request attempt being scheduled or ending, a logical request
//! ending, a clock synchronisation. The crate's lowering turns them into stormlog correlation
//! records; a Kineto or Nsight writer would turn the same values into trace events (GPU ops carry
//! their stream, CPU launch call and correlation id; CUDA-graph replays their member kernels).
//!
//! Nothing here does anything: these are plain values.

/// One attempt of one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AttemptId {
    /// The logical request (0-based, in issue order).
    pub request: u64,
    /// The attempt number, from 1.
    pub attempt: u32,
    /// Whether attempts of this request are identified in the evidence (only retried requests
    /// carry attempt references, as clients report them).
    pub tracked: bool,
}

/// What a request does in one iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    /// Processes (a chunk of) its prompt.
    Prefill,
    /// Generates one token.
    Decode,
}

impl Role {
    /// The producer's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Prefill => "prefill",
            Self::Decode => "decode",
        }
    }
}

/// One request attempt's part in one engine step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// Which attempt.
    pub attempt: AttemptId,
    /// Its role.
    pub role: Role,
    /// Prompt tokens processed in this step (prefill chunks).
    pub input_tokens: Option<u64>,
    /// Tokens generated in this step.
    pub output_tokens: Option<u64>,
    /// KV-cache bytes written for the prefill chunk.
    pub kv_bytes: Option<u64>,
}

/// The kind of a GPU operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpKind {
    /// A kernel (or a CUDA-graph replay of kernels).
    Kernel,
    /// A memory copy.
    Memcpy,
    /// A memory set.
    Memset,
}

/// The CPU-side runtime call that launched a GPU operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    /// Runtime API (`cudaLaunchKernel`, `cudaGraphLaunch`, `cudaMemcpyAsync`, ...).
    pub api: &'static str,
    /// CUPTI correlation id shared by the call and the GPU work.
    pub correlation: u64,
    /// True time of the call on the CPU.
    pub cpu_t: i64,
    /// Thread id of the launching thread (the process is the GPU's worker).
    pub tid: u64,
}

/// One kernel of a CUDA-graph replay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphKernel {
    /// Kernel name.
    pub name: &'static str,
    /// True start time.
    pub start_t: i64,
    /// True end time (≥ start).
    pub end_t: i64,
}

/// A CUDA-graph replay: one launch, many kernels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphReplay {
    /// The captured graph's id.
    pub graph_id: u64,
    /// Its kernels, in time order, disjoint (touching allowed).
    pub kernels: Vec<GraphKernel>,
}

/// One GPU operation (a kernel, copy, set or graph replay) on one stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuOp {
    /// Index of the GPU within its host.
    pub gpu: u32,
    /// CUDA stream.
    pub stream: u64,
    /// What it is.
    pub kind: OpKind,
    /// Kernel or copy name (the first kernel's for a graph).
    pub name: &'static str,
    /// True start time.
    pub start_t: i64,
    /// True end time (≥ start).
    pub end_t: i64,
    /// The launch call; `None` when the profiler lost it.
    pub launch: Option<Launch>,
    /// CUPTI correlation id seen on the GPU side (absent when the launch was lost and CUPTI
    /// reported 0).
    pub correlation: Option<u64>,
    /// Whether the launch happened outside the iteration's profiler range.
    pub outside_iteration: bool,
    /// The graph replay, for a `cudaGraphLaunch`.
    pub graph: Option<GraphReplay>,
}

/// An engine-reported runtime launch (the adapter's own view of one launch call).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeLaunch {
    /// The runtime correlation id.
    pub correlation: u64,
    /// Whether the adapter could tie it to the step.
    pub linked: bool,
}

/// One engine step (iteration) on one host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// The host.
    pub host: u32,
    /// Iteration number on this host, from 1.
    pub index: u64,
    /// True start time.
    pub start_t: i64,
    /// True end time.
    pub end_t: i64,
    /// The member requests, in scheduling order (decodes first, then prefill chunks).
    pub members: Vec<Member>,
    /// Prompt tokens processed.
    pub prefill_tokens: u64,
    /// Tokens decoded.
    pub decode_tokens: u64,
    /// The GPU work of every GPU of the host.
    pub gpu_ops: Vec<GpuOp>,
    /// The adapter's report of the step's main launch, when it made one.
    pub runtime_launch: Option<RuntimeLaunch>,
    /// Span of the sampling stage, when the adapter timed it.
    pub sample_stage: Option<(i64, i64)>,
    /// Whether the NVML sampler took a GPU busy sample over this step.
    pub busy_sample: bool,
    /// Whether a Python GC pause was reported during this step.
    pub gc_pause: bool,
}

/// How an attempt ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Outcome {
    /// Completed.
    Ok,
    /// The engine failed it.
    Error,
    /// The client gave up waiting.
    Timeout,
}

impl Outcome {
    /// The status text.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Error => "error",
            Self::Timeout => "timeout",
        }
    }
}

/// An attempt left the engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttemptEnd {
    /// The host that served it.
    pub host: u32,
    /// Which attempt.
    pub attempt: AttemptId,
    /// The engine's id for it (`cmpl-...`).
    pub backend_id: String,
    /// How it ended.
    pub outcome: Outcome,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Tokens generated before it ended.
    pub generated_tokens: u64,
    /// True time the client sent it.
    pub client_start_t: i64,
    /// True time the client saw it end.
    pub client_end_t: i64,
    /// Detokenisation span on the engine (completed attempts only).
    pub detokenize: Option<(i64, i64)>,
}

/// A logical request ended at the client (after its last attempt).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestEnd {
    /// The request.
    pub request: u64,
    /// The host that served its last attempt.
    pub host: u32,
    /// How many attempts it took.
    pub attempts: u32,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Tokens generated by the last attempt.
    pub output_tokens: u64,
    /// True time the first attempt was sent.
    pub client_start_t: i64,
    /// True time the last attempt ended at the client.
    pub client_end_t: i64,
    /// The last iteration the request took part in (on `host`).
    pub last_iteration: u64,
}

/// One thing that happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Happening {
    /// The run started (the topology is in place).
    Start,
    /// A clock-synchronisation probe of `host` against the client, valid for a window.
    ClockSync {
        /// The host.
        host: u32,
        /// Window number, from 0.
        window: u64,
        /// True time the window starts.
        from_t: i64,
        /// True time the window ends (exclusive).
        to_t: i64,
        /// Measurement error of the offset (ns, any sign).
        error_ns: i64,
        /// Stated uncertainty (≥ |error|).
        uncertainty_ns: i64,
        /// Round-trip time of the probe.
        rtt_ns: i64,
    },
    /// An attempt was first scheduled: its queueing span ends.
    Scheduled {
        /// The host.
        host: u32,
        /// Which attempt.
        attempt: AttemptId,
        /// True time it reached the engine.
        arrival_t: i64,
        /// True time of its first step.
        scheduled_t: i64,
    },
    /// An engine step.
    Step(Box<Step>),
    /// An attempt ended.
    AttemptEnd(AttemptEnd),
    /// A logical request ended.
    RequestEnd(RequestEnd),
}
