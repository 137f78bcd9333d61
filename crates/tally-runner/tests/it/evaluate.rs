//! One sample in a real worktree: metrics, logs, environment, classification, cleanup.

use std::time::Duration;

use tally_runner::{CancelToken, CommitId, Failure, Outcome, SampleRunner};

use crate::fixture::Fixture;

const EVALUATE: &str = r#"#!/bin/sh
echo "version $(cat version.txt)"
echo "cwd $(pwd)"
echo "env $TALLY_CANDIDATE $TALLY_SIDE $TALLY_SAMPLE"
echo "units $TALLY_UNITS_FILE"
test -e "$TALLY_UNITS_FILE" && echo "units file exists already"
echo scratch > scratch.txt
echo "METRIC tok_s=10"
echo "METRIC tok_s=12.5"
echo "METRIC  spaced=1"
echo "warming" >&2
printf 'METRIC p50_ms=3\r\n'
"#;

#[test]
fn a_committed_script_runs_in_a_fresh_checkout_of_the_revision() {
    let mut fx = Fixture::new(&[("evaluate.sh", EVALUATE), ("version.txt", "one\n")]);
    let first = fx.head.clone();
    fx.commit(&[("version.txt", "two\n")]);
    let runner = fx.runner();
    let mut request = fx.request(&["./evaluate.sh"]);
    request.revision = first;
    request.required_metrics = vec!["tok_s".into()];

    let attempt = runner.run_attempt(&request, 1, &CancelToken::new());

    assert_eq!(attempt.outcome, Outcome::Exited(0));
    assert_eq!(attempt.failure, None, "{:?}", attempt.error());
    assert_eq!(attempt.attempt, 1);
    let metrics: Vec<(&str, f64)> = attempt
        .metrics
        .iter()
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    assert_eq!(metrics, [("p50_ms", 3.0), ("tok_s", 12.5)]);
    assert_eq!(attempt.units, None);
    assert!(attempt.wall > Duration::ZERO && attempt.wall < Duration::from_secs(10));

    let logs = attempt.logs.expect("logs");
    assert_eq!(logs.stdout, fx.log_dir().join("candidate-2-a1.stdout.log"));
    let stdout = std::fs::read_to_string(&logs.stdout).unwrap();
    let stderr = std::fs::read_to_string(&logs.stderr).unwrap();
    assert_eq!(stderr, "warming\n");
    assert!(stdout.contains("version one\n"), "{stdout}");
    assert!(stdout.contains("env c7 candidate 2\n"), "{stdout}");
    assert!(!stdout.contains("exists already"), "{stdout}");
    let root = runner.worktree_root().to_string_lossy().into_owned();
    let cwd = stdout.lines().find_map(|l| l.strip_prefix("cwd ")).unwrap();
    assert!(
        cwd.starts_with(&root) && cwd.ends_with("/checkout"),
        "{cwd} under {root}"
    );
    let units = stdout
        .lines()
        .find_map(|l| l.strip_prefix("units "))
        .unwrap();
    assert!(
        units.starts_with(&root) && !units.starts_with(cwd),
        "{units}"
    );

    fx.assert_clean();
    // The user's working tree is untouched.
    assert!(!fx.repo.path().join("scratch.txt").exists());
}

#[test]
fn a_non_zero_exit_quotes_the_last_line_of_stderr_and_keeps_metrics() {
    let fx = Fixture::new(&[(
        "evaluate.sh",
        "#!/bin/sh\necho 'METRIC tok_s=5'\necho 'loading' >&2\necho 'CUDA out of memory' >&2\nexit 3\n",
    )]);
    let attempt = fx
        .runner()
        .run_attempt(&fx.request(&["./evaluate.sh"]), 1, &CancelToken::new());
    assert_eq!(attempt.outcome, Outcome::Exited(3));
    assert_eq!(
        attempt.error().unwrap(),
        "the evaluate command exited with status 3; stderr ends with: CUDA out of memory"
    );
    assert_eq!(attempt.metrics["tok_s"], 5.0);
    fx.assert_clean();
}

#[test]
fn a_required_metric_not_printed_fails_the_sample() {
    let fx = Fixture::new(&[("evaluate.sh", "#!/bin/sh\necho 'METRIC tok_s=5'\n")]);
    let mut request = fx.request(&["./evaluate.sh"]);
    request.required_metrics = vec!["tok_s".into(), "p95_ms".into()];
    let attempt = fx.runner().run_attempt(&request, 1, &CancelToken::new());
    assert_eq!(attempt.outcome, Outcome::Exited(0));
    assert_eq!(
        attempt.failure,
        Some(Failure::MissingMetrics {
            names: vec!["p95_ms".into()]
        })
    );
    assert_eq!(attempt.metrics["tok_s"], 5.0);
    fx.assert_clean();
}

fn with_units(json: &str) -> tally_runner::Attempt {
    let script = format!(
        "#!/bin/sh\necho 'METRIC tok_s=6'\necho 'METRIC lat=2'\ncat > \"$TALLY_UNITS_FILE\" <<'JSON'\n{json}\nJSON\n"
    );
    let fx = Fixture::new(&[("evaluate.sh", &script)]);
    let attempt = fx
        .runner()
        .run_attempt(&fx.request(&["./evaluate.sh"]), 1, &CancelToken::new());
    fx.assert_clean();
    attempt
}

#[test]
fn a_units_file_that_sums_to_its_metrics_is_kept() {
    let attempt = with_units(r#"{"tok_s": {"p1": 1.0, "p2": 2.0, "p3": 3.0}}"#);
    assert_eq!(attempt.failure, None);
    let units = attempt.units.unwrap();
    assert_eq!(
        units["tok_s"].values().copied().collect::<Vec<_>>(),
        [1.0, 2.0, 3.0]
    );
}

#[test]
fn bad_units_files_fail_with_the_reason() {
    let error = |json: &str| with_units(json).error().unwrap();
    assert_eq!(
        error(r#"{"tok_s": {"p1": 1.0, "p2": 2.0}}"#),
        "bad units file: the units of metric `tok_s` sum to 3 but it printed 6 (relative tolerance 0.001)"
    );
    assert_eq!(
        error(r#"{"lat": {}}"#),
        "bad units file: metric `lat` has no units"
    );
    assert!(
        error(r#"{"tok_s": {"p1": NaN, "p2": 6}}"#).starts_with(
            "bad units file: it contains NaN or Infinity, which are not finite numbers"
        )
    );
    assert_eq!(
        error(r#"{"ttft": {"p1": 1}}"#),
        "bad units file: metric `ttft` has units but was not printed as a METRIC line"
    );
}

#[test]
fn a_checkout_that_cannot_be_made_is_a_failure_and_leaves_nothing() {
    let fx = Fixture::new(&[("evaluate.sh", "#!/bin/sh\n")]);
    let mut request = fx.request(&["./evaluate.sh"]);
    request.revision = CommitId::parse(&"1".repeat(40)).unwrap();
    let attempt = fx.runner().run_attempt(&request, 1, &CancelToken::new());
    assert!(
        matches!(attempt.outcome, Outcome::CheckoutFailed(_)),
        "{:?}",
        attempt.outcome
    );
    let error = attempt.error().unwrap();
    assert!(
        error.starts_with("could not check out the revision: `git worktree add --detach "),
        "{error}"
    );
    assert_eq!(attempt.logs, None);
    assert_eq!(attempt.wall, Duration::ZERO);
    fx.assert_clean();
}

#[test]
fn a_command_that_cannot_start_is_a_failure() {
    let fx = Fixture::new(&[("evaluate.sh", "#!/bin/sh\n")]);
    let attempt =
        fx.runner()
            .run_attempt(&fx.request(&["./no-such-script"]), 1, &CancelToken::new());
    assert!(matches!(attempt.outcome, Outcome::SpawnFailed(_)));
    let error = attempt.error().unwrap();
    assert!(
        error.starts_with("could not start `./no-such-script` in "),
        "{error}"
    );
    assert!(
        error.ends_with("No such file or directory (os error 2)"),
        "{error}"
    );
    fx.assert_clean();
}

#[test]
fn uncommitted_changes_to_the_script_are_not_evaluated_and_are_detectable() {
    let fx = Fixture::new(&[
        ("evaluate.sh", "#!/bin/sh\necho 'METRIC v=1'\n"),
        ("tally.toml", "x\n"),
    ]);
    fx.write("evaluate.sh", "#!/bin/sh\necho 'METRIC v=2'\n");
    let attempt = fx
        .runner()
        .run_attempt(&fx.request(&["./evaluate.sh"]), 1, &CancelToken::new());
    assert_eq!(attempt.metrics["v"], 1.0);
    let paths = [
        std::path::Path::new("tally.toml"),
        std::path::Path::new("evaluate.sh"),
    ];
    assert_eq!(fx.git.uncommitted(&paths).unwrap(), ["evaluate.sh"]);
}

#[test]
fn the_bar_side_is_announced_and_a_huge_timeout_is_no_limit() {
    let fx = Fixture::new(&[(
        "evaluate.sh",
        "#!/bin/sh\necho \"env $TALLY_SIDE $TALLY_SAMPLE\"\n",
    )]);
    let mut request = fx.request(&["./evaluate.sh"]);
    request.side = tally_runner::Side::Bar;
    request.sample = 0;
    request.command.timeout = Duration::MAX;
    let attempt = fx.runner().run_attempt(&request, 1, &CancelToken::new());
    assert!(attempt.is_success(), "{:?}", attempt.error());
    let logs = attempt.logs.unwrap();
    assert_eq!(logs.stdout, fx.log_dir().join("bar-0-a1.stdout.log"));
    assert_eq!(std::fs::read_to_string(logs.stdout).unwrap(), "env bar 0\n");
}

#[test]
fn an_empty_evaluate_command_cannot_start() {
    let fx = Fixture::new(&[]);
    let attempt = fx
        .runner()
        .run_attempt(&fx.request(&[]), 1, &CancelToken::new());
    assert_eq!(
        attempt.outcome,
        Outcome::SpawnFailed("the evaluate command is empty".into())
    );
    assert_eq!(attempt.error().unwrap(), "the evaluate command is empty");
    fx.assert_clean();
}
