//! Contract: verdict writes — who set them, the loop never overwriting a person's verdict
//! (`docs/campaign.md#after-the-rule`), handing a candidate back to the loop, and head updates (compare-and-set
//! for keeps, the head always a keep).

use tally_model::{Actor, CandidateId, UnixMillis, Verdict};

use super::{Make, add, applied, by_hand, by_loop, campaign_with_baseline, expect_err};
use crate::error::StoreError;
use crate::records::{HeadUpdate, VerdictWrite, VerdictWriteOutcome};

pub(super) fn run(make: Make<'_>) {
    loop_verdicts_record_who_when_and_against_what(make);
    the_loop_never_overwrites_a_hand_set_verdict(make);
    a_person_hands_a_candidate_back_with_pending(make);
    keeps_move_the_head_only_if_it_did_not_move(make);
    the_head_is_always_a_keep(make);
}

fn loop_verdicts_record_who_when_and_against_what(make: Make<'_>) {
    let store = make();
    let c = campaign_with_baseline(&*store, "alpha");
    let k = add(&*store, c.id, "rev1", 2_000);
    let rule = "set_verdict by the loop";
    let write = VerdictWrite {
        judged_against: Some(CandidateId(0)),
        ..by_loop(
            Verdict::Discard,
            "against candidate#0: tok_s 99 vs 100 (-1)",
            3_000,
            HeadUpdate::Unchanged,
        )
    };
    let judged = applied(store.set_verdict(c.id, k.id, &write).unwrap(), rule);
    assert_eq!(judged.verdict, Verdict::Discard, "{rule}");
    assert_eq!(
        judged.reason.as_deref(),
        Some("against candidate#0: tok_s 99 vs 100 (-1)"),
        "{rule}"
    );
    assert_eq!(judged.verdict_set_by, Some(Actor::Loop), "{rule}");
    assert_eq!(judged.judged, Some(UnixMillis(3_000)), "{rule}");
    assert_eq!(judged.judged_against, Some(CandidateId(0)), "{rule}");
    assert!(!judged.is_hand_set(), "{rule}");
    assert_eq!(
        store.candidate(c.id, k.id).unwrap(),
        Some(judged.clone()),
        "{rule}: stored"
    );
    let rejudged = applied(
        store
            .set_verdict(
                c.id,
                k.id,
                &by_loop(
                    Verdict::Interesting,
                    "not significant",
                    4_000,
                    HeadUpdate::Unchanged,
                ),
            )
            .unwrap(),
        "the loop may re-judge its own verdict",
    );
    assert_eq!(
        (rejudged.verdict, rejudged.judged),
        (Verdict::Interesting, Some(UnixMillis(4_000))),
        "{rule}"
    );
    expect_err!(
        store.set_verdict(c.id, CandidateId(9), &write),
        StoreError::NoSuchCandidate { .. },
        "set_verdict: unknown candidate"
    );
    expect_err!(
        store.set_verdict(
            c.id,
            k.id,
            &VerdictWrite {
                judged_against: Some(CandidateId(9)),
                ..write
            }
        ),
        StoreError::NoSuchCandidate { .. },
        "set_verdict: unknown bar"
    );
}

fn the_loop_never_overwrites_a_hand_set_verdict(make: Make<'_>) {
    let store = make();
    let c = campaign_with_baseline(&*store, "alpha");
    let k = add(&*store, c.id, "rev1", 2_000);
    let rule = "the loop never overwrites a hand-set verdict";
    let hand = applied(
        store
            .set_verdict(
                c.id,
                k.id,
                &by_hand(
                    "ana",
                    Verdict::Interesting,
                    "look at the p95",
                    3_000,
                    HeadUpdate::Unchanged,
                ),
            )
            .unwrap(),
        "hand verdict",
    );
    assert_eq!(
        hand.verdict_set_by,
        Some(Actor::Person("ana".to_owned())),
        "{rule}: records who"
    );
    assert!(hand.is_hand_set(), "{rule}");
    for verdict in Verdict::ALL {
        let head = if verdict == Verdict::Keep {
            HeadUpdate::MakeHead {
                expected: Some(CandidateId(0)),
            }
        } else {
            HeadUpdate::Unchanged
        };
        match store
            .set_verdict(c.id, k.id, &by_loop(verdict, "loop", 4_000, head))
            .unwrap()
        {
            VerdictWriteOutcome::HandSet(seen) => {
                assert_eq!(seen, hand, "{rule}: reports the candidate as it is")
            }
            other => panic!("{rule}: a loop {verdict} write was not refused: {other:?}"),
        }
        assert_eq!(
            store.candidate(c.id, k.id).unwrap(),
            Some(hand.clone()),
            "{rule}: nothing changed after {verdict}"
        );
    }
    assert_eq!(
        store.campaign(c.id).unwrap().unwrap().head,
        Some(CandidateId(0)),
        "{rule}: the head did not move"
    );
    let bob = applied(
        store
            .set_verdict(
                c.id,
                k.id,
                &by_hand(
                    "bob",
                    Verdict::Discard,
                    "flaky",
                    5_000,
                    HeadUpdate::Unchanged,
                ),
            )
            .unwrap(),
        "a person may overwrite a person",
    );
    assert_eq!(
        bob.verdict_set_by,
        Some(Actor::Person("bob".to_owned())),
        "{rule}"
    );
    expect_err!(
        store.set_verdict(
            c.id,
            k.id,
            &by_hand(" ", Verdict::Discard, "x", 6_000, HeadUpdate::Unchanged)
        ),
        StoreError::InvalidValue { .. },
        "set_verdict: a person needs a name"
    );
}

fn a_person_hands_a_candidate_back_with_pending(make: Make<'_>) {
    let store = make();
    let c = campaign_with_baseline(&*store, "alpha");
    let k = add(&*store, c.id, "rev1", 2_000);
    applied(
        store
            .set_verdict(
                c.id,
                k.id,
                &by_hand("ana", Verdict::Crash, "oom", 3_000, HeadUpdate::Unchanged),
            )
            .unwrap(),
        "hand",
    );
    let rule = "a hand-set pending hands the candidate back to the loop";
    let back = applied(
        store
            .set_verdict(
                c.id,
                k.id,
                &by_hand(
                    "ana",
                    Verdict::Pending,
                    "fixed the driver",
                    4_000,
                    HeadUpdate::Unchanged,
                ),
            )
            .unwrap(),
        rule,
    );
    assert_eq!(
        (back.verdict, back.verdict_set_by.clone(), back.judged),
        (Verdict::Pending, None, None),
        "{rule}"
    );
    assert!(!back.is_hand_set(), "{rule}");
    let judged = applied(
        store
            .set_verdict(
                c.id,
                k.id,
                &by_loop(Verdict::Discard, "slower", 5_000, HeadUpdate::Unchanged),
            )
            .unwrap(),
        "the loop judges a handed-back candidate",
    );
    assert_eq!(judged.verdict_set_by, Some(Actor::Loop), "{rule}");
}

fn keeps_move_the_head_only_if_it_did_not_move(make: Make<'_>) {
    let store = make();
    let c = campaign_with_baseline(&*store, "alpha");
    let k1 = add(&*store, c.id, "rev1", 2_000);
    let k2 = add(&*store, c.id, "rev2", 2_001);
    let rule = "HeadUpdate::MakeHead";
    let keep = |expected| {
        by_loop(
            Verdict::Keep,
            "faster",
            3_000,
            HeadUpdate::MakeHead { expected },
        )
    };
    applied(
        store
            .set_verdict(c.id, k1.id, &keep(Some(CandidateId(0))))
            .unwrap(),
        rule,
    );
    assert_eq!(
        store.campaign(c.id).unwrap().unwrap().head,
        Some(k1.id),
        "{rule}: moves the head"
    );
    assert_eq!(
        store
            .set_verdict(c.id, k2.id, &keep(Some(CandidateId(0))))
            .unwrap(),
        VerdictWriteOutcome::HeadMoved(Some(k1.id)),
        "{rule}: a keep judged against an old head is refused with the new head"
    );
    let untouched = store.candidate(c.id, k2.id).unwrap().unwrap();
    assert_eq!(
        untouched.verdict,
        Verdict::Pending,
        "{rule}: a refused keep writes nothing"
    );
    applied(
        store.set_verdict(c.id, k2.id, &keep(Some(k1.id))).unwrap(),
        rule,
    );
    assert_eq!(
        store.campaign(c.id).unwrap().unwrap().head,
        Some(k2.id),
        "{rule}"
    );
    expect_err!(
        store.set_verdict(
            c.id,
            k1.id,
            &by_loop(
                Verdict::Interesting,
                "x",
                4_000,
                HeadUpdate::MakeHead {
                    expected: Some(k2.id)
                }
            )
        ),
        StoreError::InvalidValue { .. },
        "MakeHead needs a keep"
    );
    let plain_keep = applied(
        store
            .set_verdict(
                c.id,
                CandidateId(0),
                &by_hand(
                    "ana",
                    Verdict::Keep,
                    "still good",
                    5_000,
                    HeadUpdate::Unchanged,
                ),
            )
            .unwrap(),
        "a keep may leave the head alone",
    );
    assert_eq!(plain_keep.verdict, Verdict::Keep);
    assert_eq!(
        store.campaign(c.id).unwrap().unwrap().head,
        Some(k2.id),
        "HeadUpdate::Unchanged"
    );
}

fn the_head_is_always_a_keep(make: Make<'_>) {
    let store = make();
    let c = campaign_with_baseline(&*store, "alpha");
    let k1 = add(&*store, c.id, "rev1", 2_000);
    applied(
        store
            .set_verdict(
                c.id,
                k1.id,
                &by_loop(
                    Verdict::Keep,
                    "faster",
                    3_000,
                    HeadUpdate::MakeHead {
                        expected: Some(CandidateId(0)),
                    },
                ),
            )
            .unwrap(),
        "keep",
    );
    let rule = "the head is always a keep";
    expect_err!(
        store.set_verdict(
            c.id,
            k1.id,
            &by_hand(
                "ana",
                Verdict::Discard,
                "broken",
                4_000,
                HeadUpdate::Unchanged
            )
        ),
        StoreError::InvalidValue { .. },
        rule
    );
    expect_err!(
        store.set_verdict(
            c.id,
            k1.id,
            &by_hand(
                "ana",
                Verdict::Discard,
                "broken",
                4_000,
                HeadUpdate::Set(Some(k1.id))
            )
        ),
        StoreError::InvalidValue { .. },
        rule
    );
    let k2 = add(&*store, c.id, "rev2", 4_100);
    expect_err!(
        store.set_verdict(
            c.id,
            k1.id,
            &by_hand(
                "ana",
                Verdict::Discard,
                "broken",
                4_000,
                HeadUpdate::Set(Some(k2.id))
            )
        ),
        StoreError::InvalidValue { .. },
        "HeadUpdate::Set to a pending candidate"
    );
    assert_eq!(
        store.candidate(c.id, k1.id).unwrap().unwrap().verdict,
        Verdict::Keep,
        "{rule}: refused writes change nothing"
    );
    let discarded = applied(
        store
            .set_verdict(
                c.id,
                k1.id,
                &by_hand(
                    "ana",
                    Verdict::Discard,
                    "broken",
                    4_000,
                    HeadUpdate::Set(Some(CandidateId(0))),
                ),
            )
            .unwrap(),
        "discarding the head names the new head",
    );
    assert_eq!(discarded.verdict, Verdict::Discard, "{rule}");
    assert_eq!(
        store.campaign(c.id).unwrap().unwrap().head,
        Some(CandidateId(0)),
        "HeadUpdate::Set moves the head back"
    );
    applied(
        store
            .set_verdict(
                c.id,
                CandidateId(0),
                &by_hand(
                    "ana",
                    Verdict::Crash,
                    "bad baseline",
                    5_000,
                    HeadUpdate::Set(None),
                ),
            )
            .unwrap(),
        "HeadUpdate::Set(None)",
    );
    assert_eq!(
        store.campaign(c.id).unwrap().unwrap().head,
        None,
        "HeadUpdate::Set(None) clears the head"
    );
}
