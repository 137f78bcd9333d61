//! [`SlurmRunner`] against a real Slurm cluster (`docs/team.md#executor`): what a job hands over
//! — METRIC lines from its stdout file, the units file, the evidence file — is taken exactly as
//! from a local process; a non-zero exit keeps its stderr line; a command killed by a signal is
//! seen as that signal. Each test prints a `SKIPPED` line and returns when `sinfo` does not
//! answer with a usable node (`scripts/slurm-test-cluster.sh start` makes one).

#![allow(clippy::print_stderr)]

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

use tally_runner::{
    Attempt, CancelToken, Failure, Outcome, SampleRunner, SlurmOptions, SlurmRunner,
};

use crate::fixture::{Accountant, Fixture};

/// Whether a Slurm cluster answers with a usable node; prints why the test is skipped if not.
fn cluster_up(test: &str) -> bool {
    let up = Command::new("sinfo")
        .args(["-h", "-o", "%T"])
        .output()
        .is_ok_and(|out| {
            out.status.success()
                && String::from_utf8_lossy(&out.stdout)
                    .split_whitespace()
                    .any(|s| matches!(s.trim_end_matches('*'), "idle" | "mixed" | "allocated"))
        });
    if !up {
        eprintln!(
            "SKIPPED {test}: no Slurm cluster answers (start one with \
             `scripts/slurm-test-cluster.sh start`)"
        );
    }
    up
}

/// Runs `script` as `evaluate.sh` in one Slurm job; the checkout is gone afterwards.
fn on_slurm(script: &str) -> (Fixture, Attempt) {
    let fx = Fixture::new(&[("evaluate.sh", script)]);
    let runner = SlurmRunner::new(
        fx.git.clone(),
        &fx.worktree_root(),
        Arc::new(Accountant),
        SlurmOptions {
            time_limit: Some("5".into()),
            ..SlurmOptions::default()
        },
    )
    .unwrap();
    let mut request = fx.request(&["./evaluate.sh"]);
    request.required_metrics = vec!["tok_s".into()];
    let attempt = runner.run_attempt(&request, 1, &CancelToken::new());
    fx.assert_clean();
    (fx, attempt)
}

fn evidence_case() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/conformance/evidence/20-generated-v2.jsonl")
}

#[test]
fn a_slurm_job_hands_over_metrics_units_and_evidence() {
    if !cluster_up("a_slurm_job_hands_over_metrics_units_and_evidence") {
        return;
    }
    let script = format!(
        "#!/bin/sh\necho 'METRIC tok_s=6'\necho 'METRIC watch=2.5'\n\
         printf '{{\"tok_s\": {{\"a\": 1, \"b\": 5}}}}' > \"$TALLY_UNITS_FILE\"\n\
         cp '{}' \"$TALLY_EVIDENCE_FILE\"\necho \"side=$TALLY_SIDE sample=$TALLY_SAMPLE\" >&2\n",
        evidence_case().display()
    );
    let (fx, attempt) = on_slurm(&script);
    assert_eq!(attempt.failure, None, "{attempt:#?}");
    assert_eq!(attempt.outcome, Outcome::Exited(0));
    assert_eq!(attempt.metrics.get("tok_s"), Some(&6.0));
    assert_eq!(attempt.metrics.get("watch"), Some(&2.5));
    assert!(attempt.units.is_some(), "{attempt:#?}");
    let evidence = attempt
        .evidence
        .as_ref()
        .expect("the evidence file was kept");
    assert!(evidence.artifact.starts_with(fx.log_dir()));
    assert!(evidence.accounted.as_ref().unwrap().gpu_busy_ns > 0);
    let logs = attempt.logs.as_ref().unwrap();
    assert!(
        std::fs::read_to_string(&logs.stdout)
            .unwrap()
            .contains("METRIC tok_s=6")
    );
    assert!(
        std::fs::read_to_string(&logs.stderr)
            .unwrap()
            .contains("side=candidate sample=2")
    );
    let id = std::fs::read_to_string(fx.log_dir().join("candidate-2-a1.slurm-job")).unwrap();
    assert!(id.trim().parse::<u64>().is_ok(), "{id:?}");
}

#[test]
fn a_failing_slurm_job_keeps_its_status_stderr_line_and_signal() {
    if !cluster_up("a_failing_slurm_job_keeps_its_status_stderr_line_and_signal") {
        return;
    }
    let (_fx, attempt) = on_slurm(
        "#!/bin/sh\necho 'METRIC tok_s=1'\necho 'bench: the model failed to load' >&2\nexit 3\n",
    );
    assert_eq!(attempt.outcome, Outcome::Exited(3));
    assert_eq!(
        attempt.failure,
        Some(Failure::ExitStatus {
            code: 3,
            stderr_line: "bench: the model failed to load".into()
        })
    );
    // The command (not the job script) killed by SIGKILL, as an operator would.
    let (_fx, attempt) = on_slurm("#!/bin/sh\nkill -KILL $$\n");
    assert_eq!(attempt.outcome, Outcome::Signalled(9));
    assert!(attempt.outcome.killed_from_outside());
}
