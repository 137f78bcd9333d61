//! The fake runner: canned results classified like real ones, the retry rule included.

use std::time::Duration;

use tally_runner::{
    CancelToken, EvaluateCommand, Failure, Outcome, SampleRequest, SampleRunner, ScriptedAttempt,
    ScriptedRunner, Side,
};

fn request(side: Side, sample: u32) -> SampleRequest {
    SampleRequest {
        command: EvaluateCommand {
            argv: vec!["./evaluate.sh".into()],
            timeout: Duration::from_secs(60),
            links: Vec::new(),
        },
        revision: tally_runner::CommitId::parse(&"a".repeat(40)).unwrap(),
        candidate: "c3".into(),
        side,
        sample,
        required_metrics: vec!["tok_s".into()],
        log_dir: "/nonexistent".into(),
    }
}

#[test]
fn canned_output_is_parsed_and_classified_like_real_output() {
    let runner = ScriptedRunner::new([
        ScriptedAttempt::prints("METRIC tok_s=100\nMETRIC tok_s=101\n")
            .with_units(r#"{"tok_s": {"a": 50, "b": 51}}"#)
            .with_wall(Duration::from_secs(90)),
        ScriptedAttempt::prints("METRIC other=1\n"),
        ScriptedAttempt::ends(Outcome::Exited(1), "METRIC tok_s=3\n").with_stderr("boom\n"),
        ScriptedAttempt::ends(Outcome::TimedOut, ""),
    ]);
    let cancel = CancelToken::new();
    let ok = runner.run_attempt(&request(Side::Candidate, 0), 1, &cancel);
    assert!(ok.is_success());
    assert_eq!(ok.metrics["tok_s"], 101.0);
    assert_eq!(ok.units.unwrap()["tok_s"]["b"], 51.0);
    assert_eq!(ok.wall, Duration::from_secs(90));
    let missing = runner.run_attempt(&request(Side::Bar, 0), 1, &cancel);
    assert_eq!(
        missing.failure,
        Some(Failure::MissingMetrics {
            names: vec!["tok_s".into()]
        })
    );
    let failed = runner.run_attempt(&request(Side::Bar, 1), 1, &cancel);
    assert_eq!(
        failed.error().unwrap(),
        "the evaluate command exited with status 1; stderr ends with: boom"
    );
    assert_eq!(failed.metrics["tok_s"], 3.0);
    let timed_out = runner.run_attempt(&request(Side::Candidate, 1), 1, &cancel);
    assert_eq!(
        timed_out.error().unwrap(),
        "the evaluate command timed out after 60 s (evaluate_timeout) and its process group was killed"
    );
    let served: Vec<(Side, u32)> = runner
        .requests()
        .iter()
        .map(|(r, _)| (r.side, r.sample))
        .collect();
    assert_eq!(
        served,
        [
            (Side::Candidate, 0),
            (Side::Bar, 0),
            (Side::Bar, 1),
            (Side::Candidate, 1)
        ]
    );
}

#[test]
fn an_outside_kill_is_retried_once_through_the_trait() {
    let runner = ScriptedRunner::from_fn(|_, attempt| match attempt {
        1 => ScriptedAttempt::ends(Outcome::Signalled(9), "METRIC tok_s=1\n"),
        _ => ScriptedAttempt::ends(Outcome::Signalled(9), ""),
    });
    let mut seen = Vec::new();
    let attempts = runner.run_sample(
        &request(Side::Candidate, 0),
        &CancelToken::new(),
        &mut |a| seen.push((a.attempt, a.retried, a.error())),
    );
    let killed = "the evaluate command was killed by signal 9 (SIGKILL), not sent by tally";
    assert_eq!(
        seen,
        [
            (1, true, Some(killed.to_owned())),
            (2, false, Some(killed.to_owned()))
        ],
        "only one retry, even when the retry is killed too"
    );
    assert_eq!(attempts[0].metrics["tok_s"], 1.0);
}

#[test]
fn a_cancelled_token_consumes_no_script() {
    let runner = ScriptedRunner::new([ScriptedAttempt::prints("METRIC tok_s=1\n")]);
    let cancel = CancelToken::new();
    cancel.cancel();
    let attempt = runner.run_attempt(&request(Side::Candidate, 0), 1, &cancel);
    assert_eq!(attempt.outcome, Outcome::Cancelled);
    assert_eq!(attempt.error().unwrap(), "interrupted");
    assert!(runner.requests().is_empty());
}
