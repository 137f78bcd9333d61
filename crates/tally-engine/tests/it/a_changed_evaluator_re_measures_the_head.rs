//! The evaluator (`docs/campaign.md#pairs`): a changed evaluate argv is another evaluator; the head is
//! measured again under it before anything is judged, and measurements of the old one never
//! enter means or verdicts (they stay in the store and in the GPU ledger).

use tally_engine::RunEnd;
use tally_model::{EvaluationKind, Verdict};
use tally_plugin::Surface;
use tally_runner::{CancelToken, Outcome, ScriptedAttempt};

use crate::lab::{Lab, config, id, score};

#[test]
fn the_head_is_measured_again_first_and_old_measurements_no_longer_count() {
    // One repeat: judged on the aggregate, so the means show in the reason.
    let mut lab = Lab::new(&config(1, ""));
    lab.values(|_, _, _| 100.0);
    lab.init();
    let old = lab.engine().evaluator().to_string();
    lab.add(&[1]);

    lab.reconfigure(&config(1, "").replace("./evaluate.sh", "./evaluate-v2.sh"));
    let new = lab.engine().evaluator().to_string();
    assert_ne!(old, new);
    // Under the new evaluator everything scores twice as much.
    lab.values(|rev, _, _| if rev == 0 { 200.0 } else { 210.0 });
    assert_eq!(lab.run(), RunEnd::Idle);

    assert_eq!(lab.order(), ["C0.0", "C0.0", "C1.0"]);
    // The head's mean is 200, not (100 + 200) / 2.
    assert_eq!(
        lab.verdict(1),
        (
            Verdict::Interesting,
            "against candidate#0: score 210.0 vs 200.0 (+10.00; aggregate: not significant: no \
             repeats or per-unit results)"
                .into()
        )
    );
    let remeasure = &lab.evaluations()[1];
    assert_eq!(
        (remeasure.kind, remeasure.candidate, remeasure.bar),
        (EvaluationKind::Remeasure, id(0), None)
    );
    assert_eq!(lab.campaign().evaluator, new);
    assert_eq!(lab.campaign().config_text, lab.text);
    assert_eq!(
        lab.notes()[..2],
        [
            format!(
                "the evaluator changed ({old} → {new}); measurements of the old one no longer \
                 count"
            ),
            "measuring the head (candidate#0) under the current evaluator first".to_string(),
        ]
    );
    let status = lab.engine().status(Surface::Status).unwrap();
    let baseline = &status.data.candidates[0];
    assert_eq!(baseline.metrics["score"], 200.0);
    // The old measurement is still recorded.
    assert_eq!(status.data.measurements.len(), 3);
    assert_eq!(status.data.measurements[0].evaluator, old);
}

#[test]
fn a_watch_metric_or_the_timeout_is_not_a_new_evaluator() {
    let mut lab = Lab::new(&config(1, ""));
    lab.init();
    let old = lab.engine().evaluator().to_string();
    lab.reconfigure(
        &config(1, "[[metrics]]\nname = \"p50_ms\"\ndirection = \"lower\"\n")
            .replace("evaluate_timeout = 60", "evaluate_timeout = 900"),
    );
    assert_eq!(lab.engine().evaluator(), old);
    lab.add(&[1]);
    lab.run();
    assert_eq!(
        lab.order(),
        ["C0.0", "C1.0"],
        "the head is not measured again"
    );
}

#[test]
fn a_head_that_fails_under_the_new_evaluator_is_measured_once_and_the_loop_holds() {
    let mut lab = Lab::new(&config(3, ""));
    lab.init();
    lab.add(&[1]);
    lab.reconfigure(&config(3, "").replace("./evaluate.sh", "./evaluate-v2.sh"));
    // The head cannot run under the new evaluate command; candidate 1 can.
    let cancel = CancelToken::new();
    let guard = cancel.clone();
    lab.respond(move |ask| {
        if ask.rev == 0 && ask.nth > 20 {
            // A loop that never ends: stop it so the test fails instead of hanging.
            guard.cancel();
        }
        match ask.rev {
            0 => ScriptedAttempt::ends(Outcome::Exited(127), ""),
            _ => score(110.0),
        }
    });
    // Measured once; then nothing is judged against a bar without a score.
    let end = lab.engine().run(true, &cancel).unwrap();
    let RunEnd::Held(why) = end else {
        panic!("served: {:?}", lab.order())
    };
    assert!(why.contains("`tally candidate remeasure 0`"), "{why}");
    assert_eq!(lab.order_since(3), ["C0.0"]);
    assert_eq!(lab.verdict(1).0, Verdict::Pending);
    // Asked again, it holds again without measuring the head again and again.
    assert!(matches!(lab.run(), RunEnd::Held(_)));
    assert_eq!(lab.order_since(3), ["C0.0"]);
}
