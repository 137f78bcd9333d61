//! Measures the client against the fake server in two processes (docs/performance.md, "bench"):
//!
//! ```text
//! cargo run --release -p tally-bench --example loadgen -- server [THREADS]
//! cargo run --release -p tally-bench --example loadgen -- closed URL C N
//! cargo run --release -p tally-bench --example loadgen -- open URL RATE SECONDS
//! ```
//!
//! The server streams 4 tokens after a 1 ms TTFT with no gap (`GAP_MS` in its environment sets
//! one); the client reports requests per
//! second, its p99 dispatch lag, and its own CPU seconds per 1,000 requests (from
//! `/proc/self/stat`, so the server's CPU is not counted).
#![allow(clippy::print_stdout, clippy::print_stderr, missing_docs)]

use std::time::{Duration, Instant};

use tally_bench::arrivals::{ArrivalModel, RngMode};
use tally_bench::client::Endpoint;
use tally_bench::dist::{LengthDist, TimeDist};
use tally_bench::fake::{FakeConfig, FakeServer, Timing};
use tally_bench::runner::{Load, Overflow, default_config, run};

fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("server") => {
            let threads = args.get(1).and_then(|t| t.parse().ok()).unwrap_or(1);
            let gap_ms = std::env::var("GAP_MS")
                .ok()
                .and_then(|g| g.parse().ok())
                .unwrap_or(0.0);
            let server = FakeServer::start_local(FakeConfig {
                timing: Timing::Exact {
                    ttft: TimeDist::Const(1.0),
                    gap: TimeDist::Const(gap_ms),
                },
                threads,
                ..FakeConfig::default()
            })
            .unwrap();
            println!("{}", server.base_url());
            loop {
                std::thread::park();
            }
        }
        Some(mode @ ("closed" | "open")) => {
            let url = &args[1];
            let a: f64 = args[2].parse().unwrap();
            let b: f64 = args[3].parse().unwrap();
            let mut config = default_config(Endpoint::parse(url).unwrap(), "fake-model");
            config.workload.input_len = LengthDist::Fixed(16);
            config.workload.output_len = LengthDist::Fixed(4);
            config.ignore_eos = true;
            config.warmup_requests = Some(200);
            if mode == "closed" {
                config.load = Load::Closed {
                    concurrency: a as u32,
                };
                config.requests = Some(b as u64);
            } else {
                config.load = Load::Open {
                    model: ArrivalModel::Fixed { rate: a },
                    rng: RngMode::Tally,
                    max_in_flight: 1024,
                    overflow: Overflow::Wait,
                };
                config.requests = None;
                config.duration = Some(Duration::from_secs_f64(b));
            }
            let threads = std::env::var("THREADS")
                .ok()
                .and_then(|t| t.parse().ok())
                .unwrap_or(2);
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(threads)
                .enable_all()
                .build()
                .unwrap();
            let cpu0 = cpu_seconds();
            let start = Instant::now();
            let report = runtime.block_on(run(config, None)).unwrap();
            let wall = start.elapsed().as_secs_f64();
            let cpu = cpu_seconds() - cpu0;
            let metric = |name: &str| {
                report
                    .summary
                    .metrics
                    .iter()
                    .find(|(n, _)| n == name)
                    .map_or(f64::NAN, |(_, v)| *v)
            };
            let requests = report.records.len() as f64;
            println!(
                "{mode} {a} {b}: {:.0} req/s in the window, ok {} of {}, ttft p50 {:.3} ms, e2e p50 {:.3} ms, dispatch lag p99 {:.3} ms, client CPU {:.3} s per 1,000 requests ({:.1} s wall)",
                metric("requests_per_s"),
                report.summary.ok,
                report.summary.offered,
                metric("ttft_p50_ms"),
                metric("e2e_p50_ms"),
                metric("dispatch_lag_p99_ms"),
                cpu / requests * 1000.0,
                wall
            );
        }
        _ => eprintln!("usage: loadgen server [THREADS] | closed URL C N | open URL RATE SECONDS"),
    }
}
