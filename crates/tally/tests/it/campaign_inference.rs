//! The inference plugins on real campaigns (`docs/campaign.md#min-speedup`, `docs/campaign.md#latency`): a +10%
//! throughput change is kept, a +3% change that `bootstrap` alone keeps is `interesting` under
//! `min_speedup` with the exact reason shape, and the latency table of `tally status --json` has
//! the right rows, in the right order, rounded to two decimals; `tally demo`, which uses them,
//! keeps its large speed-up, finds its small gain merely interesting, keeps neither its
//! regression nor its crash, shows what its evaluations cost, and says what it does with its
//! repository.

use regex::Regex;
use serde_json::{Value, json};

use crate::campaign_repo::{CampaignRepo, candidate, section, text, verdicts};

const INFERENCE: &str = r#"
name = "inference"
evaluate = ["./evaluate.sh"]

[[metrics]]
name = "tok_s"
direction = "higher"
role = "primary"
repeats = 3

[[metrics]]
name = "p50_ms"
direction = "lower"
role = "watch"

[[metrics]]
name = "p95_ms"
direction = "lower"
role = "watch"

[plugins.verdict_rule]
provider = "min_speedup"
min_speedup = 0.05
"#;

/// A keep's reason against `bar`, capturing candidate mean, bar mean, delta and bound (a first
/// look of three pairs, at 0.97: `docs/verdicts.md#more-pairs`).
const KEEP_REASON: &str = r"against candidate#(\d+): tok_s (\S+) vs (\S+) \(\+(\S+); 97% worst case \+(\S+) over 3 pairs\)";

/// Runs the same two candidates under `rule`; returns the final status.
fn judge_two_changes(rule: &str) -> Value {
    let repo = CampaignRepo::new();
    let config = INFERENCE.replace("provider = \"min_speedup\"\nmin_speedup = 0.05", rule);
    repo.start_campaign(&config, "tok_s=1000\nnoise=0.01\nseed=11\n");
    // +10% over the baseline, then +3% over that; both quiet enough (±0.02%) that the paired
    // means differ by 3.0% to one decimal.
    repo.propose(&[
        "tok_s=1100\nnoise=0.0002\nseed=12\n",
        "tok_s=1133\nnoise=0.0002\nseed=13\n",
    ]);
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    repo.status_json()
}

#[test]
fn min_speedup_keeps_ten_percent_and_finds_three_percent_merely_interesting() {
    let status = judge_two_changes("provider = \"min_speedup\"\nmin_speedup = 0.05");
    assert_eq!(verdicts(&status), ["keep", "keep", "interesting"]);
    assert_eq!(status["head"]["candidate"], 1);

    let keep = regex::Regex::new(&format!("^{KEEP_REASON}$")).unwrap();
    let ten = candidate(&status, 1)["reason"].as_str().unwrap();
    let caps = keep.captures(ten).unwrap_or_else(|| panic!("{ten}"));
    assert_eq!(&caps[1], "0");

    let three = candidate(&status, 2)["reason"].as_str().unwrap();
    let below =
        regex::Regex::new(&format!("^{KEEP_REASON}; 3\\.0% is below min_speedup 5%$")).unwrap();
    let caps = below.captures(three).unwrap_or_else(|| panic!("{three}"));
    assert_eq!(&caps[1], "1");
    let (cand, bar): (f64, f64) = (caps[2].parse().unwrap(), caps[3].parse().unwrap());
    assert!((cand / bar - 1.03).abs() < 0.001, "{cand} vs {bar}");

    // `bootstrap` alone, on the very same measurements, keeps it with that very reason.
    let alone = judge_two_changes("provider = \"bootstrap\"");
    assert_eq!(verdicts(&alone), ["keep", "keep", "keep"]);
    assert_eq!(
        format!(
            "{}; 3.0% is below min_speedup 5%",
            candidate(&alone, 2)["reason"].as_str().unwrap()
        ),
        three
    );
    assert_eq!(
        candidate(&alone, 1)["reason"],
        candidate(&status, 1)["reason"]
    );
}

/// The short commit id the tables show.
fn short(revision: &str) -> &str {
    &revision[..7]
}

#[test]
fn the_latency_table_lists_the_latest_measured_candidates_first() {
    let repo = CampaignRepo::new();
    repo.start_campaign(
        INFERENCE,
        "tok_s=1000\nnoise=0.01\np50_ms=20.004\np95_ms=40.126\n",
    );
    let mut revisions = repo.propose(&[
        "tok_s=1100\nnoise=0.01\np50_ms=18.5\np95_ms=35.0\n",
        "mode=crash\n",
        "tok_s=900\nnoise=0.01\np50_ms=25.5551\np95_ms=60\n",
        "tok_s=1000\nnoise=0.01\np50_ms=17.2\n",
        "tok_s=1300\nnoise=0.01\np50_ms=15\np95_ms=30\n",
    ]);
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // A last candidate, measured by hand and not judged yet.
    revisions.extend(repo.propose(&["tok_s=1500\n"]));
    std::fs::write(
        repo.signals().join("report.json"),
        json!({"metrics": {"tok_s": 1500, "p50_ms": 9.999, "p95_ms": 12.3456}, "seconds": 2.5, "error": null})
            .to_string(),
    )
    .unwrap();
    let report = repo.signals().join("report.json");
    let out = repo.tally(&[
        "measurement",
        "add",
        "6",
        "--report",
        report.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    let status = repo.status_json();
    assert_eq!(
        verdicts(&status),
        [
            "keep", "keep", "crash", "discard", "discard", "keep", "pending"
        ]
    );
    let latency = section(&status, "latency").expect("a latency section");
    assert_eq!(latency["title"], "Latency");
    assert_eq!(latency["order"], 175);
    let row = |i: usize, verdict: &str, p50: &str, p95: &str| {
        json!([
            format!("#{} {}", i, short(&revisions[i - 1])),
            verdict,
            p50,
            p95
        ])
    };
    assert_eq!(
        latency["blocks"],
        json!([{"table": {
            "columns": ["candidate", "verdict", "p50_ms", "p95_ms"],
            "rows": [
                // Latest first; the crash has no successful measurement, so no row; five rows
                // at most, so the baseline is left out.
                row(6, "pending", "10.00", "12.35"),
                row(5, "keep", "15.00", "30.00"),
                row(4, "discard", "17.20", "—"),
                row(3, "discard", "25.56", "60.00"),
                row(1, "keep", "18.50", "35.00"),
            ],
        }}])
    );
    // Sections come in order: latency right after evaluations.
    let providers: Vec<&str> = status["sections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["provider"].as_str().unwrap())
        .collect();
    assert_eq!(
        providers,
        ["headline", "goal", "evaluations", "latency", "candidates"]
    );
}

#[test]
fn the_latency_table_is_left_out_when_nothing_was_measured() {
    let repo = CampaignRepo::new();
    repo.write("tally.toml", INFERENCE);
    let baseline = repo.commit_bench("baseline", "mode=crash\n");
    let out = repo.tally(&["init"]);
    assert_eq!(out.status.code(), Some(1), "a failed baseline is a failure");
    assert!(
        text(&out.stderr).contains(&format!(
            "\nerror: campaign `inference` is registered but its baseline candidate#0 = {} failed: no successful measurement: the evaluate command exited with status 3; stderr ends with: bench: the model failed to load",
            &baseline[..12]
        )),
        "{}",
        text(&out.stderr)
    );
    let status = repo.status_json();
    assert_eq!(verdicts(&status), ["crash"]);
    assert!(
        section(&status, "latency").is_none(),
        "{:#}",
        status["sections"]
    );
}

/// `tally demo`: a whole campaign on the fake batched engine measured by `tally bench openai`, with
/// these plugins. Only what cannot flake is asserted: the large speed-up (candidate#1) is kept;
/// the 3 % gain (candidate#3) is `interesting`; the regression (candidate#4) is not kept; the
/// typo (candidate#5) is a crash. The evaluations cost
/// real money at the demo's price, and nothing is left under the worktree cache.
#[test]
fn the_demo_keeps_the_speed_up_and_not_the_small_gain_the_regression_or_the_crash() {
    let sandbox = CampaignRepo::new();
    let dir = sandbox.signals().join("demo");
    let dir_arg = dir.to_str().unwrap();
    let out = sandbox
        .bare_command(&["demo", "--dir", dir_arg])
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.starts_with(&format!("demo repository: {dir_arg}\n")),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("; the repository is at {dir_arg}\n")),
        "{stdout}"
    );

    let status = sandbox
        .bare_command(&["status", "--json", "-C", dir_arg])
        .output()
        .unwrap();
    assert_eq!(status.status.code(), Some(0), "{}", text(&status.stderr));
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(candidate(&status, 0)["verdict"], "keep", "the baseline");
    let demo = format!("{stdout}{}", text(&out.stderr));
    assert_eq!(candidate(&status, 1)["verdict"], "keep", "{demo}");
    // The small gain: usually significant but below the minimum (`...; 3.3% is below min_speedup
    // 5%`); under a burst of load from other work on a 2-core machine the paired gains can vary
    // by 3%, and then three to six pairs cannot show a 3% gain: `not significant`. Either way
    // `interesting`, never a keep; `min_speedup` itself is tested exactly above.
    assert_eq!(candidate(&status, 3)["verdict"], "interesting", "{demo}");
    let reason = candidate(&status, 3)["reason"].as_str().unwrap();
    let small_gain = Regex::new(
        r"^against candidate#1: tokens_per_s \S+ vs \S+ \(\+.*(; [0-4]\.\d% is below min_speedup 5%|: the gain is not significant; .*)$",
    )
    .unwrap();
    assert!(small_gain.is_match(reason), "{demo}");
    assert_ne!(candidate(&status, 4)["verdict"], "keep", "{demo}");
    assert_eq!(candidate(&status, 5)["verdict"], "crash", "{demo}");
    assert!(
        status["candidates"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["verdict"] != "pending")
    );
    // Some 30 s of samples on 8 GPUs at $12.50 per GPU-hour: about a dollar, not $0.00.
    let usd = status["facts"]["gpu_usd"].as_f64().unwrap();
    assert!((0.2..20.0).contains(&usd), "gpu_usd = {usd}");
    let spent = Regex::new(r"\n\$(\d+\.\d\d) spent / \$50\.00 hold limit\n").unwrap();
    let shown = spent
        .captures(&stdout)
        .unwrap_or_else(|| panic!("{stdout}"));
    assert_ne!(&shown[1], "0.00", "{stdout}");
    // Evaluations of seconds show seconds.
    assert!(
        Regex::new(r"\nmedian: +\d+\.\d s\n")
            .unwrap()
            .is_match(&stdout),
        "{stdout}"
    );
    assert!(sandbox.leftover_checkouts().is_empty());
    assert_eq!(
        std::fs::read_dir(sandbox.worktree_cache()).unwrap().count(),
        0,
        "a finished evaluation leaves nothing under the worktree cache"
    );
}

/// Without `--dir` the demo's repository is temporary: the demo says so when it starts, and
/// says it removed it at the end; `--keep` keeps it. (The campaign itself is the test above's.)
#[test]
fn the_demo_says_it_removes_its_temporary_repository_and_keep_keeps_it() {
    let sandbox = CampaignRepo::new();
    let temp = sandbox.signals().join("tmp");
    std::fs::create_dir(&temp).unwrap();
    let started = Regex::new(r"^demo repository: (\S+)( .*)?\n").unwrap();
    for keep in [false, true] {
        let args: &[&str] = if keep { &["demo", "--keep"] } else { &["demo"] };
        let out = sandbox
            .bare_command(args)
            .env("TMPDIR", &temp)
            .output()
            .unwrap();
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
        let caps = started
            .captures(&stdout)
            .unwrap_or_else(|| panic!("{stdout}"));
        let path = std::path::PathBuf::from(&caps[1]);
        assert!(path.starts_with(&temp), "{stdout}");
        let last = stdout.lines().last().unwrap();
        if keep {
            assert_eq!(caps.get(2), None, "{stdout}");
            assert!(
                last.ends_with(&format!("; the repository is at {}", path.display())),
                "{stdout}"
            );
            assert!(path.join("tally.toml").exists());
        } else {
            assert_eq!(
                &caps[2],
                " (temporary: removed when the demo ends; `tally demo --keep` keeps it)"
            );
            assert!(
                last.ends_with(&format!(
                    "; removed {} (`tally demo --keep` keeps it)",
                    path.display()
                )),
                "{stdout}"
            );
            assert!(!path.exists(), "{stdout}");
        }
    }
}
