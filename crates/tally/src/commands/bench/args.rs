//! The command line of `tally bench` (clap derive), kept beside the command rather than in
//! `cli.rs` so the bench's many flags stay in one place.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

/// `tally bench ...`
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Drive an OpenAI-compatible endpoint and print METRIC lines (docs/bench.md).
    Openai(Box<OpenaiArgs>),
    /// Serve a fake OpenAI-compatible endpoint with known timing (tests, demos).
    FakeServer(Box<FakeServerArgs>),
    /// Turn a run's per-request JSONL into evidence records.
    Convert(ConvertArgs),
}

/// Chat or completions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ApiArg {
    /// `POST /chat/completions`.
    Chat,
    /// `POST /completions`.
    Completions,
}

/// Open-loop arrival models.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ArrivalsArg {
    /// t_k = k/rate.
    Fixed,
    /// Exponential gaps.
    Poisson,
    /// Gamma gaps (`--burstiness`).
    Gamma,
    /// Bursts of `--burst-size` every `--burst-interval`.
    Burst,
    /// Offsets from `--arrivals-file`.
    Replay,
}

/// Random generator of schedules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RngArg {
    /// tally's SplitMix64.
    Tally,
    /// CPython's MT19937, as stormlog draws.
    Stormlog,
}

/// Overflow policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OverflowArg {
    /// Wait for a slot (the wait counts in latency).
    Wait,
    /// Drop the request.
    Drop,
}

/// `tally bench openai`
#[derive(Debug, Args)]
pub struct OpenaiArgs {
    /// The OpenAI base URL, e.g. http://127.0.0.1:8000/v1.
    #[arg(long, value_name = "BASE")]
    pub url: String,
    /// The model name sent with every request.
    #[arg(long, value_name = "NAME")]
    pub model: String,
    /// Which API to drive.
    #[arg(long, value_enum, default_value_t = ApiArg::Chat)]
    pub api: ApiArg,
    /// Read the API key from this environment variable (never printed).
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// Closed loop: this many requests in flight, each sent when the previous one ended.
    #[arg(long, value_name = "C", conflicts_with = "rate")]
    pub concurrency: Option<u32>,
    /// Open loop: arrivals per second.
    #[arg(long, value_name = "R")]
    pub rate: Option<f64>,
    /// Open-loop arrival model.
    #[arg(long, value_enum, value_name = "MODEL")]
    pub arrivals: Option<ArrivalsArg>,
    /// Gamma shape β (1 = Poisson, < 1 burstier).
    #[arg(long, default_value_t = 1.0, value_name = "B")]
    pub burstiness: f64,
    /// Requests per burst.
    #[arg(long, value_name = "N")]
    pub burst_size: Option<u64>,
    /// Time between bursts (`500ms`, `1s`).
    #[arg(long, value_name = "D")]
    pub burst_interval: Option<String>,
    /// JSONL of `{"offset_ms": x}` lines, or an earlier run's `--out` file.
    #[arg(long, value_name = "FILE")]
    pub arrivals_file: Option<PathBuf>,
    /// Generator of random schedules.
    #[arg(long, value_enum, default_value_t = RngArg::Tally)]
    pub rng: RngArg,
    /// Open loop: most requests in flight.
    #[arg(long, default_value_t = 128, value_name = "M")]
    pub max_in_flight: u32,
    /// Open loop: what happens to an arrival when all slots are taken.
    #[arg(long, value_enum, default_value_t = OverflowArg::Wait)]
    pub overflow: OverflowArg,
    /// Measured requests (count mode), or a cap with --duration.
    #[arg(long, value_name = "N")]
    pub requests: Option<u64>,
    /// Length of the measurement window (`60s`, `2m`); load continues until its cohort ends.
    #[arg(long, value_name = "D")]
    pub duration: Option<String>,
    /// Warm-up time before the window (duration mode) or before the count phase.
    #[arg(long, value_name = "D")]
    pub warmup: Option<String>,
    /// Warm-up requests, run and drained before the measured phase.
    #[arg(long, value_name = "K")]
    pub warmup_requests: Option<u64>,
    /// Prompt length in tokens: fixed:N, uniform:A..B, normal:M,SD (or normal:M,SD,MIN,MAX),
    /// lognormal:MED,S (or lognormal:MED,S,MIN,MAX), file:PATH.
    #[arg(long, default_value = "fixed:512", value_name = "DIST")]
    pub input_len: String,
    /// Output length (max_tokens), same forms.
    #[arg(long, default_value = "fixed:128", value_name = "DIST")]
    pub output_len: String,
    /// Send `ignore_eos: true` so every answer has its planned length.
    #[arg(long)]
    pub ignore_eos: bool,
    /// unique, shared-prefix:RATIO,GROUPS, or repeat.
    #[arg(long, default_value = "unique", value_name = "MODE")]
    pub prompt: String,
    /// Seed of the workload and the schedule.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Seconds without a byte before a request times out.
    #[arg(long, default_value_t = 60.0, value_name = "S")]
    pub timeout: f64,
    /// Total seconds a request may take.
    #[arg(long, value_name = "S")]
    pub request_deadline: Option<f64>,
    /// Seconds after the window that measured requests may still run (default: --timeout).
    #[arg(long, value_name = "S")]
    pub drain_timeout: Option<f64>,
    /// Exit 4 when more than this fraction of measured requests failed.
    #[arg(long, default_value_t = 0.01, value_name = "F")]
    pub max_error_fraction: f64,
    /// Goodput limits: ttft:MS,tpot:MS,e2e:MS (any subset).
    #[arg(long, value_name = "SPEC")]
    pub slo: Option<String>,
    /// Count content chunks as tokens when the server reports no usage.
    #[arg(long)]
    pub allow_chunk_counts: bool,
    /// Ask for whole answers instead of streams (no TTFT).
    #[arg(long)]
    pub no_stream: bool,
    /// Do not send stream_options.include_usage.
    #[arg(long)]
    pub no_stream_usage: bool,
    /// A new connection for every request.
    #[arg(long)]
    pub no_keepalive: bool,
    /// An extra request header NAME:VALUE (repeatable).
    #[arg(long = "header", value_name = "NAME:VALUE")]
    pub headers: Vec<String>,
    /// Write the per-request JSONL here.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// With --out: write every chunk gap of every request.
    #[arg(long)]
    pub record_gaps: bool,
    /// The run id in request ids and records (default: derived from time and pid).
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
    /// Client runtime threads (default: up to 4, at most the cores).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
}

/// Timing mode of the fake server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// TTFT and token gap from distributions, on absolute deadlines.
    Exact,
    /// A continuous-batching engine.
    Batched,
}

/// Usage chunk policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum UsageArg {
    /// When the request asks.
    Requested,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// `tally bench fake-server`
#[derive(Debug, Args)]
pub struct FakeServerArgs {
    /// Address to bind (loopback unless --allow-remote).
    #[arg(long, default_value = "127.0.0.1:0", value_name = "ADDR")]
    pub listen: String,
    /// Allow a non-loopback address.
    #[arg(long)]
    pub allow_remote: bool,
    /// Also write the base URL to this file.
    #[arg(long, value_name = "FILE")]
    pub address_file: Option<PathBuf>,
    /// Timing mode.
    #[arg(long, value_enum, default_value_t = ModeArg::Exact)]
    pub mode: ModeArg,
    /// exact: time to first token, ms (const:MS, uniform:A..B, normal:M,S, lognormal:MED,S, exp:MEAN).
    #[arg(long, default_value = "const:50", value_name = "DIST")]
    pub ttft: String,
    /// exact: gap between tokens, ms.
    #[arg(long, default_value = "const:10", value_name = "DIST")]
    pub gap: String,
    /// batched: fixed cost of one iteration, ms.
    #[arg(long, default_value_t = 2.0, value_name = "MS")]
    pub step_base: f64,
    /// batched: cost per running sequence, ms.
    #[arg(long, default_value_t = 0.25, value_name = "MS")]
    pub step_per_seq: f64,
    /// batched: cost per prompt token admitted, ms.
    #[arg(long, default_value_t = 0.002, value_name = "MS")]
    pub prefill_per_token: f64,
    /// batched: most running sequences.
    #[arg(long, default_value_t = 64, value_name = "N")]
    pub max_batch: usize,
    /// Tokens per chunk after the first.
    #[arg(long, default_value_t = 1, value_name = "K")]
    pub tokens_per_chunk: u64,
    /// Send a role-only first chunk at once.
    #[arg(long)]
    pub role_chunk: bool,
    /// Send `: ping` comments.
    #[arg(long)]
    pub ping: bool,
    /// End lines with CRLF.
    #[arg(long)]
    pub crlf: bool,
    /// Split every event into two writes at this byte.
    #[arg(long, value_name = "N")]
    pub split_at: Option<usize>,
    /// When to send the usage chunk.
    #[arg(long, value_enum, default_value_t = UsageArg::Requested)]
    pub usage: UsageArg,
    /// Seeded EOS length without ignore_eos (a length DIST); default: always max_tokens.
    #[arg(long, value_name = "DIST")]
    pub eos: Option<String>,
    /// A fault at a rate, SPEC@RATE (status:500@0.01, cut:after=3@0.05, …); repeatable.
    #[arg(long = "fault", value_name = "SPEC@RATE")]
    pub faults: Vec<String>,
    /// Emit nothing for a while: at=SECONDS,ms=MS after the start.
    #[arg(long, value_name = "SPEC")]
    pub pause: Option<String>,
    /// The first N requests get extra TTFT: first=N,ms=MS.
    #[arg(long, value_name = "SPEC")]
    pub cold: Option<String>,
    /// Seed of every per-request draw.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The model name served.
    #[arg(long, default_value = "fake-model")]
    pub model: String,
    /// Runtime worker threads.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
}

/// `tally bench convert`
#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// A run's per-request JSONL (`tally bench openai --out`).
    #[arg(long, value_name = "RUN.jsonl")]
    pub evidence: PathBuf,
    /// The evidence artifact to write.
    #[arg(short = 'o', long = "output", value_name = "EVIDENCE.jsonl")]
    pub output: PathBuf,
}
