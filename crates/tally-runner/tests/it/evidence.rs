//! The evidence hand-over in a real worktree: an evaluate command writes an evidence artifact at
//! `TALLY_EVIDENCE_FILE`, tally keeps it next to the logs and records the GPU busy time it
//! accounts for — the numbers of the reference's own expected output for the same artifact.

use std::path::PathBuf;

use tally_runner::{Attempt, CancelToken, SampleRunner};

use crate::fixture::Fixture;

/// A conformance case of the evidence half: the artifact and the reference's expected output.
fn case(name: &str) -> (PathBuf, serde_json::Value) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/conformance/evidence");
    let expected = std::fs::read_to_string(dir.join(format!("{name}.expected.json"))).unwrap();
    (
        dir.join(format!("{name}.jsonl")),
        serde_json::from_str(&expected).unwrap(),
    )
}

/// Σ `busy_ns` over the device totals of an expected `tally trace account --json` output.
fn expected_busy_ns(expected: &serde_json::Value) -> u64 {
    expected["device_totals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["busy_ns"].as_u64().unwrap())
        .sum()
}

/// Runs a script that prints `METRIC tok_s=1`, runs `write` (a shell command) and exits `code`.
fn evaluate(write: &str, code: i32) -> (Fixture, Attempt) {
    let script = format!("#!/bin/sh\necho 'METRIC tok_s=1'\n{write}\nexit {code}\n");
    let fx = Fixture::new(&[("evaluate.sh", &script)]);
    let attempt = fx
        .runner()
        .run_attempt(&fx.request(&["./evaluate.sh"]), 1, &CancelToken::new());
    fx.assert_clean();
    (fx, attempt)
}

#[test]
fn an_artifact_the_command_writes_is_kept_and_accounted_as_the_reference_does() {
    let (artifact, expected) = case("20-generated-v2");
    let busy = expected_busy_ns(&expected);
    assert!(busy > 0);
    for (write, form) in [
        (
            format!("cp '{}' \"$TALLY_EVIDENCE_FILE\"", artifact.display()),
            "plain",
        ),
        (
            format!(
                "gzip -c '{}' > \"$TALLY_EVIDENCE_FILE\"",
                artifact.display()
            ),
            "gzip",
        ),
    ] {
        let (fx, attempt) = evaluate(&write, 0);
        assert_eq!(attempt.failure, None, "{form}: {:?}", attempt.error());
        let evidence = attempt.evidence.expect("evidence");
        let kept = fx.log_dir().join("candidate-2-a1.evidence.jsonl");
        assert_eq!(evidence.artifact, kept, "{form}");
        assert!(
            kept.is_file(),
            "{form}: the artifact is kept next to the logs"
        );
        let accounted = evidence.accounted.expect("accounted");
        assert_eq!(accounted.gpu_busy_ns, busy, "{form}");
        assert_eq!(
            accounted.devices,
            expected["device_totals"].as_array().unwrap().len(),
            "{form}"
        );
    }
}

#[test]
fn no_artifact_is_no_evidence() {
    let (_, attempt) = evaluate("test -e \"$TALLY_EVIDENCE_FILE\" && exit 9", 0);
    assert_eq!(attempt.failure, None, "{:?}", attempt.error());
    assert_eq!(attempt.evidence, None);
}

#[test]
fn an_artifact_that_cannot_be_read_fails_the_sample_with_the_file_and_line() {
    let (fx, attempt) = evaluate(
        "printf '{\"schema_version\": 2}\\n{oops\\n' > \"$TALLY_EVIDENCE_FILE\"",
        0,
    );
    let kept = fx.log_dir().join("candidate-2-a1.evidence.jsonl");
    let error = attempt.error().expect("a failure");
    assert!(
        error.starts_with(&format!("bad evidence file: {}: line ", kept.display())),
        "{error}"
    );
    assert!(kept.is_file(), "the bad artifact is kept for the user");
    let evidence = attempt.evidence.expect("evidence");
    assert_eq!((evidence.artifact, evidence.accounted), (kept, None));
    assert_eq!(
        attempt.metrics["tok_s"], 1.0,
        "metrics are kept with the failure"
    );
}

#[test]
fn a_failed_attempt_keeps_its_artifact_without_accounting_it() {
    let (artifact, _) = case("01-overlap");
    let (fx, attempt) = evaluate(
        &format!("cp '{}' \"$TALLY_EVIDENCE_FILE\"", artifact.display()),
        3,
    );
    assert!(attempt.error().unwrap().contains("status 3"));
    let evidence = attempt.evidence.expect("evidence");
    assert_eq!(
        (evidence.artifact, evidence.accounted),
        (fx.log_dir().join("candidate-2-a1.evidence.jsonl"), None)
    );
}
