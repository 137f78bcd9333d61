//! Every failure mode → its status (docs/bench.md, "Failures"), one fault each, forced on the
//! fake server by the `x-fake-fault` header; then seeded faults in a whole run: the error
//! fraction is exact, penalised quantiles move, and exit-4 conditions are reported.

mod common;

use std::time::Duration;

use common::*;
use tally_bench::client::exchange::{ExchangeContext, execute};
use tally_bench::client::{Pool, RunClock};
use tally_bench::fake::{FakeConfig, SeededFault, StreamShape, faults};
use tally_bench::openai::{Api, RequestBody};
use tally_bench::record::{Phase, RequestRecord, Status};
use tally_bench::summary::Untrustworthy;

/// Sends one request with `x-fake-fault: fault` (none when empty) and returns its record.
fn one(addr: std::net::SocketAddr, fault: &str, inactivity: Duration) -> RequestRecord {
    runtime().block_on(async {
        let mut extra_headers = Vec::new();
        if !fault.is_empty() {
            extra_headers.push(("x-fake-fault".to_owned(), fault.to_owned()));
        }
        let ctx = ExchangeContext {
            pool: Pool::new(addr, true, Duration::from_secs(2)),
            authority: addr.to_string(),
            path: "/v1/chat/completions".into(),
            api_key: Some("sk-test-secret".into()),
            clock: RunClock::start(),
            inactivity,
            stream: true,
            extra_headers,
        };
        let body = RequestBody {
            model: "fake-model",
            prompt: "one two three",
            max_tokens: 6,
            stream: true,
            include_usage: true,
            ignore_eos: true,
        }
        .to_json(Api::Chat);
        let mut record = RequestRecord::new(Phase::Measured, 0, "tally-t-0".into(), 0);
        record.target_output_tokens = 6;
        execute(&ctx, body.into(), &mut record).await;
        record
    })
}

fn fast_server() -> tally_bench::fake::FakeServer {
    exact_server(2.0, 1.0, StreamShape::default())
}

#[test]
fn each_fault_has_its_status() {
    let server = fast_server();
    let addr = server.addr();
    let second = Duration::from_secs(1);
    let cases: [(&str, Status, Option<u16>); 10] = [
        ("", Status::Ok, Some(200)),
        ("status:500", Status::Error, Some(500)),
        ("status:429:1", Status::Rejected, Some(429)),
        ("status:503", Status::Rejected, Some(503)),
        ("stream_error:after=3", Status::Error, Some(200)),
        ("cut:after=3", Status::Error, Some(200)),
        ("close_before_head", Status::DeliveryUnknown, None),
        ("bad_json:after=2", Status::Error, Some(200)),
        ("no_done", Status::Ok, Some(200)),
        ("empty", Status::Empty, Some(200)),
    ];
    for (fault, status, http) in cases {
        let record = one(addr, fault, second);
        assert_eq!(
            (record.status, record.http_status),
            (status, http),
            "{fault}: {record:?}"
        );
        if status != Status::Ok {
            assert!(record.error_kind.is_some(), "{fault}");
        }
    }
    let partial = one(addr, "stream_error:after=3", second);
    assert_eq!(
        partial.chunks, 3,
        "the tokens before the error event are kept"
    );
    assert_eq!(
        one(addr, "cut:after=3", second).error_kind.as_deref(),
        Some("cut")
    );
    let ok = one(addr, "no_done", second);
    assert_eq!((ok.chunks, ok.output_tokens), (6, Some(6)));
}

#[test]
fn stalls_past_the_inactivity_limit_time_out() {
    let server = fast_server();
    let record = one(
        server.addr(),
        "stall:after=2,ms=1500",
        Duration::from_millis(300),
    );
    assert_eq!(record.status, Status::Timeout);
    assert_eq!(record.chunks, 2);
    let short = one(
        server.addr(),
        "stall:after=2,ms=100",
        Duration::from_millis(300),
    );
    assert_eq!(short.status, Status::Ok);
}

#[test]
fn a_closed_port_is_unreachable() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let record = one(addr, "", Duration::from_secs(1));
    assert_eq!(record.status, Status::Unreachable);
    assert_eq!(record.sent_ns, None, "nothing was sent");
}

#[test]
fn errors_never_leak_the_api_key() {
    let server = fast_server();
    let record = one(server.addr(), "status:500", Duration::from_secs(1));
    let text = serde_json::to_string(&record).unwrap();
    assert!(!text.contains("sk-test-secret"));
}

/// A seed under which the preflight request draws no fault, and the expected failures.
fn seeded(rate: f64, fault: &str, requests: u64) -> (FakeConfig, Vec<u64>) {
    let faults = vec![SeededFault::parse(&format!("{fault}@{rate}")).unwrap()];
    let seed = (0..1000)
        .find(|&seed| faults::draw(&faults, seed, "tally-run-preflight").is_none())
        .unwrap();
    let failing = (0..requests)
        .filter(|i| faults::draw(&faults, seed, &format!("tally-run-{i}")).is_some())
        .collect();
    let config = FakeConfig {
        timing: tally_bench::fake::Timing::Exact {
            ttft: tally_bench::dist::TimeDist::Const(2.0),
            gap: tally_bench::dist::TimeDist::Const(1.0),
        },
        faults,
        seed,
        ..FakeConfig::default()
    };
    (config, failing)
}

#[test]
fn seeded_failures_give_an_exact_error_fraction_and_penalised_tails() {
    let (fake, failing) = seeded(0.1, "status:500", 200);
    let server = server(fake);
    let report = bench(config(&server, 200, 8, 4));
    let expected = failing.len() as f64 / 200.0;
    assert_eq!(metric(&report, "error_fraction"), expected);
    assert_eq!(
        report
            .summary
            .counts
            .get(&Status::Error)
            .copied()
            .unwrap_or(0),
        failing.len() as u64
    );
    // ~10 % failures: p95 falls in the failure mass, and the run is not trustworthy.
    assert_eq!(metric(&report, "e2e_p95_ms"), f64::INFINITY);
    assert!(matches!(
        report.summary.untrustworthy.as_slice(),
        [Untrustworthy::TooManyErrors { .. }]
    ));
    let penalized_p50 = metric(&report, "e2e_p50_ms");
    let successful_p50 = report.summary.e2e.successful[0].unwrap();
    assert!(penalized_p50 >= successful_p50);
}

#[test]
fn hangs_end_at_the_request_deadline() {
    let (fake, failing) = seeded(0.1, "hang", 30);
    assert!(!failing.is_empty());
    let server = server(fake);
    let mut config = config(&server, 30, 4, 4);
    config.request_deadline = Some(Duration::from_millis(300));
    config.max_error_fraction = 1.0;
    let report = bench(config);
    let timeouts: Vec<u64> = report
        .records
        .iter()
        .filter(|r| r.status == Status::Timeout)
        .map(|r| r.index)
        .collect();
    assert_eq!(timeouts, failing);
    assert!(report.summary.untrustworthy.is_empty());
}
