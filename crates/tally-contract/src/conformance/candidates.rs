//! Contract: candidates — numbering per campaign from 0, parent = head at queueing time,
//! oldest-first listing, the pending queue, and all-or-nothing batches.

use tally_model::{CampaignId, CandidateId, UnixMillis, Verdict};

use super::{Make, add, applied, by_loop, campaign, campaign_with_baseline, expect_err, proposal};
use crate::error::StoreError;
use crate::records::{HeadUpdate, NewCandidate};

pub(super) fn run(make: Make<'_>) {
    queues_in_order_with_the_head_as_parent(make);
    numbers_candidates_per_campaign(make);
    pending_queue_is_oldest_first(make);
    refused_batches_add_nothing(make);
}

fn queues_in_order_with_the_head_as_parent(make: Make<'_>) {
    let store = make();
    let c = campaign(&*store, "alpha");
    let rule = "add_candidates";
    let baseline = add(&*store, c.id, "rev0", 1_100);
    assert_eq!(
        baseline.id,
        CandidateId(0),
        "{rule}: the first candidate is candidate#0"
    );
    assert_eq!(baseline.parent, None, "{rule}: no head, no parent");
    assert_eq!(
        baseline.verdict,
        Verdict::Pending,
        "{rule}: new candidates are pending"
    );
    assert_eq!(
        baseline.verdict_set_by, None,
        "{rule}: pending belongs to the loop"
    );
    assert_eq!(
        (
            baseline.reason.clone(),
            baseline.judged,
            baseline.judged_against
        ),
        (None, None, None),
        "{rule}"
    );
    assert_eq!(baseline.campaign, c.id, "{rule}");
    assert_eq!(baseline.created, UnixMillis(1_100), "{rule}");
    applied(
        store
            .set_verdict(
                c.id,
                CandidateId(0),
                &by_loop(
                    Verdict::Keep,
                    "baseline",
                    1_200,
                    HeadUpdate::MakeHead { expected: None },
                ),
            )
            .unwrap(),
        "keep baseline",
    );
    let batch = store
        .add_candidates(
            c.id,
            &[
                NewCandidate {
                    note: Some("fuse the kernels".to_owned()),
                    ..proposal("rev1", 2_000)
                },
                proposal("rev2", 2_001),
                proposal("rev1", 2_002),
            ],
        )
        .unwrap();
    let ids: Vec<_> = batch.iter().map(|k| k.id).collect();
    assert_eq!(
        ids,
        vec![CandidateId(1), CandidateId(2), CandidateId(3)],
        "{rule}: numbered in the given order"
    );
    assert!(
        batch.iter().all(|k| k.parent == Some(CandidateId(0))),
        "{rule}: parent = head: {batch:?}"
    );
    assert_eq!(
        batch[0].note.as_deref(),
        Some("fuse the kernels"),
        "{rule}: note kept"
    );
    assert_eq!(
        batch[2].revision, "rev1",
        "{rule}: the same revision may be queued twice"
    );
    assert_eq!(batch[1].proposed_by, "ana", "{rule}");
    for k in &batch {
        assert_eq!(
            store.candidate(c.id, k.id).unwrap().as_ref(),
            Some(k),
            "candidate(): same as returned"
        );
    }
    let listed = store.list_candidates(c.id).unwrap();
    let revisions: Vec<_> = listed.iter().map(|k| k.revision.as_str()).collect();
    assert_eq!(
        revisions,
        ["rev0", "rev1", "rev2", "rev1"],
        "list_candidates: oldest first"
    );
    assert_eq!(
        store.list_candidates(c.id).unwrap(),
        listed,
        "list_candidates: stable"
    );

    applied(
        store
            .set_verdict(
                c.id,
                CandidateId(1),
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
        "keep candidate#1",
    );
    let later = add(&*store, c.id, "rev4", 3_100);
    assert_eq!(
        (later.id, later.parent),
        (CandidateId(4), Some(CandidateId(1))),
        "{rule}: parent follows the head"
    );
    assert_eq!(
        store.candidate(c.id, CandidateId(5)).unwrap(),
        None,
        "candidate(): unknown number"
    );
    assert_eq!(
        store.candidate(CampaignId(77), CandidateId(0)).unwrap(),
        None,
        "candidate(): unknown campaign"
    );
}

fn numbers_candidates_per_campaign(make: Make<'_>) {
    let store = make();
    let a = campaign_with_baseline(&*store, "alpha");
    add(&*store, a.id, "a1", 2_000);
    let b = campaign(&*store, "beta");
    let first_b = add(&*store, b.id, "b0", 2_100);
    assert_eq!(
        first_b.id,
        CandidateId(0),
        "numbers restart at 0 in each campaign"
    );
    assert_eq!(first_b.parent, None, "beta has no head");
    assert_eq!(
        store.list_candidates(b.id).unwrap().len(),
        1,
        "lists are per campaign"
    );
    assert_eq!(
        store.list_candidates(a.id).unwrap().len(),
        2,
        "lists are per campaign"
    );
}

fn pending_queue_is_oldest_first(make: Make<'_>) {
    let store = make();
    let c = campaign(&*store, "alpha");
    let rule = "next_pending_candidate";
    assert_eq!(
        store.next_pending_candidate(c.id).unwrap(),
        None,
        "{rule}: empty queue"
    );
    store
        .add_candidates(
            c.id,
            &[proposal("r0", 1), proposal("r1", 2), proposal("r2", 3)],
        )
        .unwrap();
    assert_eq!(
        store.next_pending_candidate(c.id).unwrap().map(|k| k.id),
        Some(CandidateId(0)),
        "{rule}"
    );
    applied(
        store
            .set_verdict(
                c.id,
                CandidateId(0),
                &by_loop(
                    Verdict::Keep,
                    "baseline",
                    4,
                    HeadUpdate::MakeHead { expected: None },
                ),
            )
            .unwrap(),
        rule,
    );
    applied(
        store
            .set_verdict(
                c.id,
                CandidateId(2),
                &by_loop(
                    Verdict::Crash,
                    "no successful measurement",
                    5,
                    HeadUpdate::Unchanged,
                ),
            )
            .unwrap(),
        rule,
    );
    assert_eq!(
        store.next_pending_candidate(c.id).unwrap().map(|k| k.id),
        Some(CandidateId(1)),
        "{rule}: skips judged ones"
    );
    applied(
        store
            .set_verdict(
                c.id,
                CandidateId(1),
                &by_loop(Verdict::Discard, "slower", 6, HeadUpdate::Unchanged),
            )
            .unwrap(),
        rule,
    );
    assert_eq!(
        store.next_pending_candidate(c.id).unwrap(),
        None,
        "{rule}: all judged"
    );
    applied(
        store
            .set_verdict(
                c.id,
                CandidateId(2),
                &by_loop(Verdict::Pending, "re-queued", 7, HeadUpdate::Unchanged),
            )
            .unwrap(),
        rule,
    );
    let again = store
        .next_pending_candidate(c.id)
        .unwrap()
        .expect("re-queued");
    assert_eq!(
        again.id,
        CandidateId(2),
        "{rule}: a candidate set back to pending is queued again"
    );
    assert_eq!(
        (again.judged, again.verdict_set_by.clone()),
        (None, None),
        "{rule}: pending clears judged and set_by"
    );
    assert_eq!(
        again.reason.as_deref(),
        Some("re-queued"),
        "{rule}: pending keeps its reason"
    );
}

fn refused_batches_add_nothing(make: Make<'_>) {
    let store = make();
    let c = campaign(&*store, "alpha");
    add(&*store, c.id, "r0", 1);
    let rule = "add_candidates: a refused batch adds nothing";
    expect_err!(
        store.add_candidates(c.id, &[proposal("r1", 2), proposal("", 3)]),
        StoreError::InvalidValue { .. },
        rule
    );
    expect_err!(
        store.add_candidates(
            c.id,
            &[NewCandidate {
                proposed_by: String::new(),
                ..proposal("r1", 2)
            }]
        ),
        StoreError::InvalidValue { .. },
        rule
    );
    assert_eq!(store.list_candidates(c.id).unwrap().len(), 1, "{rule}");
    assert_eq!(
        add(&*store, c.id, "r1", 4).id,
        CandidateId(1),
        "{rule}: numbering continues"
    );
    assert_eq!(
        store.add_candidates(c.id, &[]).unwrap(),
        vec![],
        "an empty batch adds nothing"
    );
}
