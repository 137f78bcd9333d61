//! `tally bench openai`: builds the run from the flags, runs it on a small runtime, prints the
//! METRIC lines on stdout and everything else on stderr (a progress line on a terminal, the
//! summary table, notes), writes `--out`, and maps the outcome to exit 0, 2, 3 or 4 — or, when a
//! signal stopped the run early, to 130, 143 or 129 after printing what completed.

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tally_bench::arrivals::{ArrivalModel, RngMode, read_replay};
use tally_bench::client::{Endpoint, scrub, scrub_userinfo};
use tally_bench::dist::LengthDist;
use tally_bench::openai::Api;
use tally_bench::output::{RunHeader, metric_lines, summary_text, write_jsonl};
use tally_bench::runner::{BenchConfig, Load, Overflow, Progress, ProgressCallback, StopHandle};
use tally_bench::summary::{Slo, Untrustworthy};
use tally_bench::workload::{PromptMode, WorkloadSpec};
use tally_bench::{BenchError, SpecError};

use super::args::{ApiArg, ArrivalsArg, OpenaiArgs, OverflowArg, RngArg};
use super::{parse_duration, usage};
use crate::exit::Status;
use crate::printer;

fn parse_flag_duration(flag: &str, text: Option<&String>) -> Result<Option<Duration>, SpecError> {
    text.map(|t| parse_duration(t).map_err(|message| SpecError::new(flag, message)))
        .transpose()
}

fn seconds(flag: &str, value: f64) -> Result<Duration, SpecError> {
    if value.is_finite() && value > 0.0 {
        Ok(Duration::from_secs_f64(value))
    } else {
        Err(SpecError::new(flag, "must be a positive number of seconds"))
    }
}

fn load(args: &OpenaiArgs) -> Result<(Load, String), SpecError> {
    let open = args.rate.is_some() || args.arrivals.is_some();
    if !open {
        let c = args.concurrency.unwrap_or(1).max(1);
        return Ok((Load::Closed { concurrency: c }, format!("closed:{c}")));
    }
    let rate = args.rate;
    let need_rate = || {
        rate.filter(|r| r.is_finite() && *r > 0.0).ok_or_else(|| {
            SpecError::new("--rate", "a positive rate is needed for this arrival model")
        })
    };
    let kind = args.arrivals.unwrap_or(ArrivalsArg::Poisson);
    let model = match kind {
        ArrivalsArg::Fixed => ArrivalModel::Fixed { rate: need_rate()? },
        ArrivalsArg::Poisson => ArrivalModel::Poisson { rate: need_rate()? },
        ArrivalsArg::Gamma => {
            if args.burstiness.is_nan() || args.burstiness <= 0.0 {
                return Err(SpecError::new("--burstiness", "must be positive"));
            }
            ArrivalModel::Gamma {
                rate: need_rate()?,
                burstiness: args.burstiness,
            }
        }
        ArrivalsArg::Burst => {
            let size = args
                .burst_size
                .filter(|&b| b > 0)
                .ok_or_else(|| SpecError::new("--burst-size", "required by --arrivals burst"))?;
            let interval = parse_flag_duration("--burst-interval", args.burst_interval.as_ref())?
                .filter(|d| !d.is_zero())
                .ok_or_else(|| {
                    SpecError::new("--burst-interval", "required by --arrivals burst")
                })?;
            ArrivalModel::Burst {
                size,
                interval: interval.as_secs_f64(),
            }
        }
        ArrivalsArg::Replay => {
            let path = args.arrivals_file.as_ref().ok_or_else(|| {
                SpecError::new("--arrivals-file", "required by --arrivals replay")
            })?;
            ArrivalModel::Replay {
                offsets: read_replay(path)?,
            }
        }
    };
    let rng = match args.rng {
        RngArg::Tally => RngMode::Tally,
        RngArg::Stormlog => RngMode::Stormlog,
    };
    let overflow = match args.overflow {
        OverflowArg::Wait => Overflow::Wait,
        OverflowArg::Drop => Overflow::Drop,
    };
    let name = format!("{kind:?}").to_lowercase();
    let described = format!("{name}:{}", rate.map_or("-".into(), |r| r.to_string()));
    Ok((
        Load::Open {
            model,
            rng,
            max_in_flight: args.max_in_flight.max(1),
            overflow,
        },
        described,
    ))
}

fn default_run_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    format!(
        "{:08x}",
        tally_bench::rng::mix64(nanos ^ u64::from(std::process::id())) as u32
    )
}

fn build(
    args: &OpenaiArgs,
    api_key: Option<String>,
) -> Result<(BenchConfig, RunHeader), SpecError> {
    let endpoint = Endpoint::parse(&args.url)?;
    let (load, arrivals) = load(args)?;
    let requests = args.requests;
    let duration = parse_flag_duration("--duration", args.duration.as_ref())?;
    if requests.is_none() && duration.is_none() {
        return Err(SpecError::new(
            "bounds",
            "give --requests N and/or --duration D",
        ));
    }
    if !(0.0..=1.0).contains(&args.max_error_fraction) {
        return Err(SpecError::new("--max-error-fraction", "must be in 0..1"));
    }
    let slo = args.slo.as_deref().map(Slo::parse).transpose()?;
    if args.no_stream && slo.is_some_and(|s| s.ttft_ms.is_some()) {
        return Err(SpecError::new(
            "--slo",
            "a TTFT limit needs streamed answers",
        ));
    }
    let headers = args
        .headers
        .iter()
        .map(|h| {
            h.split_once(':')
                .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
                .filter(|(n, _)| !n.is_empty())
                .ok_or_else(|| SpecError::new(h, "expected NAME:VALUE"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let workload = WorkloadSpec {
        input_len: LengthDist::parse(&args.input_len)?,
        output_len: LengthDist::parse_output(&args.output_len)?,
        prompt: PromptMode::parse(&args.prompt)?,
        seed: args.seed,
    };
    let timeout = seconds("--timeout", args.timeout)?;
    let run_id = args.run_id.clone().unwrap_or_else(default_run_id);
    let api = match args.api {
        ApiArg::Chat => Api::Chat,
        ApiArg::Completions => Api::Completions,
    };
    let config = BenchConfig {
        endpoint: endpoint.clone(),
        model: args.model.clone(),
        api,
        api_key: api_key.clone(),
        load,
        requests,
        duration,
        warmup: parse_flag_duration("--warmup", args.warmup.as_ref())?,
        warmup_requests: args.warmup_requests,
        workload,
        stream: !args.no_stream,
        include_usage: !args.no_stream_usage,
        ignore_eos: args.ignore_eos,
        timeout,
        request_deadline: args
            .request_deadline
            .map(|s| seconds("--request-deadline", s))
            .transpose()?,
        drain_timeout: args
            .drain_timeout
            .map(|s| seconds("--drain-timeout", s))
            .transpose()?
            .unwrap_or(timeout),
        max_error_fraction: args.max_error_fraction,
        slo,
        allow_chunk_counts: args.allow_chunk_counts,
        keepalive: !args.no_keepalive,
        run_id: run_id.clone(),
        headers,
        stop: StopHandle::new(),
    };
    let argv: Vec<String> = std::env::args()
        .map(|a| scrub(&scrub_userinfo(&a), api_key.as_deref()))
        .collect();
    let header = RunHeader {
        run_id,
        tally_version: env!("CARGO_PKG_VERSION").into(),
        argv,
        endpoint: endpoint.display,
        model: args.model.clone(),
        api: api.name().into(),
        stream: !args.no_stream,
        arrivals,
        workload: json!({
            "arrivals": format!("{:?}", config.load),
            "input_len": args.input_len, "output_len": args.output_len, "prompt": args.prompt,
            "ignore_eos": args.ignore_eos, "requests": args.requests, "duration": args.duration,
            "warmup": args.warmup, "warmup_requests": args.warmup_requests, "seed": args.seed,
        }),
        seed: args.seed,
        record_gaps: args.record_gaps,
    };
    Ok((config, header))
}

fn draw_progress(progress: &Progress) {
    let cell = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.1}"));
    let line = format!(
        "\r{:>7.1}s  done {:>8}  in flight {:>5}  {:>9.1} req/s  e2e p50 {:>8} ms  p99 {:>8} ms ",
        progress.elapsed_s,
        progress.done,
        progress.in_flight,
        progress.rate,
        cell(progress.p50_ms),
        cell(progress.p99_ms)
    );
    let mut stderr = std::io::stderr().lock();
    let _ = std::io::Write::write_all(&mut stderr, line.as_bytes());
}

/// The first of SIGINT, SIGTERM, SIGHUP that arrived (0: none yet).
struct FirstSignal(Arc<std::sync::atomic::AtomicI32>);

impl FirstSignal {
    fn signal(&self) -> i32 {
        match self.0.load(std::sync::atomic::Ordering::SeqCst) {
            0 => signal_hook::consts::SIGINT,
            signal => signal,
        }
    }
}

/// From here on, SIGINT, SIGTERM and SIGHUP ask the run to stop early instead of killing the
/// process (docs/bench.md#interrupt); a second one cancels the requests still in flight.
fn stop_on_signals(stop: &StopHandle) -> FirstSignal {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let first = Arc::new(std::sync::atomic::AtomicI32::new(0));
    if let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) {
        let (stop, seen) = (stop.clone(), first.clone());
        std::thread::spawn(move || {
            for signal in signals.forever() {
                let _ = seen.compare_exchange(
                    0,
                    signal,
                    std::sync::atomic::Ordering::SeqCst,
                    std::sync::atomic::Ordering::SeqCst,
                );
                let name = match signal {
                    SIGTERM => "SIGTERM",
                    SIGHUP => "SIGHUP",
                    _ => "SIGINT",
                };
                stop.request(name);
            }
        });
    }
    FirstSignal(first)
}

/// Runs `tally bench openai`.
pub fn run(args: &OpenaiArgs) -> anyhow::Result<Status> {
    let api_key = match &args.api_key_env {
        Some(var) => match std::env::var(var) {
            Ok(key) if !key.is_empty() => Some(key),
            _ => return usage(&format!("--api-key-env {var}: the variable is not set")),
        },
        None => None,
    };
    let (config, header) = match build(args, api_key.clone()) {
        Ok(built) => built,
        Err(err) => return usage(&scrub(&err.to_string(), api_key.as_deref())),
    };
    let threads = args.threads.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .clamp(1, 4)
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.max(1))
        .enable_all()
        .build()
        .map_err(BenchError::Runtime)?;
    let interrupted = stop_on_signals(&config.stop);
    let terminal = std::io::stderr().is_terminal();
    let on_progress: Option<ProgressCallback> =
        terminal.then(|| Arc::new(draw_progress) as ProgressCallback);
    let result = runtime.block_on(tally_bench::runner::run(config, on_progress));
    runtime.shutdown_background();
    if terminal {
        printer::note("");
    }
    let report = match result {
        Ok(report) => report,
        Err(BenchError::Usage(err)) => return usage(&err.to_string()),
        Err(err @ BenchError::Interrupted(_)) => {
            printer::error(&err.to_string());
            return Ok(Status::Interrupted(interrupted.signal()));
        }
        Err(err @ BenchError::Preflight { .. }) => {
            printer::error(&scrub(&err.to_string(), api_key.as_deref()));
            return Ok(Status::PreflightFailed);
        }
        Err(err) => return Err(err.into()),
    };
    if let Some(path) = &args.out {
        let file =
            std::fs::File::create(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        let mut out = std::io::BufWriter::new(file);
        write_jsonl(&mut out, &header, &report)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    }
    printer::note(&summary_text(&report));
    let mut stdout = String::new();
    for line in metric_lines(&report.summary) {
        stdout.push_str(&line);
        stdout.push('\n');
    }
    printer::out(&stdout)?;
    if report.stopped_early.is_some() {
        return Ok(Status::Interrupted(interrupted.signal()));
    }
    if report.summary.untrustworthy.is_empty() {
        return Ok(Status::Success);
    }
    for reason in &report.summary.untrustworthy {
        let machine = match (reason, report.steal_ms) {
            (Untrustworthy::ClientSaturated { .. }, Some(steal)) if steal > 0.0 => format!(
                " (the hypervisor took {steal:.0} ms of this machine's CPU meanwhile: the lateness may be the host's; docs/bench.md#exit-4)"
            ),
            _ => String::new(),
        };
        printer::error(&format!("the run is not trustworthy: {reason}{machine}"));
    }
    Ok(Status::Untrustworthy)
}
