//! Helpers of the integration tests: a fake server with exact timing, a run config aimed at it,
//! and a runtime shaped like the command's.
#![allow(dead_code)]

use std::time::Duration;

use tally_bench::client::Endpoint;
use tally_bench::dist::{LengthDist, TimeDist};
use tally_bench::fake::{FakeConfig, FakeServer, StreamShape, Timing};
use tally_bench::runner::{BenchConfig, Load, RunReport, default_config, run};

/// The client's runtime: two workers, as on the 2-core CI machine.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A fake server with constant TTFT and gap (ms).
pub fn exact_server(ttft_ms: f64, gap_ms: f64, shape: StreamShape) -> FakeServer {
    FakeServer::start_local(FakeConfig {
        timing: Timing::Exact {
            ttft: TimeDist::Const(ttft_ms),
            gap: TimeDist::Const(gap_ms),
        },
        shape,
        ..FakeConfig::default()
    })
    .unwrap()
}

/// A server from a config.
pub fn server(config: FakeConfig) -> FakeServer {
    FakeServer::start_local(config).unwrap()
}

/// A closed loop of `requests` at `concurrency`, 8-token prompts, `output` tokens, ignore_eos.
pub fn config(server: &FakeServer, requests: u64, concurrency: u32, output: u64) -> BenchConfig {
    let mut config = default_config(Endpoint::parse(&server.base_url()).unwrap(), "fake-model");
    config.load = Load::Closed { concurrency };
    config.requests = Some(requests);
    config.workload.input_len = LengthDist::Fixed(8);
    config.workload.output_len = LengthDist::Fixed(output);
    config.ignore_eos = true;
    config.timeout = Duration::from_secs(10);
    config
}

/// Runs a config to its report.
pub fn bench(config: BenchConfig) -> RunReport {
    runtime().block_on(run(config, None)).unwrap()
}

/// A printed metric.
pub fn metric(report: &RunReport, name: &str) -> f64 {
    report
        .summary
        .metrics
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| *v)
        .unwrap_or_else(|| panic!("no metric {name}: {:?}", report.summary.metrics))
}

/// Asserts lo ≤ value ≤ hi with a readable message.
pub fn within(name: &str, value: f64, lo: f64, hi: f64) {
    assert!(
        value >= lo && value <= hi,
        "{name} = {value}, expected in [{lo}, {hi}]"
    );
}

/// How much the timing tolerances stretch: 1 on a machine no busier than its cores (CI runs
/// alone), and when the one-minute load average exceeds the number of cores, 4 or the load per
/// core if larger — then every thread, client and server alike, waits its turn for
/// milliseconds (a runnable thread waits about one time slice per other runnable thread on its
/// core), and only the structure of a result (not its sub-millisecond precision) can be
/// checked without flaking.
pub fn slack() -> f64 {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get()) as f64;
    let load: f64 = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| text.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0);
    if load > cores {
        (load / cores).max(4.0)
    } else {
        1.0
    }
}

/// Asserts `want − below·slack ≤ value ≤ want + above·slack` (see [`slack`]).
pub fn near(name: &str, value: f64, want: f64, below: f64, above: f64) {
    let slack = slack();
    within(name, value, want - below * slack, want + above * slack);
}
