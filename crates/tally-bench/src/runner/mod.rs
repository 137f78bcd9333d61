//! A whole benchmark run: preflight, warm-up, the measured phase and its drain, then the
//! summary. Phases and windows are defined in `docs/bench.md`:
//!
//! * count mode (`--requests N`, no `--duration`): an optional warm-up phase (`--warmup-requests
//!   K` or `--warmup D`) runs and drains first; the window is the phase (closed loop: start → end
//!   of drain; open loop: the scheduled window);
//! * duration mode (`--duration D`): the load runs continuously through `--warmup W` and the
//!   window [W, W + D); closed loops count events inside the window, open loops the arrival
//!   cohort scheduled in it. `--warmup-requests K` still runs as its own phase first.

mod closed;
mod open;
pub mod progress;
mod request;
pub mod stop;

use std::sync::Arc;
use std::time::Duration;

pub use progress::{Progress, ProgressState};
pub use request::request_id;
pub use stop::StopHandle;

use crate::arrivals::{ArrivalModel, RngMode};
use crate::client::exchange::ExchangeContext;
use crate::client::{Endpoint, Pool, RunClock};
use crate::error::BenchError;
use crate::openai::Api;
use crate::record::{Phase, RequestRecord, Status};
use crate::summary::{RateRule, Slo, Summary, SummaryInput, summarize};
use crate::workload::WorkloadSpec;

/// What happens to an arrival when every in-flight slot is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overflow {
    /// Wait for a slot (the wait counts in its latency).
    Wait,
    /// Drop it (status `dropped`).
    Drop,
}

/// The load shape.
#[derive(Clone, Debug, PartialEq)]
pub enum Load {
    /// C workers.
    Closed {
        /// C.
        concurrency: u32,
    },
    /// A schedule.
    Open {
        /// Arrival model.
        model: ArrivalModel,
        /// Generator.
        rng: RngMode,
        /// In-flight limit.
        max_in_flight: u32,
        /// Overflow policy.
        overflow: Overflow,
    },
}

/// Everything a run needs.
#[derive(Clone, Debug)]
pub struct BenchConfig {
    /// Where.
    pub endpoint: Endpoint,
    /// `model`.
    pub model: String,
    /// Which API.
    pub api: Api,
    /// Bearer token.
    pub api_key: Option<String>,
    /// Load shape.
    pub load: Load,
    /// `--requests`.
    pub requests: Option<u64>,
    /// `--duration`.
    pub duration: Option<Duration>,
    /// `--warmup` (a duration).
    pub warmup: Option<Duration>,
    /// `--warmup-requests`.
    pub warmup_requests: Option<u64>,
    /// Prompts and lengths.
    pub workload: WorkloadSpec,
    /// Stream answers.
    pub stream: bool,
    /// Ask for the usage chunk.
    pub include_usage: bool,
    /// Send `ignore_eos`.
    pub ignore_eos: bool,
    /// Inactivity limit.
    pub timeout: Duration,
    /// Total limit per request.
    pub request_deadline: Option<Duration>,
    /// How long after the window cohort requests may run.
    pub drain_timeout: Duration,
    /// Exit 4 above this error fraction.
    pub max_error_fraction: f64,
    /// Goodput limits.
    pub slo: Option<Slo>,
    /// Trust content-chunk counts as token counts.
    pub allow_chunk_counts: bool,
    /// Reuse connections.
    pub keepalive: bool,
    /// Names this run in request ids and records.
    pub run_id: String,
    /// Extra request headers.
    pub headers: Vec<(String, String)>,
    /// Asks the run to stop early (a signal); see [`stop`].
    pub stop: StopHandle,
}

/// How a phase ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PhaseBound {
    /// N requests tagged `phase`.
    Count {
        /// N.
        requests: u64,
        /// The tag.
        phase: Phase,
    },
    /// Continuous: warm-up for `warm`, then the window.
    Duration {
        /// Warm-up before the window.
        warm: Duration,
        /// The window.
        window: Duration,
        /// An optional cap on requests.
        cap: Option<u64>,
    },
}

/// What a phase produced.
#[derive(Clone, Debug)]
pub struct PhaseResult {
    /// Its records.
    pub records: Vec<RequestRecord>,
    /// Phase start, run clock ns.
    pub start_ns: u64,
    /// Phase end (drained), run clock ns.
    pub end_ns: u64,
    /// Its measurement window.
    pub window_ns: (u64, u64),
    /// Open loop: the mean scheduled gap.
    pub mean_gap_ms: Option<f64>,
}

/// The state every request of a run shares.
#[derive(Debug)]
pub struct Shared {
    config: BenchConfig,
    ctx: ExchangeContext,
    tokens_per_word: f64,
    /// The preflight's E2E, seconds (sizes an open loop's warm pool).
    preflight_e2e_s: f64,
    progress: ProgressState,
}

/// What the preflight request found.
#[derive(Clone, Debug, PartialEq)]
pub struct Preflight {
    /// The server reported usage.
    pub usage: bool,
    /// Prompt tokens per word sent (1.0 without usage).
    pub tokens_per_word: f64,
    /// Its E2E, ms.
    pub e2e_ms: f64,
}

/// A finished run.
#[derive(Debug)]
pub struct RunReport {
    /// The run's clock.
    pub clock: RunClock,
    /// Every record (warm-up, measured, cool-down), by intended arrival.
    pub records: Vec<RequestRecord>,
    /// The measurement window.
    pub window_ns: (u64, u64),
    /// The measured phase's start and end.
    pub phase_ns: (u64, u64),
    /// The rate rule used.
    pub rule: RateRule,
    /// Preflight findings.
    pub preflight: Preflight,
    /// The figures.
    pub summary: Summary,
    /// The run was stopped early: when (run clock ns) and why (e.g. `SIGINT`).
    pub stopped_early: Option<(u64, String)>,
    /// The hypervisor's steal time during the measured phase, ms, all CPUs (`crate::steal`).
    pub steal_ms: Option<f64>,
}

fn preflight_failure(config: &BenchConfig, record: &RequestRecord) -> BenchError {
    let what = record
        .error_message
        .clone()
        .unwrap_or_else(|| record.status.name().to_owned());
    BenchError::Preflight {
        url: config.endpoint.display.clone(),
        message: what,
    }
}

async fn preflight(shared: &Shared) -> Result<Preflight, BenchError> {
    let config = &shared.config;
    let words = 16;
    let prompt = vec!["preflight"; words].join(" ");
    let body = crate::openai::RequestBody {
        model: &config.model,
        prompt: &prompt,
        max_tokens: 4,
        stream: config.stream,
        include_usage: config.include_usage,
        ignore_eos: config.ignore_eos,
    }
    .to_json(config.api);
    let clock = shared.ctx.clock;
    let mut record = RequestRecord::new(
        Phase::Warmup,
        0,
        format!("tally-{}-preflight", config.run_id),
        clock.now_ns(),
    );
    record.target_output_tokens = 4;
    let deadline = config.request_deadline.unwrap_or(config.timeout) + Duration::from_millis(100);
    let exchange = crate::client::exchange::execute(&shared.ctx, body.into(), &mut record);
    tokio::select! {
        answered = tokio::time::timeout(deadline, exchange) => {
            if answered.is_err() {
                record.status = Status::Timeout;
                record.error_message = Some("no answer within the timeout".into());
            }
        }
        () = config.stop.wait() => {
            let reason = config.stop.stopped().map(|(_, why)| why).unwrap_or_default();
            return Err(BenchError::Interrupted(reason));
        }
    }
    if record.status != Status::Ok {
        return Err(preflight_failure(config, &record));
    }
    let usage = record.prompt_tokens.is_some();
    let tokens_per_word = record
        .prompt_tokens
        .map_or(1.0, |t| (t as f64 / words as f64).max(0.05));
    Ok(Preflight {
        usage,
        tokens_per_word,
        e2e_ms: record.e2e_ms().unwrap_or(0.0),
    })
}

/// Dials, all at once, connections until `target` are idle (keep-alive only), before a phase
/// starts (docs/bench.md#connections). A failed dial is left to the request that needs the
/// connection: it dials again and reports it. A stop request ends the wait.
async fn warm_pool(shared: &Arc<Shared>, target: usize) {
    if !shared.ctx.pool.keepalive() {
        return;
    }
    let mut dials = tokio::task::JoinSet::new();
    for _ in shared.ctx.pool.idle_count()..target {
        let shared = shared.clone();
        dials.spawn(async move {
            let _ = shared.ctx.pool.dial_idle().await;
        });
    }
    tokio::select! {
        () = async { while dials.join_next().await.is_some() {} } => {}
        () = shared.config.stop.wait() => {}
    }
}

/// Aborts a spawned task when dropped: a cancelled run does not leave its dispatcher running.
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn run_phase(shared: &Arc<Shared>, bound: PhaseBound) -> Result<PhaseResult, BenchError> {
    match &shared.config.load {
        Load::Closed { concurrency } => Ok(closed::run(shared.clone(), *concurrency, bound).await),
        Load::Open {
            model,
            rng,
            max_in_flight,
            overflow,
        } => {
            let (count, total) = match bound {
                PhaseBound::Count { requests, .. } => (Some(requests), None),
                PhaseBound::Duration { warm, window, cap } => {
                    (cap, Some((warm + window).as_secs_f64()))
                }
            };
            let seed = shared.config.workload.seed;
            let schedule = model.schedule(seed, *rng, count, total)?;
            // On a runtime thread, not the caller's: each arrival's task then starts on the
            // thread that dispatched it, with no wake-up of another thread.
            let dispatcher = open::run(shared.clone(), schedule, *max_in_flight, *overflow, bound);
            let dispatcher = tokio::spawn(dispatcher);
            let _cancel = AbortOnDrop(dispatcher.abort_handle());
            dispatcher
                .await
                .map_err(|err| BenchError::Runtime(std::io::Error::other(err)))
        }
    }
}

/// A callback for the progress line.
pub type ProgressCallback = Arc<dyn Fn(&Progress) + Send + Sync>;

/// Runs the benchmark. `on_progress` is called about twice a second while it runs.
pub async fn run(
    config: BenchConfig,
    on_progress: Option<ProgressCallback>,
) -> Result<RunReport, BenchError> {
    if config.requests.is_none() && config.duration.is_none() {
        return Err(
            crate::SpecError::new("bounds", "give --requests N and/or --duration D").into(),
        );
    }
    let addr = config
        .endpoint
        .resolve()
        .await
        .map_err(|message| BenchError::Preflight {
            url: config.endpoint.display.clone(),
            message,
        })?;
    let clock = RunClock::start();
    let ctx = ExchangeContext {
        pool: Pool::new(
            addr,
            config.keepalive,
            config.timeout.min(Duration::from_secs(10)),
        ),
        authority: config.endpoint.authority.clone(),
        path: format!("{}{}", config.endpoint.base_path, config.api.path()),
        api_key: config.api_key.clone(),
        clock,
        inactivity: config.timeout,
        stream: config.stream,
        extra_headers: config.headers.clone(),
    };
    let mut shared = Shared {
        config,
        ctx,
        tokens_per_word: 1.0,
        preflight_e2e_s: 0.0,
        progress: ProgressState::new(),
    };
    let preflight = preflight(&shared).await?;
    shared.tokens_per_word = preflight.tokens_per_word;
    shared.preflight_e2e_s = preflight.e2e_ms / 1e3;
    let shared = Arc::new(shared);
    let ticker = on_progress.map(|callback| {
        let shared = shared.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(500)).await;
                callback(&shared.progress.snapshot());
            }
        })
    });
    let config = &shared.config;
    let mut records = Vec::new();
    if let Some(k) = config.warmup_requests.filter(|&k| k > 0) {
        let warm = run_phase(
            &shared,
            PhaseBound::Count {
                requests: k,
                phase: Phase::Warmup,
            },
        )
        .await?;
        records.extend(warm.records);
    }
    let measured_bound = match config.duration {
        Some(window) => PhaseBound::Duration {
            warm: config.warmup.unwrap_or(Duration::ZERO),
            window,
            cap: config.requests,
        },
        None => {
            if let Some(warm) = config.warmup.filter(|w| !w.is_zero()) {
                let bound = PhaseBound::Duration {
                    warm,
                    window: Duration::ZERO,
                    cap: None,
                };
                let warm = run_phase(&shared, bound).await?;
                records.extend(warm.records);
            }
            PhaseBound::Count {
                requests: config.requests.unwrap_or(0),
                phase: Phase::Measured,
            }
        }
    };
    let steal_before = crate::steal::steal_ms_now();
    let measured = run_phase(&shared, measured_bound).await?;
    let steal_ms = steal_before
        .zip(crate::steal::steal_ms_now())
        .map(|(before, after)| (after - before).max(0.0));
    if let Some(ticker) = ticker {
        ticker.abort();
    }
    records.extend(measured.records);
    if let Some((_, reason)) = config.stop.stopped()
        && !records.iter().any(|r| r.phase == Phase::Measured)
    {
        return Err(BenchError::Interrupted(reason));
    }
    records.sort_by_key(|r| (r.intended_ns, r.index));
    let closed = matches!(config.load, Load::Closed { .. });
    let rule = if closed && config.duration.is_some() {
        RateRule::EventsInWindow
    } else {
        RateRule::Cohort
    };
    let summary = summarize(&SummaryInput {
        records: &records,
        window_ns: measured.window_ns,
        rule,
        slo: config.slo,
        allow_chunk_counts: config.allow_chunk_counts,
        open_loop_mean_gap_ms: measured.mean_gap_ms,
        max_error_fraction: config.max_error_fraction,
    });
    let stopped_early = config
        .stop
        .stopped()
        .map(|(at, why)| (shared.ctx.clock.ns(at), why));
    Ok(RunReport {
        stopped_early,
        steal_ms,
        clock: shared.ctx.clock,
        records,
        window_ns: measured.window_ns,
        phase_ns: (measured.start_ns, measured.end_ns),
        rule,
        preflight,
        summary,
    })
}

/// A config with the defaults of `tally bench openai` for `url` and `model` (tests start here).
pub fn default_config(endpoint: Endpoint, model: &str) -> BenchConfig {
    BenchConfig {
        endpoint,
        model: model.to_owned(),
        api: Api::Chat,
        api_key: None,
        load: Load::Closed { concurrency: 1 },
        requests: Some(10),
        duration: None,
        warmup: None,
        warmup_requests: None,
        workload: WorkloadSpec {
            input_len: crate::dist::LengthDist::Fixed(512),
            output_len: crate::dist::LengthDist::Fixed(128),
            prompt: crate::workload::PromptMode::Unique,
            seed: 0,
        },
        stream: true,
        include_usage: true,
        ignore_eos: false,
        timeout: Duration::from_secs(60),
        request_deadline: None,
        drain_timeout: Duration::from_secs(60),
        max_error_fraction: 0.01,
        slo: None,
        allow_chunk_counts: false,
        keepalive: true,
        run_id: "run".into(),
        headers: Vec::new(),
        stop: StopHandle::new(),
    }
}
