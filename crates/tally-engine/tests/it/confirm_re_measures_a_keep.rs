//! `confirm = true` (`docs/campaign.md#after-the-rule`): a would-be keep is measured once more by an independent
//! paired evaluation against the same bar before it becomes the head; the confirmation is judged
//! on its own samples only, and failing it makes the candidate `interesting` ("did not confirm").

use tally_model::{EvaluationKind, Verdict};

use crate::lab::{Lab, config, id};

const CONFIRM: &str = "[plugins.verdict_rule]\nprovider = \"bootstrap\"\nconfirm = true\n";

const PAIRS: [&str; 6] = ["C1.0", "B0.0", "B0.1", "C1.1", "C1.2", "B0.2"];

#[test]
fn a_confirmed_keep_becomes_the_head() {
    let lab = Lab::new(&config(3, CONFIRM));
    lab.values(|rev, _, _| if rev == 0 { 100.0 } else { 110.0 });
    lab.init();
    lab.add(&[1]);
    lab.run();
    assert_eq!(lab.order_since(3), [PAIRS, PAIRS].concat());
    let kinds: Vec<_> = lab
        .evaluations()
        .iter()
        .map(|e| (e.kind, e.candidate, e.bar))
        .collect();
    assert_eq!(
        kinds,
        [
            (EvaluationKind::Baseline, id(0), None),
            (EvaluationKind::Judge, id(1), Some(id(0))),
            (EvaluationKind::Confirm, id(1), Some(id(0))),
        ]
    );
    assert_eq!(
        lab.verdict(1),
        (
            Verdict::Keep,
            "against candidate#0: score 110.0 vs 100.0 (+10.00; 97% worst case +10.00 over 3 \
             pairs) (confirmed)"
                .into()
        )
    );
    assert_eq!(lab.head(), Some(id(1)));
    assert!(
        lab.notes()
            .contains(&"candidate#1 would be kept; confirming with a new evaluation".to_string())
    );
}

#[test]
fn a_keep_that_does_not_confirm_is_interesting_and_the_head_stays() {
    let lab = Lab::new(&config(3, CONFIRM));
    // Candidate 1 is 10% better in its first three samples only.
    lab.respond(|ask| {
        crate::lab::score(if ask.rev == 1 && ask.nth < 3 {
            110.0
        } else {
            100.0
        })
    });
    lab.init();
    lab.add(&[1]);
    lab.run();
    assert_eq!(lab.order_since(3), [PAIRS, PAIRS].concat());
    // Judged on the confirmation's three pairs alone, not on all six.
    assert_eq!(
        lab.verdict(1),
        (
            Verdict::Interesting,
            "did not confirm: against candidate#0: score 100.0 vs 100.0 (0; 97% worst case 0 over \
             3 pairs)"
                .into()
        )
    );
    assert_eq!(lab.head(), Some(id(0)));
}

#[test]
fn without_confirm_a_keep_is_not_measured_again() {
    let lab = Lab::new(&config(3, ""));
    lab.values(|rev, _, _| if rev == 0 { 100.0 } else { 110.0 });
    lab.init();
    lab.add(&[1]);
    lab.run();
    assert_eq!(lab.order_since(3), PAIRS);
    assert_eq!(lab.evaluations().len(), 2);
    assert_eq!(lab.head(), Some(id(1)));
}
