//! `tally bench` end to end (docs/bench.md): the binary against an in-process fake server. The
//! METRIC lines are read with the campaign's own parser, and their names are the contract.

use std::process::{Command, Output};

use tally_bench::dist::TimeDist;
use tally_bench::fake::{FakeConfig, FakeServer, SeededFault, Timing, faults};
use tally_bench::summary::metric_names;

use crate::support::{stderr, stdout};

fn fake(config: FakeConfig) -> FakeServer {
    FakeServer::start_local(config).unwrap()
}

fn quick() -> FakeConfig {
    FakeConfig {
        timing: Timing::Exact {
            ttft: TimeDist::Const(2.0),
            gap: TimeDist::Const(1.0),
        },
        ..FakeConfig::default()
    }
}

fn bench(url: &str, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tally"))
        .args([
            "bench",
            "openai",
            "--url",
            url,
            "--model",
            "fake-model",
            "--input-len",
            "fixed:16",
        ])
        .args(["--output-len", "fixed:8", "--ignore-eos"])
        .args(extra)
        .env("BENCH_TEST_KEY", "sk-never-printed")
        .output()
        .expect("the tally binary runs")
}

fn metrics(out: &Output) -> Vec<(String, f64)> {
    stdout(out)
        .lines()
        .map(|line| {
            let (name, value) = tally_runner::metric::parse_metric_line(line)
                .unwrap_or_else(|| panic!("not a finite METRIC line: {line:?}"));
            (name.to_owned(), value)
        })
        .collect()
}

#[test]
fn bench_metric_lines_are_the_contract() {
    let server = fake(quick());
    let out = bench(
        &server.base_url(),
        &[
            "--concurrency",
            "4",
            "--requests",
            "40",
            "--slo",
            "ttft:100,e2e:1000",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let printed = metrics(&out);
    let names: Vec<String> = printed.iter().map(|(n, _)| n.clone()).collect();
    assert_eq!(names, metric_names(true));
    let get = |name: &str| printed.iter().find(|(n, _)| n == name).unwrap().1;
    assert_eq!(get("p50_ms"), get("e2e_p50_ms"));
    assert_eq!(get("tokens_per_s"), get("output_tokens_per_s"));
    assert_eq!(get("requests_ok"), 40.0);
    assert_eq!(get("slo_attainment"), 1.0);
    assert!(
        stderr(&out).contains("requests: 40 offered, 40 ok"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn bench_exit_codes_usage_preflight_untrustworthy() {
    let out = bench(
        "http://127.0.0.1:9/v1",
        &["--requests", "3", "--input-len", "bogus"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stdout(&out).is_empty());

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    let out = bench(&closed, &["--requests", "3"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains(&closed), "{}", stderr(&out));

    // Half the requests fail: metrics are printed, p95 is in the failure mass, exit 4.
    let seeded = vec![SeededFault::parse("status:500@0.5").unwrap()];
    let seed = (0..1000)
        .find(|&s| faults::draw(&seeded, s, "tally-t4-preflight").is_none())
        .unwrap();
    let server = fake(FakeConfig {
        faults: seeded,
        seed,
        ..quick()
    });
    let out = bench(
        &server.base_url(),
        &["--requests", "40", "--concurrency", "4", "--run-id", "t4"],
    );
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(stdout(&out).contains("METRIC e2e_p95_ms=inf"));
    assert!(metrics_or_inf(&out).iter().any(|n| n == "error_fraction"));
    assert!(stderr(&out).contains("not trustworthy"), "{}", stderr(&out));
}

fn metrics_or_inf(out: &Output) -> Vec<String> {
    stdout(out)
        .lines()
        .filter_map(|l| {
            l.strip_prefix("METRIC ")?
                .split_once('=')
                .map(|(n, _)| n.to_owned())
        })
        .collect()
}

#[test]
fn bench_out_convert_and_account_never_leak_the_key() {
    let server = fake(quick());
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run.jsonl");
    let evidence = dir.path().join("evidence.jsonl");
    let url = server
        .base_url()
        .replace("http://", "http://user:pw-hidden@");
    let out = bench(
        &url,
        &[
            "--requests",
            "12",
            "--api-key-env",
            "BENCH_TEST_KEY",
            "--out",
            run.to_str().unwrap(),
            "--run-id",
            "r1",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = std::fs::read_to_string(&run).unwrap();
    for written in [&text, &stdout(&out), &stderr(&out)] {
        assert!(!written.contains("sk-never-printed") && !written.contains("pw-hidden"));
    }
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["type"], "tally.bench.run");
    assert_eq!(lines.len(), 1 + 12 + 1);
    assert_eq!(lines[1]["x_request_id"], "tally-r1-0");
    assert_eq!(lines[13]["type"], "tally.bench.window");
    // The hypervisor's steal time over the measured phase (Linux: from /proc/stat).
    if cfg!(target_os = "linux") {
        assert!(lines[13]["steal_ms"].as_f64().is_some_and(|ms| ms >= 0.0));
    }
    // The server saw the key and the request ids.
    assert!(server.stats().request("tally-r1-11").is_some());

    let tally = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_tally"))
            .args(args)
            .output()
            .unwrap()
    };
    let out = tally(&[
        "bench",
        "convert",
        "--evidence",
        run.to_str().unwrap(),
        "-o",
        evidence.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = tally(&["trace", "account", evidence.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("12 requests"), "{}", stdout(&out));
    assert!(stdout(&out).contains("36 stages"), "{}", stdout(&out));

    // A replay of the run's own intended offsets (an unoptimised binary on a busy machine may not
    // keep a 1 ms dispatch bound: exit 4 is then the right answer, with the metrics printed).
    let out = bench(
        &server.base_url(),
        &[
            "--arrivals",
            "replay",
            "--arrivals-file",
            run.to_str().unwrap(),
            "--requests",
            "12",
        ],
    );
    assert!(matches!(out.status.code(), Some(0 | 4)), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("METRIC requests_offered=12\n"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn bench_fake_server_refuses_remote_addresses() {
    let out = Command::new(env!("CARGO_BIN_EXE_tally"))
        .args(["bench", "fake-server", "--listen", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("loopback"), "{}", stderr(&out));
}

/// The evaluate command of the end-to-end campaign: the revision's `bench.conf` sets the fake
/// engine's per-sequence cost; the script starts the engine, measures it with `tally bench
/// openai`, and stops it.
const ENGINE_BENCH: &str = r#"#!/bin/sh
set -e
. ./bench.conf
url=$(mktemp)
"$TALLY_BIN" bench fake-server --mode batched --step-base 1 --step-per-seq "$step_per_seq" \
  --prefill-per-token 0.001 --max-batch 64 --address-file "$url" >/dev/null &
server=$!
trap 'kill "$server"; rm -f "$url"' EXIT
while [ ! -s "$url" ]; do sleep 0.02; done
"$TALLY_BIN" bench openai --url "$(cat "$url")" --model fake-model --concurrency 8 \
  --warmup 300ms --duration 1s --input-len fixed:32 --output-len fixed:32 --ignore-eos
"#;

const ENGINE_CAMPAIGN: &str = r#"
name = "engine"
evaluate = ["./evaluate.sh"]
evaluate_timeout = 60

[[metrics]]
name = "tokens_per_s"
direction = "higher"
role = "primary"
repeats = 3

[[metrics]]
name = "p50_ms"
direction = "lower"
role = "watch"

[plugins.verdict_rule]
provider = "min_speedup"
min_speedup = 0.05
"#;

#[test]
fn bench_in_a_campaign_keeps_a_faster_engine_and_not_a_null_change() {
    use crate::campaign_repo::{CampaignRepo, text, verdicts};
    let repo = CampaignRepo::new();
    repo.write_executable("evaluate.sh", ENGINE_BENCH);
    // C = 8: τ = 1 + 0.5·8 + 0.001·8 ms → 1597 tok/s; a 20 % lower per-sequence cost gives
    // τ = 4.208 ms → 1901 tok/s (+19 %); the null change only rewrites a comment.
    repo.start_campaign(ENGINE_CAMPAIGN, "step_per_seq=0.5\n");
    repo.propose(&["step_per_seq=0.4\n", "# unchanged\nstep_per_seq=0.4\n"]);
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let status = repo.status_json();
    // The baseline (candidate#0), the faster engine, the null change.
    let verdicts = verdicts(&status);
    assert_eq!(verdicts[..2], ["keep", "keep"], "{status}");
    assert_ne!(verdicts[2], "keep", "{status}");
}

/// `tally bench fake-server ARGS` as its own process, and its base URL.
struct FakeProcess {
    child: std::process::Child,
    url: String,
}

impl FakeProcess {
    fn start(dir: &std::path::Path, args: &[&str]) -> Self {
        let address_file = dir.join("url.txt");
        let child = Command::new(env!("CARGO_BIN_EXE_tally"))
            .args(["bench", "fake-server", "--address-file"])
            .arg(&address_file)
            .args(args)
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("the fake server starts");
        let started = std::time::Instant::now();
        let url = loop {
            if let Ok(text) = std::fs::read_to_string(&address_file)
                && text.ends_with('\n')
            {
                break text.trim().to_owned();
            }
            assert!(started.elapsed().as_secs() < 60, "no address file");
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        Self { child, url }
    }
}

impl Drop for FakeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `tally bench openai` against `url`, sends `signal` after `after`, and returns its
/// output and how long it took to exit after the signal.
fn interrupt_bench(
    url: &str,
    extra: &[&str],
    after: std::time::Duration,
    signal: nix::sys::signal::Signal,
) -> (Output, std::time::Duration) {
    let child = Command::new(env!("CARGO_BIN_EXE_tally"))
        .args(["bench", "openai", "--url", url, "--model", "fake-model"])
        .args([
            "--input-len",
            "fixed:16",
            "--output-len",
            "fixed:8",
            "--ignore-eos",
        ])
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the tally binary runs");
    std::thread::sleep(after);
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    nix::sys::signal::kill(pid, signal).unwrap();
    let signalled = std::time::Instant::now();
    let out = child.wait_with_output().unwrap();
    (out, signalled.elapsed())
}

fn jsonl(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn bench_sigint_stops_early_prints_what_completed_and_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeProcess::start(dir.path(), &["--ttft", "const:5", "--gap", "const:2"]);
    let run = dir.path().join("run.jsonl");
    let run_arg = run.display().to_string();
    let (out, took) = interrupt_bench(
        &server.url,
        &[
            "--concurrency",
            "4",
            "--duration",
            "120s",
            "--out",
            &run_arg,
        ],
        std::time::Duration::from_secs(3),
        nix::sys::signal::Signal::SIGINT,
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(130), "{err}");
    // Requests take about 20 ms: far less than the 5 s grace, so every one in flight completes.
    assert!(took.as_secs() < 30, "exit took {took:?}");
    assert!(err.contains("interrupted (SIGINT)"), "{err}");
    let printed = metrics(&out);
    let get = |name: &str| printed.iter().find(|(n, _)| n == name).map(|p| p.1);
    let ok = get("requests_ok").expect("requests_ok printed");
    assert!(ok >= 1.0, "{err}");
    assert_eq!(get("error_fraction"), Some(0.0), "{err}");
    let lines = jsonl(&run);
    let footer = lines.last().unwrap();
    assert_eq!(footer["type"], "tally.bench.window");
    assert_eq!(footer["stopped_early"], true);
    assert_eq!(footer["stop_reason"], "SIGINT");
    let window_s = footer["window_s"].as_f64().unwrap();
    assert!(window_s > 0.0 && window_s < 120.0, "window {window_s} s");
    let measured: Vec<_> = lines
        .iter()
        .filter(|l| l["type"] == "tally.bench.request" && l["phase"] == "measured")
        .collect();
    assert_eq!(measured.len() as f64, ok);
    assert!(measured.iter().all(|r| r["status"] == "ok"));
}

#[test]
fn bench_sigterm_cancels_requests_still_running_after_the_grace_and_exits_143() {
    // Half the requests hang; the preflight request (run id "sig") is not one of them.
    let seeded = vec![SeededFault::parse("hang@0.5").unwrap()];
    let seed = (0..1000)
        .find(|&s| faults::draw(&seeded, s, "tally-sig-preflight").is_none())
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let seed_text = seed.to_string();
    let server = FakeProcess::start(
        dir.path(),
        &[
            "--ttft", "const:2", "--gap", "const:1", "--fault", "hang@0.5", "--seed", &seed_text,
        ],
    );
    let run = dir.path().join("run.jsonl");
    let run_arg = run.display().to_string();
    let (out, took) = interrupt_bench(
        &server.url,
        &[
            "--concurrency",
            "4",
            "--duration",
            "120s",
            "--run-id",
            "sig",
            "--out",
            &run_arg,
        ],
        std::time::Duration::from_secs(2),
        nix::sys::signal::Signal::SIGTERM,
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(143), "{err}");
    // Every worker is stuck on a hanging request: the run waits out the 5 s grace, no longer.
    assert!(
        took.as_secs_f64() >= 4.5,
        "exit after {took:?}: the grace was not given"
    );
    assert!(took.as_secs() < 30, "exit took {took:?}");
    let lines = jsonl(&run);
    let footer = lines.last().unwrap();
    assert_eq!(footer["stopped_early"], true);
    assert_eq!(footer["stop_reason"], "SIGTERM");
    let cut: Vec<_> = lines
        .iter()
        .filter(|l| l["error_kind"] == "interrupted")
        .collect();
    assert_eq!(cut.len(), 4, "one hanging request per worker: {err}");
    assert!(cut.iter().all(|r| r["status"] == "cancelled"));
}
