//! The campaign's inputs and the command-line contract (`docs/campaign.md#tally-toml`, `docs/campaign.md#units`, `docs/campaign.md#commands`;
//! `docs/cli.md`): a malformed `tally.toml` reports every problem at once, a units file that does
//! not add up fails its sample, `tally init` writes its templates and then refuses what is left
//! to fill in, and every command exits with the code `docs/cli.md` gives.

use crate::campaign_repo::{CampaignRepo, candidate, text, verdicts};

const ONE_METRIC: &str = r#"
name = "inputs"
evaluate = ["./evaluate.sh"]
evaluate_timeout = 60

[[metrics]]
name = "tok_s"
direction = "higher"
role = "primary"
repeats = 2
"#;

/// Problems of every kind in one file: types, ranges, enumerations, unknown keys, provider
/// parameters and a `hold_at` fact nobody supplies.
const MALFORMED: &str = r#"
name = "broken"
evaluate = "./evaluate.sh"
evaluate_timeout = -5

[[metrics]]
name = "tok_s"
direction = "faster"
role = "primary"

[[metrics]]
name = "p50_ms"
direction = "lower"
rol = "watch"

[plugins.verdict_rule]
provider = "bootstrap"
confidence = 1.5

[plugins.stop_rule]
provider = "limits"
hold_at = { gpu_usd = 50 }
"#;

#[test]
fn a_malformed_config_reports_every_problem_at_once() {
    let repo = CampaignRepo::new();
    repo.write("tally.toml", MALFORMED);
    repo.commit_bench("baseline", "tok_s=1000\n");
    let expected = format!(
        "error: {}/tally.toml: 6 problems:
  evaluate = \"./evaluate.sh\": expected a non-empty list of strings (an argv, e.g. [\"./evaluate.sh\"]; use [\"sh\", \"-c\", \"...\"] for a shell)
  evaluate_timeout = -5: expected a positive number of seconds per sample
  metrics[0].direction = \"faster\": expected \"higher\" or \"lower\"
  metrics[1].rol: unknown key; did you mean `role`?
  plugins.verdict_rule.confidence = 1.5: expected a number strictly between 0.5 and 1, such as 0.95
  plugins.stop_rule.hold_at.gpu_usd: no active fact source supplies `gpu_usd`; add a [[plugins.fact_source]] table with provider = \"gpu_hours\"
",
        repo.root().display()
    );
    // Every command that reads the campaign says the same.
    for args in [
        &["init"][..],
        &["run", "--until-idle"],
        &["status", "--json"],
        &["brief"],
    ] {
        let out = repo.tally(args);
        assert_eq!(out.status.code(), Some(1), "tally {args:?}");
        assert_eq!(text(&out.stderr), expected, "tally {args:?}");
        assert!(out.stdout.is_empty(), "tally {args:?}");
    }
    // Nothing was registered.
    assert!(!repo.root().join(".tally").exists());
}

#[test]
fn provider_value_checks_come_with_the_missing_parameters() {
    // `gpus = 0` is a value the provider refuses; the missing price is a declared parameter the
    // reader finds: both at once, with the other keys' problems.
    let repo = CampaignRepo::new();
    repo.write(
        "tally.toml",
        &format!(
            "{}\n[[plugins.fact_source]]\nprovider = \"gpu_hours\"\ngpus = 0\n",
            ONE_METRIC.replace("evaluate = [\"./evaluate.sh\"]", "evaluate = []")
        ),
    );
    repo.commit_bench("baseline", "tok_s=1000\n");
    let out = repo.tally(&["status"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains(": 3 problems:"), "{err}");
    assert!(
        err.contains("\n  evaluate = []: expected a non-empty list"),
        "{err}"
    );
    assert!(
        err.contains("\n  plugins.fact_source[0].usd_per_gpu_hour: missing required parameter"),
        "{err}"
    );
    assert!(
        err.contains("\n  plugins.fact_source[0].gpus = 0: expected a whole number of GPUs ≥ 1"),
        "{err}"
    );
}

#[test]
fn a_toml_syntax_error_names_its_line_and_column() {
    let repo = CampaignRepo::new();
    repo.write(
        "tally.toml",
        "name = \"x\"\nevaluate = [\"./evaluate.sh\"\n",
    );
    let out = repo.tally(&["status"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    let prefix = format!(
        "error: {}/tally.toml: line 2, column ",
        repo.root().display()
    );
    assert!(stderr.starts_with(&prefix), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

#[test]
fn a_units_file_that_does_not_sum_fails_the_sample() {
    let repo = CampaignRepo::new();
    repo.start_campaign(ONE_METRIC, "tok_s=1000\nnoise=0.01\n");
    repo.propose(&["mode=bad_units\n"]);
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    let status = repo.status_json();
    let bad = candidate(&status, 1);
    assert_eq!(bad["verdict"], "crash");
    let samples: Vec<_> = bad["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["side"] == "candidate")
        .collect();
    // The sequence stops at the first failure; the printed metric is kept with it.
    assert_eq!(samples.len(), 1, "{samples:#?}");
    let error = "bad units file: the units of metric `tok_s` sum to 3 but it printed 6 (relative tolerance 0.001)";
    assert_eq!(samples[0]["error"], error);
    assert_eq!(samples[0]["metrics"]["tok_s"], 6.0);
    assert_eq!(
        bad["reason"],
        format!("no successful measurement: {error}").as_str()
    );
    // A failed measurement never enters a mean.
    assert!(bad["metrics"].get("tok_s").is_none(), "{bad:#}");
}

#[test]
fn init_with_the_inference_template_writes_three_files_and_asks_for_the_price() {
    let repo = CampaignRepo::new();
    std::fs::remove_file(repo.root().join("evaluate.sh")).unwrap();
    let out = repo.tally(&["init", "--template", "inference"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.starts_with("wrote tally.toml, evaluate.sh, brief.md.\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("set usd_per_gpu_hour in tally.toml"),
        "{stdout}"
    );
    for file in ["tally.toml", "evaluate.sh", "brief.md"] {
        assert!(repo.root().join(file).is_file(), "{file}");
    }
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(repo.root().join("evaluate.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111, "evaluate.sh is executable");
    let config = std::fs::read_to_string(repo.root().join("tally.toml")).unwrap();
    assert!(config.contains("provider = \"min_speedup\""));
    assert!(config.contains("provider = \"gpu_hours\""));
    assert!(config.contains("hold_at = { gpu_usd = 50 }"));

    // The price is still to be filled in: the second step refuses, naming the key.
    let out = repo.tally(&["init"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        format!(
            "error: {}/tally.toml: 1 problem:\n  plugins.fact_source[0].usd_per_gpu_hour: missing required parameter: add `usd_per_gpu_hour = <number>` (price of one GPU-hour in USD)\n",
            repo.root().display()
        )
    );

    // Writing the template again never overwrites what is there.
    let before = std::fs::read(repo.root().join("brief.md")).unwrap();
    std::fs::remove_file(repo.root().join("tally.toml")).unwrap();
    repo.write("brief.md", "mine\n");
    let out = repo.tally(&["init", "--template", "inference"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text(&out.stdout)
            .starts_with("wrote tally.toml (kept your existing evaluate.sh, brief.md)"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(
        std::fs::read_to_string(repo.root().join("brief.md")).unwrap(),
        "mine\n"
    );
    assert_ne!(before, b"mine\n");
}

#[test]
fn init_refuses_an_uncommitted_config() {
    let repo = CampaignRepo::new();
    repo.write("tally.toml", ONE_METRIC);
    repo.commit_bench("baseline", "tok_s=1000\n");
    repo.write(
        "tally.toml",
        &ONE_METRIC.replace("repeats = 2", "repeats = 3"),
    );
    let out = repo.tally(&["init"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        "error: tally.toml not committed; the baseline runs in a clean checkout of HEAD, so commit first: git add tally.toml && git commit\n"
    );
}

#[test]
fn exit_codes_follow_the_documented_table() {
    let repo = CampaignRepo::new();
    repo.start_campaign(ONE_METRIC, "tok_s=1000\nnoise=0.01\n");

    // 2: usage.
    for args in [
        &["run", "--bogus"][..],
        &["candidate", "add"],
        &["candidate", "verdict", "1"],
        &["frobnicate"],
    ] {
        let out = repo.tally(args);
        assert_eq!(out.status.code(), Some(2), "tally {args:?}");
        assert!(out.stdout.is_empty(), "tally {args:?}");
    }
    // 1: values the command refuses, one `error:` line each.
    for (args, message) in [
        (
            &["candidate", "add", "no-such-revision"][..],
            "error: `no-such-revision` is not a commit in ",
        ),
        (
            &["candidate", "show", "7"],
            "error: candidate#7 does not exist in campaign `inputs`",
        ),
        (
            &["candidate", "verdict", "0", "maybe", "--reason", "x"],
            "error: OUTCOME \"maybe\": expected keep, interesting, discard, crash or pending",
        ),
        (
            &["candidate", "show", "first"],
            "error: \"first\" is not a candidate id; write 3, #3 or candidate#3",
        ),
    ] {
        let out = repo.tally(args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "tally {args:?}: {stderr}");
        assert!(stderr.starts_with(message), "tally {args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "tally {args:?}");
    }
    // 0: success, including an idle run and help.
    for args in [
        &["run", "--until-idle"][..],
        &["status"],
        &["run", "--help"],
    ] {
        let out = repo.tally(args);
        assert_eq!(out.status.code(), Some(0), "tally {args:?}");
    }
    assert_eq!(verdicts(&repo.status_json()), ["keep"]);
    // 3 (held) and 130 (Ctrl-C) are exercised by the hold and safety tests.
}

#[test]
fn init_again_reports_what_changed_without_asking_for_a_commit() {
    let repo = CampaignRepo::new();
    repo.start_campaign(ONE_METRIC, "tok_s=1000\nnoise=0.01\np50_ms=10\n");
    let out = repo.tally(&["init"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        text(&out.stdout),
        "campaign `inputs` is registered and tally.toml is valid; nothing changed\n"
    );
    // A new guardrail, not committed yet: init compares, it does not refuse.
    repo.write(
        "tally.toml",
        &format!(
            "{ONE_METRIC}\n[[metrics]]\nname = \"p50_ms\"\ndirection = \"lower\"\nrole = \"guardrail\"\nmargin = 1\n"
        ),
    );
    let out = repo.tally(&["init"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let changed = regex::Regex::new(
        "^campaign `inputs` is registered; what changed:
  - the evaluator changed \\(ev-[0-9a-f]{16} → ev-[0-9a-f]{16}\\): the head will be measured again before anything is judged
  - tally.toml changed since it was registered
$",
    )
    .unwrap();
    assert!(
        changed.is_match(&text(&out.stdout)),
        "{}",
        text(&out.stdout)
    );
}
