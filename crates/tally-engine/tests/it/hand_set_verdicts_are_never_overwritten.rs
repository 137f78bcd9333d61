//! Verdicts set by hand (`docs/campaign.md#after-the-rule`, `tally candidate verdict`): the loop never evaluates
//! or overwrites them — not when more measurements arrive, not after a re-measurement; a
//! hand-set keep becomes the head, and discarding the head by hand moves the head back.

use tally_engine::ManualReport;
use tally_model::{Actor, Verdict};

use crate::lab::{Lab, config, id};

fn lab_with_baseline(repeats: u32) -> Lab {
    let lab = Lab::new(&config(repeats, ""));
    lab.values(|rev, _, _| 100.0 + 10.0 * f64::from(rev));
    lab.init();
    lab
}

fn report(score: f64) -> ManualReport {
    ManualReport {
        metrics: [("score".to_string(), score)].into(),
        seconds: Some(2.5),
        error: None,
        ..ManualReport::default()
    }
}

#[test]
fn a_hand_set_verdict_on_a_pending_candidate_is_never_evaluated() {
    let lab = lab_with_baseline(3);
    lab.add(&[1, 2]);
    let set = lab
        .engine()
        .set_verdict_by_hand(id(1), Verdict::Discard, "known broken", "alice")
        .unwrap();
    assert_eq!(set.verdict_set_by, Some(Actor::Person("alice".into())));
    lab.run();
    // Only candidate 2 ran.
    assert_eq!(
        lab.order_since(3),
        ["C2.0", "B0.0", "B0.1", "C2.1", "C2.2", "B0.2"]
    );
    assert_eq!(lab.verdict(1), (Verdict::Discard, "known broken".into()));
}

#[test]
fn more_measurements_and_a_remeasure_leave_a_hand_set_verdict_alone() {
    let lab = lab_with_baseline(3);
    lab.add(&[1]);
    lab.run();
    assert_eq!(lab.verdict(1).0, Verdict::Keep);
    lab.engine()
        .set_verdict_by_hand(
            id(1),
            Verdict::Discard,
            "regresses on long prompts",
            "alice",
        )
        .unwrap();
    assert_eq!(lab.head(), Some(id(0)), "discarding the head moved it back");

    let m = lab
        .engine()
        .add_measurement(id(1), &report(500.0), "bob")
        .unwrap();
    assert_eq!(m.recorded_by, Actor::Person("bob".into()));
    assert_eq!(m.duration_ns, Some(2_500_000_000));
    assert_eq!(m.evaluator, lab.engine().evaluator());
    let expected = (Verdict::Discard, "regresses on long prompts".to_string());
    assert_eq!(lab.verdict(1), expected);

    let served = lab.served().len();
    lab.engine().remeasure(id(1), Some(2)).unwrap();
    lab.run();
    // The re-measurement ran (2 pairs against the head) and changed nothing.
    assert_eq!(lab.order_since(served), ["C1.0", "B0.0", "B0.1", "C1.1"]);
    assert_eq!(lab.verdict(1), expected);
    assert_eq!(
        lab.candidate(1).verdict_set_by,
        Some(Actor::Person("alice".into()))
    );
    assert_eq!(lab.head(), Some(id(0)));
}

#[test]
fn a_measurement_added_to_a_loop_verdict_judges_it_again() {
    // One repeat: judged on the aggregate, so the means show in the reason.
    let lab = lab_with_baseline(1);
    lab.add(&[1]);
    lab.run();
    assert_eq!(
        lab.verdict(1),
        (
            Verdict::Interesting,
            "against candidate#0: score 110.0 vs 100.0 (+10.00; aggregate: not significant: no \
             repeats or per-unit results)"
                .into()
        )
    );
    lab.engine()
        .add_measurement(id(1), &report(70.0), "bob")
        .unwrap();
    assert_eq!(
        lab.verdict(1),
        (
            Verdict::Discard,
            "against candidate#0: score 90.00 vs 100.0 (-10.00; aggregate: not significant: no \
             repeats or per-unit results)"
                .into()
        )
    );
}

#[test]
fn a_hand_set_keep_becomes_the_head_and_is_measured_before_judging_against_it() {
    let lab = lab_with_baseline(3);
    lab.add(&[1, 2]);
    let kept = lab
        .engine()
        .set_verdict_by_hand(id(2), Verdict::Keep, "measured on the cluster", "alice")
        .unwrap();
    assert_eq!(kept.verdict, Verdict::Keep);
    assert_eq!(lab.head(), Some(id(2)));
    lab.run();
    // The new head has no score yet: measured first, then candidate 1 judged against it.
    assert_eq!(
        lab.order_since(3),
        [
            "C2.0", "C2.1", "C2.2", "C1.0", "B2.0", "B2.1", "C1.1", "C1.2", "B2.2"
        ]
    );
    assert_eq!(
        lab.verdict(1),
        (
            Verdict::Discard,
            "against candidate#2: score 110.0 vs 120.0 (-10.00; 97% worst case -10.00 over 3 \
             pairs)"
                .into()
        )
    );
    assert_eq!(
        lab.verdict(2),
        (Verdict::Keep, "measured on the cluster".into())
    );
}

#[test]
fn discarding_the_head_by_hand_moves_the_head_back_to_the_latest_other_keep() {
    let lab = lab_with_baseline(3);
    lab.add(&[1, 2]);
    lab.run();
    assert_eq!(lab.verdict(1).0, Verdict::Keep);
    assert_eq!(lab.verdict(2).0, Verdict::Keep);
    assert_eq!(lab.head(), Some(id(2)));
    lab.engine()
        .set_verdict_by_hand(id(2), Verdict::Interesting, "flaky", "alice")
        .unwrap();
    assert_eq!(lab.head(), Some(id(1)));
    lab.engine()
        .set_verdict_by_hand(id(1), Verdict::Crash, "segfaults on H100", "alice")
        .unwrap();
    assert_eq!(lab.head(), Some(id(0)));
    // A verdict by hand on a candidate that is not the head leaves the head alone.
    lab.engine()
        .set_verdict_by_hand(id(2), Verdict::Discard, "flaky", "alice")
        .unwrap();
    assert_eq!(lab.head(), Some(id(0)));
}
