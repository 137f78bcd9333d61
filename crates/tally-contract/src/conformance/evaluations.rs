//! Contract: evaluations — ids, the `queued → running → finished | abandoned` life cycle, and
//! the unfinished list a new `tally run` re-queues from (`docs/campaign.md#crash-safety`).

use tally_model::{
    CampaignId, CandidateId, EvaluationId, EvaluationKind, EvaluationState, UnixMillis,
};

use super::{Make, add, campaign_with_baseline, expect_err};
use crate::error::StoreError;
use crate::records::NewEvaluation;

pub(super) fn run(make: Make<'_>) {
    walks_the_life_cycle(make);
    refuses_impossible_moves(make);
    lists_unfinished_evaluations_in_order(make);
}

fn judge(campaign: CampaignId, candidate: CandidateId, at: i64) -> NewEvaluation {
    NewEvaluation {
        campaign,
        candidate,
        bar: Some(CandidateId(0)),
        kind: EvaluationKind::Judge,
        repeats: 3,
        queued: UnixMillis(at),
    }
}

fn walks_the_life_cycle(make: Make<'_>) {
    let store = make();
    let c = campaign_with_baseline(&*store, "alpha");
    let k = add(&*store, c.id, "rev1", 2_000);
    let rule = "evaluation life cycle";
    let queued = store.queue_evaluation(&judge(c.id, k.id, 3_000)).unwrap();
    assert_eq!(queued.id, EvaluationId(1), "{rule}: ids count from 1");
    assert_eq!(
        (
            queued.campaign,
            queued.candidate,
            queued.bar,
            queued.kind,
            queued.repeats
        ),
        (c.id, k.id, Some(CandidateId(0)), EvaluationKind::Judge, 3),
        "{rule}"
    );
    assert_eq!(
        (queued.state, queued.queued, queued.started, queued.ended),
        (EvaluationState::Queued, UnixMillis(3_000), None, None),
        "{rule}"
    );
    assert_eq!(queued.note, None, "{rule}");
    let running = store
        .start_evaluation(queued.id, UnixMillis(3_100))
        .unwrap();
    assert_eq!(
        (running.state, running.started),
        (EvaluationState::Running, Some(UnixMillis(3_100))),
        "{rule}"
    );
    let finished = store
        .end_evaluation(
            queued.id,
            EvaluationState::Finished,
            None,
            UnixMillis(9_000),
        )
        .unwrap();
    assert_eq!(
        (finished.state, finished.ended),
        (EvaluationState::Finished, Some(UnixMillis(9_000))),
        "{rule}"
    );
    assert_eq!(
        finished.started,
        Some(UnixMillis(3_100)),
        "{rule}: keeps started"
    );
    assert_eq!(
        store.evaluation(queued.id).unwrap(),
        Some(finished.clone()),
        "evaluation(): stored"
    );
    assert_eq!(
        store.evaluation(EvaluationId(5)).unwrap(),
        None,
        "evaluation(): unknown id"
    );

    let second = store
        .queue_evaluation(&NewEvaluation {
            bar: None,
            kind: EvaluationKind::Remeasure,
            repeats: 1,
            ..judge(c.id, k.id, 10_000)
        })
        .unwrap();
    assert_eq!(second.id, EvaluationId(2), "{rule}: ids grow by one");
    assert_eq!(
        (second.bar, second.kind),
        (None, EvaluationKind::Remeasure),
        "{rule}: unpaired"
    );
    let abandoned = store
        .end_evaluation(
            second.id,
            EvaluationState::Abandoned,
            Some("superseded"),
            UnixMillis(10_500),
        )
        .unwrap();
    assert_eq!(
        (abandoned.state, abandoned.note.as_deref()),
        (EvaluationState::Abandoned, Some("superseded")),
        "{rule}: a queued one may be abandoned"
    );
    assert_eq!(
        store.list_evaluations(c.id).unwrap(),
        vec![finished, abandoned],
        "list_evaluations: by id"
    );
}

fn refuses_impossible_moves(make: Make<'_>) {
    let store = make();
    let c = campaign_with_baseline(&*store, "alpha");
    let k = add(&*store, c.id, "rev1", 2_000);
    let rule = "evaluation state changes";
    let e = store.queue_evaluation(&judge(c.id, k.id, 3_000)).unwrap();
    expect_err!(
        store.end_evaluation(e.id, EvaluationState::Finished, None, UnixMillis(1)),
        StoreError::EvaluationState {
            found: EvaluationState::Queued,
            ..
        },
        "a queued evaluation cannot finish"
    );
    store.start_evaluation(e.id, UnixMillis(3_100)).unwrap();
    expect_err!(
        store.start_evaluation(e.id, UnixMillis(3_200)),
        StoreError::EvaluationState {
            found: EvaluationState::Running,
            ..
        },
        "a running evaluation cannot start again"
    );
    expect_err!(
        store.end_evaluation(e.id, EvaluationState::Running, None, UnixMillis(1)),
        StoreError::InvalidValue { .. },
        "end_evaluation needs finished or abandoned"
    );
    store
        .end_evaluation(
            e.id,
            EvaluationState::Abandoned,
            Some("interrupted"),
            UnixMillis(4_000),
        )
        .unwrap();
    expect_err!(
        store.end_evaluation(e.id, EvaluationState::Finished, None, UnixMillis(5_000)),
        StoreError::EvaluationState {
            found: EvaluationState::Abandoned,
            ..
        },
        "an ended evaluation stays ended"
    );
    expect_err!(
        store.start_evaluation(EvaluationId(42), UnixMillis(1)),
        StoreError::NoSuchEvaluation(EvaluationId(42)),
        "start_evaluation: unknown id"
    );
    expect_err!(
        store.queue_evaluation(&NewEvaluation {
            repeats: 0,
            ..judge(c.id, k.id, 1)
        }),
        StoreError::InvalidValue { .. },
        "{rule}: repeats >= 1"
    );
    expect_err!(
        store.queue_evaluation(&judge(c.id, CandidateId(8), 1)),
        StoreError::NoSuchCandidate { .. },
        "queue_evaluation: unknown candidate"
    );
    expect_err!(
        store.queue_evaluation(&NewEvaluation {
            bar: Some(CandidateId(8)),
            ..judge(c.id, k.id, 1)
        }),
        StoreError::NoSuchCandidate { .. },
        "queue_evaluation: unknown bar"
    );
    assert_eq!(
        store.list_evaluations(c.id).unwrap().len(),
        1,
        "{rule}: refused queueing stores nothing"
    );
}

fn lists_unfinished_evaluations_in_order(make: Make<'_>) {
    let store = make();
    let c = campaign_with_baseline(&*store, "alpha");
    let k1 = add(&*store, c.id, "rev1", 2_000);
    let k2 = add(&*store, c.id, "rev2", 2_001);
    let rule = "unfinished_evaluations";
    assert_eq!(
        store.unfinished_evaluations(c.id).unwrap(),
        vec![],
        "{rule}: none yet"
    );
    let e1 = store.queue_evaluation(&judge(c.id, k1.id, 3_000)).unwrap();
    let e2 = store.queue_evaluation(&judge(c.id, k2.id, 3_001)).unwrap();
    let e3 = store.queue_evaluation(&judge(c.id, k2.id, 3_002)).unwrap();
    store.start_evaluation(e1.id, UnixMillis(3_100)).unwrap();
    store.start_evaluation(e2.id, UnixMillis(3_200)).unwrap();
    store
        .end_evaluation(e1.id, EvaluationState::Finished, None, UnixMillis(4_000))
        .unwrap();
    let ids: Vec<_> = store
        .unfinished_evaluations(c.id)
        .unwrap()
        .iter()
        .map(|e| (e.id, e.state))
        .collect();
    assert_eq!(
        ids,
        vec![
            (e2.id, EvaluationState::Running),
            (e3.id, EvaluationState::Queued)
        ],
        "{rule}: queued and running, by id"
    );
}
