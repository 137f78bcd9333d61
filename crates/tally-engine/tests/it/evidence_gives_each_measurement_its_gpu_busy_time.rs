//! The two halves meet: an evaluation that hands over evidence (`TALLY_EVIDENCE_FILE`) gets the
//! GPU busy time it accounts for recorded with its measurement, providers see it, and status's
//! `evaluations` section shows it beside the wall time; without evidence nothing changes.

use tally_plugin::{Block, Surface};
use tally_runner::{Outcome, ScriptedAttempt};

use crate::lab::{Lab, config, score, secs};

/// The `evaluations` section's figures as `label value unit`.
fn evaluation_figures(lab: &Lab) -> Vec<String> {
    let report = lab.engine().status(Surface::Status).unwrap();
    let section = report
        .sections
        .iter()
        .find(|s| s.provider == "evaluations")
        .expect("an evaluations section");
    let rendered = section.result.clone().unwrap().unwrap();
    let Block::Figures(figures) = &rendered.blocks[0] else {
        panic!("figures expected")
    };
    figures
        .iter()
        .map(|f| {
            format!("{} {} {}", f.label, f.value, f.unit)
                .trim_end()
                .to_owned()
        })
        .collect()
}

#[test]
fn a_measurement_records_the_busy_time_of_its_evidence_and_status_shows_it() {
    let lab = Lab::new(&config(1, ""));
    // 40 s samples; the baseline's evidence shows 30 s of GPU busy time, the candidate's 21 s.
    lab.respond(|ask| {
        let attempt = score(100.0 + f64::from(ask.rev)).with_wall(secs(40.0));
        attempt.with_gpu_busy_ns(if ask.rev == 0 { 30 } else { 21 } * 1_000_000_000)
    });
    lab.init();
    lab.add(&[1]);
    lab.run();

    let ms = lab.measurements();
    let busy: Vec<(u32, Option<u64>, bool)> = ms
        .iter()
        .map(|m| {
            (
                m.candidate.0,
                m.evidence.gpu_busy_ns,
                m.evidence.artifact.is_some(),
            )
        })
        .collect();
    assert_eq!(
        busy,
        [
            (0, Some(30_000_000_000), true),
            (1, Some(21_000_000_000), true)
        ]
    );
    let report = lab.engine().status(Surface::Status).unwrap();
    let seen: Vec<Option<f64>> = report
        .data
        .measurements
        .iter()
        .map(|m| m.gpu_busy_seconds)
        .collect();
    assert_eq!(seen, [Some(30.0), Some(21.0)]);
    // Two evaluations, 80 s of wall time in all (median 40.0 s: under a minute, so in seconds);
    // 30 s and 21 s busy (median 25.5 s); 51 s busy over the 80 s of wall time of the samples
    // that have evidence.
    assert_eq!(
        evaluation_figures(&lab),
        [
            "evaluations 2",
            "failed 0",
            "median 40.0 s",
            "GPU busy 25.5 s",
            "GPU busy / wall 64 %",
            "waiting 0"
        ]
    );
}

#[test]
fn a_failed_sample_keeps_its_artifact_but_no_busy_time_and_without_evidence_nothing_shows() {
    let lab = Lab::new(&config(1, ""));
    lab.respond(|ask| match ask.rev {
        1 => ScriptedAttempt::ends(Outcome::Exited(2), "").with_gpu_busy_ns(5),
        _ => score(100.0),
    });
    lab.init();
    lab.add(&[1]);
    lab.run();
    let failed = lab
        .measurements()
        .into_iter()
        .find(|m| m.candidate.0 == 1)
        .unwrap();
    assert!(failed.error.is_some());
    assert_eq!(
        (
            failed.evidence.artifact.as_deref(),
            failed.evidence.gpu_busy_ns
        ),
        (Some("scripted.evidence.jsonl"), None)
    );
    assert!(
        !evaluation_figures(&lab)
            .iter()
            .any(|f| f.starts_with("GPU busy")),
        "no accounted evidence, no GPU busy figure"
    );
}
