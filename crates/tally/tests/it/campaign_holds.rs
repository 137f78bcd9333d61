//! Holding and stopping a campaign (`campaign.md` §6, §8.1, §11; issues 3 and 4): `hold_at` on
//! a host fact holds `tally run` (exit 3, the reason on stderr) and lets it go on once the limit
//! is raised in `tally.toml`; a GPU budget holds *before* the evaluation that would cross it, and
//! the money in `tally status --json` is exactly the recorded seconds converted; a `tally run`
//! waiting for candidates returns once a stop limit is reached.

use serde_json::Value;

use crate::campaign_repo::{CampaignRepo, section, text, verdicts};

const HOLD_AT_RUNS: &str = r#"
name = "holds"
evaluate = ["./evaluate.sh"]

[[metrics]]
name = "tok_s"
direction = "higher"
role = "primary"
repeats = 2

[plugins.stop_rule]
provider = "limits"
hold_at = { runs = 2 }
"#;

/// Every sample sleeps half a second; two GPUs at $1800 per GPU-hour make a second of
/// evaluation cost exactly one dollar.
const BUDGET: &str = r#"
name = "budget"
evaluate = ["./evaluate.sh"]

[[metrics]]
name = "tok_s"
direction = "higher"
role = "primary"
repeats = 2

[plugins.stop_rule]
provider = "limits"
hold_at = { gpu_usd = 6.5 }

[[plugins.fact_source]]
provider = "gpu_hours"
gpus = 2
usd_per_gpu_hour = 1800
"#;

#[test]
fn hold_at_on_a_host_fact_holds_and_resumes_when_the_limit_is_raised() {
    let repo = CampaignRepo::new();
    repo.start_campaign(HOLD_AT_RUNS, "tok_s=1000\nnoise=0.01\n");
    repo.propose(&[
        "tok_s=1100\nnoise=0.01\n",
        "tok_s=900\nnoise=0.01\n",
        "tok_s=1300\nnoise=0.01\n",
    ]);

    let out = repo.run_until_idle();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("campaign `holds` is held: hold_at: runs 2.00 reached 2\n"),
        "{stderr}"
    );
    let status = repo.status_json();
    assert_eq!(status["campaign"]["state"], "held");
    assert_eq!(status["campaign"]["reason"], "hold_at: runs 2.00 reached 2");
    assert_eq!(verdicts(&status), ["keep", "keep", "discard", "pending"]);

    // Asked again, it still holds and starts nothing.
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(
        verdicts(&repo.status_json()),
        ["keep", "keep", "discard", "pending"]
    );

    // Raising the limit in tally.toml (no commit needed) lets the next run go on.
    repo.write("tally.toml", &HOLD_AT_RUNS.replace("runs = 2", "runs = 5"));
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let status = repo.status_json();
    assert_eq!(status["campaign"]["state"], "active");
    assert_eq!(status["campaign"]["reason"], Value::Null);
    assert_eq!(verdicts(&status), ["keep", "keep", "discard", "keep"]);
}

/// Σ seconds of every measurement of every candidate.
fn recorded_seconds(status: &Value) -> f64 {
    status["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["measurements"].as_array().unwrap())
        .map(|m| m["seconds"].as_f64().unwrap())
        .sum()
}

/// The seconds of each evaluation (both sides), in the order the evaluations ran.
fn evaluation_seconds(status: &Value) -> Vec<f64> {
    let mut totals: std::collections::BTreeMap<u64, f64> = Default::default();
    for c in status["candidates"].as_array().unwrap() {
        for m in c["measurements"].as_array().unwrap() {
            *totals.entry(m["evaluation"].as_u64().unwrap()).or_default() +=
                m["seconds"].as_f64().unwrap();
        }
    }
    totals.into_values().collect()
}

fn assert_close(actual: f64, expected: f64, what: &str) {
    assert!(
        (actual - expected).abs() <= 1e-9 * expected.abs(),
        "{what}: {actual} != {expected}"
    );
}

#[test]
fn a_gpu_budget_holds_before_the_evaluation_that_would_cross_it() {
    let repo = CampaignRepo::new();
    repo.start_campaign(BUDGET, "tok_s=1000\nnoise=0.01\nsleep=0.5\n");
    repo.propose(&[
        "tok_s=1100\nnoise=0.01\nsleep=0.5\n",
        "tok_s=1210\nnoise=0.01\nsleep=0.5\n",
        "tok_s=1331\nnoise=0.01\nsleep=0.5\n",
    ]);

    // The baseline cost ~$1 (2 samples), each paired evaluation ~$2 (4 samples). Before the
    // third candidate ~$5 are spent and ~$2 expected: that would reach $6.50, so it holds there
    // although the budget is not spent yet.
    let out = repo.run_until_idle();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    let status = repo.status_json();
    assert_eq!(status["campaign"]["state"], "held");
    assert_eq!(verdicts(&status), ["keep", "keep", "keep", "pending"]);
    let reason = status["campaign"]["reason"].as_str().unwrap().to_string();
    assert!(
        stderr.contains(&format!("campaign `budget` is held: {reason}\n")),
        "{stderr}"
    );
    let shape = regex::Regex::new(
        r"^hold_at: gpu_usd (\d+\.\d\d) \+ (\d+\.\d\d) expected would reach 6\.5$",
    )
    .unwrap();
    let caps = shape
        .captures(&reason)
        .unwrap_or_else(|| panic!("{reason}"));
    let spent: f64 = caps[1].parse().unwrap();
    let expected: f64 = caps[2].parse().unwrap();

    // The money is the recorded seconds × 2 GPUs × $1800 / 3600 s, to the last bits.
    let seconds = recorded_seconds(&status);
    let facts = &status["facts"];
    assert_close(
        facts["gpu_usd"].as_f64().unwrap(),
        seconds * 2.0 * 1800.0 / 3600.0,
        "gpu_usd",
    );
    assert_close(
        facts["gpu_hours"].as_f64().unwrap(),
        seconds * 2.0 / 3600.0,
        "gpu_hours",
    );
    // The reason shows those dollars, and the median of the three evaluations as the next one.
    let per_evaluation = evaluation_seconds(&status);
    assert_eq!(per_evaluation.len(), 3, "{per_evaluation:?}");
    let mut sorted = per_evaluation.clone();
    sorted.sort_by(f64::total_cmp);
    assert_eq!(format!("{spent:.2}"), format!("{seconds:.2}"));
    assert_eq!(format!("{expected:.2}"), format!("{:.2}", sorted[1]));
    assert!(seconds < 6.5, "held before the budget was spent: {seconds}");
    assert!(seconds + sorted[1] >= 6.5);
    // Every sample slept at least half a second, so every figure is at least the nominal one.
    assert!(seconds >= 5.0, "{seconds}");

    // status shows the hold and the money.
    let goal = section(&status, "goal").expect("goal section").to_string();
    assert!(
        goal.contains(&format!("${:.2}/$6.50", facts["gpu_usd"].as_f64().unwrap())),
        "{goal}"
    );

    // Raising the budget in tally.toml lets the campaign go on.
    repo.write(
        "tally.toml",
        &BUDGET.replace("gpu_usd = 6.5", "gpu_usd = 100"),
    );
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let status = repo.status_json();
    assert_eq!(status["campaign"]["state"], "active");
    assert_eq!(verdicts(&status), ["keep", "keep", "keep", "keep"]);
    let seconds = recorded_seconds(&status);
    assert_close(
        status["facts"]["gpu_usd"].as_f64().unwrap(),
        seconds,
        "gpu_usd",
    );
}

/// Waits for `child` at most `limit`; kills it and fails past that.
fn wait_at_most(child: &mut std::process::Child, limit: std::time::Duration) -> Option<i32> {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        if std::time::Instant::now() >= deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("tally run still running after {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn a_waiting_run_picks_up_new_candidates_and_returns_when_the_campaign_stops() {
    let repo = CampaignRepo::new();
    let config = HOLD_AT_RUNS
        .replace("name = \"holds\"", "name = \"stops\"")
        .replace("hold_at = { runs = 2 }", "max_runs = 2");
    repo.start_campaign(&config, "tok_s=1000\nnoise=0.01\n");
    repo.propose(&["tok_s=1100\nnoise=0.01\n"]);
    let mut run = repo
        .command(&["run"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Once the first candidate is judged, a second one arrives while `tally run` waits.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while verdicts(&repo.status_json()) != ["keep", "keep"] {
        assert!(
            std::time::Instant::now() < deadline,
            "candidate#1 never judged"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    repo.propose(&["tok_s=1000\nnoise=0.01\n"]);
    // Judging it reaches max_runs: the campaign stops and `tally run` returns 0.
    let code = wait_at_most(&mut run, std::time::Duration::from_secs(60));
    assert_eq!(code, Some(0));
    let status = repo.status_json();
    assert_eq!(verdicts(&status), ["keep", "keep", "discard"]);
    assert_eq!(status["campaign"]["state"], "stopped");
    assert_eq!(status["campaign"]["reason"], "max_runs: 2 runs");
}
