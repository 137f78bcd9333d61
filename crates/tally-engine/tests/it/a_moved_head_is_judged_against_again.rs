//! The head moving while a candidate is measured (`docs/campaign.md#after-the-rule`): when someone else keeps
//! first, a would-be keep is judged again against the new head (measured as needed) instead of
//! silently overtaking it. "Someone else" is simulated by writing a hand-set keep straight to
//! the store while the runner is serving the candidate's first sample, as another process would.

use tally_model::{Actor, EvaluationKind, Verdict};
use tally_runner::Side;
use tally_store::{HeadUpdate, Store, VerdictWrite};

use crate::lab::{Lab, START_MS, config, id, score};

/// Baseline 100, candidate 1 = 110, candidate 2 = `two`; candidate 2 is kept by hand while
/// candidate 1's first sample runs.
fn head_moves_during_candidate_one(two: f64) -> Lab {
    let lab = Lab::new(&config(3, ""));
    lab.init();
    lab.add(&[1, 2]);
    let store = std::sync::Arc::clone(&lab.store);
    let campaign = lab.campaign().id;
    lab.respond(move |ask| {
        if (ask.rev, ask.side, ask.nth) == (1, Side::Candidate, 0) {
            let write = VerdictWrite {
                verdict: Verdict::Keep,
                reason: Some("kept elsewhere".into()),
                by: Actor::Person("carol".into()),
                at: tally_model::UnixMillis(START_MS),
                judged_against: None,
                head: HeadUpdate::Set(Some(id(2))),
            };
            let outcome = store.set_verdict(campaign, id(2), &write).unwrap();
            assert!(matches!(
                outcome,
                tally_store::VerdictWriteOutcome::Applied(_)
            ));
        }
        score(match ask.rev {
            0 => 100.0,
            1 => 110.0,
            _ => two,
        })
    });
    lab.run();
    lab
}

#[test]
fn a_would_be_keep_is_judged_again_against_the_new_head() {
    let lab = head_moves_during_candidate_one(120.0);
    assert_eq!(
        lab.order_since(3),
        [
            // Candidate 1 against the old head: a keep that cannot overtake.
            "C1.0", "B0.0", "B0.1", "C1.1", "C1.2", "B0.2",
            // The new head has no score: measured first.
            "C2.0", "C2.1", "C2.2", // Candidate 1 judged again against the new head.
            "C1.0", "B2.0", "B2.1", "C1.1", "C1.2", "B2.2",
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
    assert_eq!(lab.candidate(1).judged_against, Some(id(2)));
    assert_eq!(lab.head(), Some(id(2)));
    assert!(
        lab.notes().contains(
            &"candidate#1: the head moved to candidate#2 while it was measured; judging it again \
          against the new head"
                .to_string()
        )
    );
    let kinds: Vec<_> = lab.evaluations().iter().map(|e| (e.kind, e.bar)).collect();
    assert_eq!(
        kinds,
        [
            (EvaluationKind::Baseline, None),
            (EvaluationKind::Judge, Some(id(0))),
            (EvaluationKind::Judge, Some(id(2))),
            (EvaluationKind::Remeasure, None),
        ],
        "the judge again was queued before the head's measurement, which ran first"
    );
}

#[test]
fn a_candidate_that_also_beats_the_new_head_overtakes_it() {
    let lab = head_moves_during_candidate_one(105.0);
    assert_eq!(
        lab.verdict(1),
        (
            Verdict::Keep,
            "against candidate#2: score 110.0 vs 105.0 (+5.000; 97% worst case +5.000 over 3 \
             pairs)"
                .into()
        )
    );
    assert_eq!(lab.head(), Some(id(1)));
}
