//! `tally init` (`docs/campaign.md#commands`): the baseline is measured with the campaign's repeats of
//! unpaired samples, kept and made the head; a failing baseline is a `crash` that init measures
//! again; init on a registered campaign reports what changed.

use tally_engine::{InitOutcome, RunEnd};
use tally_model::{CampaignState, EvaluationKind, EvaluationState, Side, Verdict};
use tally_runner::{Outcome, ScriptedAttempt};

use crate::lab::{Lab, config, id, score};

#[test]
fn the_baseline_is_measured_unpaired_kept_and_becomes_the_head() {
    let lab = Lab::new(&config(3, ""));
    lab.values(|_, _, sample| 100.0 + f64::from(sample));
    assert_eq!(
        lab.init(),
        InitOutcome::Registered {
            primary: Some(101.0)
        }
    );
    assert_eq!(lab.order(), ["C0.0", "C0.1", "C0.2"]);
    assert_eq!(lab.head(), Some(id(0)));
    assert_eq!(
        lab.verdict(0),
        (Verdict::Keep, "baseline: score 101.0".into())
    );
    let baseline = lab.candidate(0);
    assert_eq!(baseline.parent, None);
    assert_eq!(baseline.judged_against, None);
    assert_eq!(baseline.note.as_deref(), Some("baseline"));
    let measurements = lab.measurements();
    assert_eq!(measurements.len(), 3);
    assert!(
        measurements
            .iter()
            .all(|m| m.side == Side::Candidate && m.pair.is_none() && m.error.is_none())
    );
    let evaluations = lab.evaluations();
    assert_eq!(evaluations.len(), 1);
    assert_eq!(evaluations[0].kind, EvaluationKind::Baseline);
    assert_eq!(evaluations[0].bar, None);
    assert_eq!(evaluations[0].repeats, 3);
    assert_eq!(evaluations[0].state, EvaluationState::Finished);
    assert_eq!(lab.state(), (CampaignState::Active, None));
}

#[test]
fn a_failing_baseline_is_a_crash_and_init_again_measures_it_again() {
    let lab = Lab::new(&config(3, ""));
    lab.respond(|_| {
        ScriptedAttempt::ends(Outcome::Exited(2), "METRIC score=5\n").with_stderr("no GPU\n")
    });
    let why = "no successful measurement: the evaluate command exited with status 2; \
               stderr ends with: no GPU";
    assert_eq!(lab.init(), InitOutcome::BaselineFailed(why.into()));
    // The sequence stops at the first failure.
    assert_eq!(lab.order(), ["C0.0"]);
    assert_eq!(lab.verdict(0), (Verdict::Crash, why.into()));
    assert_eq!(lab.head(), None);
    // The printed metric is kept with the failure, but never enters a mean.
    assert_eq!(lab.measurements()[0].metrics["score"], 5.0);

    lab.respond(|_| score(90.0));
    assert_eq!(
        lab.init(),
        InitOutcome::Registered {
            primary: Some(90.0)
        }
    );
    assert_eq!(lab.order(), ["C0.0", "C0.0", "C0.1", "C0.2"]);
    assert_eq!(
        lab.verdict(0),
        (Verdict::Keep, "baseline: score 90.00".into())
    );
    assert_eq!(lab.head(), Some(id(0)));
    assert_eq!(lab.evaluations().len(), 2);
}

#[test]
fn init_again_on_a_registered_campaign_reports_what_changed_and_measures_nothing() {
    let mut lab = Lab::new(&config(2, ""));
    lab.init();
    assert_eq!(
        lab.init(),
        InitOutcome::AlreadyRegistered { changes: vec![] }
    );
    assert_eq!(lab.served().len(), 2);

    // A watch metric changes the text but not the evaluator.
    lab.reconfigure(&config(
        2,
        "[[metrics]]\nname = \"p50_ms\"\ndirection = \"lower\"\n",
    ));
    assert_eq!(
        lab.init(),
        InitOutcome::AlreadyRegistered {
            changes: vec!["tally.toml changed since it was registered".into()]
        }
    );

    // Another evaluate command is another evaluator.
    let before = lab.engine().evaluator().to_string();
    lab.reconfigure(&config(2, "").replace("./evaluate.sh", "./bench.sh"));
    let after = lab.engine().evaluator().to_string();
    assert_ne!(before, after);
    assert_eq!(
        lab.init(),
        InitOutcome::AlreadyRegistered {
            changes: vec![
                format!(
                    "the evaluator changed ({before} → {after}): the head will be measured \
                     again before anything is judged"
                ),
                "tally.toml changed since it was registered".into(),
            ]
        }
    );
    assert_eq!(lab.served().len(), 2);
    assert_eq!(lab.candidate(0).verdict, Verdict::Keep);
}

#[test]
fn after_a_crashed_baseline_the_loop_holds_and_keeps_nothing() {
    let lab = Lab::new(&config(3, ""));
    lab.respond(|ask| match ask.rev {
        0 => ScriptedAttempt::ends(Outcome::Exited(1), ""),
        _ => score(120.0),
    });
    assert!(matches!(lab.init(), InitOutcome::BaselineFailed(_)));
    lab.add(&[1]);
    // No head, no bar: nothing is measured or judged; the hold says how to measure a baseline.
    let RunEnd::Held(why) = lab.run() else {
        panic!("a campaign without a scored bar holds")
    };
    assert!(
        why.starts_with("the baseline candidate#0 (") && why.ends_with(
            "has no successful measurement: the evaluate command exited with status 1 and wrote \
             nothing on stderr; nothing is judged without a bar: fix the benchmark, commit, and \
             run `tally init` to measure HEAD as the baseline"
        ),
        "{why}"
    );
    assert_eq!(lab.order(), ["C0.0"]);
    assert_eq!(lab.verdict(1).0, Verdict::Pending);
    assert_eq!(lab.head(), None);
    assert_eq!(lab.state(), (CampaignState::Held, Some(why.clone())));
    // A re-measurement has nothing to be judged against: refused, naming the same way out.
    let refused = lab.engine().remeasure(id(0), None).unwrap_err().to_string();
    assert!(refused.contains("`tally init`"), "{refused}");
}

#[test]
fn a_head_without_a_score_under_the_current_evaluator_holds_the_loop() {
    let mut lab = Lab::new(&config(1, ""));
    lab.respond(|_| score(100.0));
    lab.init();
    // A new evaluator under which the head fails: measured again once, then the loop holds
    // instead of keeping the next candidate against nothing.
    lab.reconfigure(&config(1, "").replace("./evaluate.sh", "./bench.sh"));
    lab.respond(|ask| match ask.rev {
        0 => ScriptedAttempt::ends(Outcome::Exited(1), ""),
        _ => score(120.0),
    });
    lab.add(&[1]);
    let RunEnd::Held(why) = lab.run() else {
        panic!("a bar without a score holds")
    };
    assert!(
        why.starts_with("the bar candidate#0 has no successful measurement of `score` under the current evaluator (its last failure: "),
        "{why}"
    );
    assert!(
        why.ends_with("`tally candidate remeasure 0` measures it again"),
        "{why}"
    );
    assert_eq!(lab.verdict(1).0, Verdict::Pending);
    // The command the reason names works: the head is measured again, then the candidate judged.
    lab.respond(|ask| score(if ask.rev == 0 { 100.0 } else { 120.0 }));
    lab.engine().remeasure(id(0), None).unwrap();
    assert_eq!(lab.run(), RunEnd::Idle);
    // Judged against the head's new score (one sample each: not significant).
    let (verdict, reason) = lab.verdict(1);
    assert_eq!(verdict, Verdict::Interesting);
    assert!(
        reason.starts_with("against candidate#0: score 120.0 vs 100.0"),
        "{reason}"
    );
}

#[test]
fn the_campaign_repeats_are_the_largest_among_the_judging_metrics() {
    let lab = Lab::new(&config(
        2,
        "[[metrics]]\nname = \"mem_gb\"\ndirection = \"lower\"\nrole = \"guardrail\"\n\
         repeats = 4\n\
         [[metrics]]\nname = \"p50_ms\"\ndirection = \"lower\"\nrepeats = 9\n",
    ));
    lab.respond(|_| crate::lab::metrics(&[("score", 100.0), ("mem_gb", 20.0)]));
    lab.init();
    // The guardrail's 4, not the primary's 2 nor the watch metric's 9; a missing watch metric
    // does not fail a sample.
    assert_eq!(lab.order(), ["C0.0", "C0.1", "C0.2", "C0.3"]);
    assert_eq!(lab.verdict(0).0, Verdict::Keep);
}
