//! Worker slots, claims and orphan recovery of `PgStore` (`docs/team.md#workers`), against the
//! server named by `TALLY_TEST_PG_URL`: of two workers claiming the same candidate or queued
//! evaluation exactly one gets it, every slot taken refuses a third worker naming the holders,
//! and recovery abandons only the evaluations whose worker's slot is free. Without the server
//! (or the `postgres` feature) the test prints a `SKIPPED` line and returns.

#![cfg(feature = "postgres")]

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use tally_model::{CandidateId, EvaluationKind, EvaluationState, UnixMillis};
use tally_store::{
    NewCampaign, NewCandidate, NewEvaluation, PgOptions, PgRunLock, PgStore, RunLockError, Store,
    WorkerStore,
};

use crate::postgres::pg_url;

/// A schema for the test, dropped at its end.
struct Schema {
    url: String,
    name: String,
}

impl Drop for Schema {
    fn drop(&mut self) {
        let _ = PgStore::drop_schema(&self.url, &self.name);
    }
}

#[test]
fn postgres_workers_claim_work_once_and_recover_only_orphans() {
    let test = "postgres_workers_claim_work_once_and_recover_only_orphans";
    let Some(url) = pg_url(test) else {
        return;
    };
    let schema = Schema {
        url: url.clone(),
        name: format!("t_workers_{}", std::process::id()),
    };
    let options = PgOptions {
        schema: Some(schema.name.clone()),
        ..PgOptions::default()
    };
    let setup = PgStore::open_with(&url, &options).unwrap();
    // Locks and worker stores reach the schema through the URL, as `tally run` does.
    let separator = if url.contains('?') { '&' } else { '?' };
    let schema_url = format!("{url}{separator}options=-c%20search_path%3D{}", schema.name);
    let campaign = setup
        .create_campaign(&NewCampaign {
            name: "team".into(),
            evaluator: "e".into(),
            config_text: "name = \"team\"\n".into(),
            created: UnixMillis(1),
        })
        .unwrap();
    setup
        .add_candidates(
            campaign.id,
            &["a", "b"].map(|rev| NewCandidate {
                revision: rev.into(),
                proposed_by: "ana".into(),
                note: None,
                created: UnixMillis(2),
            }),
        )
        .unwrap();

    // Two slots: two workers get one each, a third is refused naming both holders.
    let lock0 = PgRunLock::acquire_slot(&schema_url, "team", 2).unwrap();
    let lock1 = PgRunLock::acquire_slot(&schema_url, "team", 2).unwrap();
    assert_eq!((lock0.slot(), lock1.slot()), (0, 1));
    match PgRunLock::acquire_slot(&schema_url, "team", 2) {
        Err(RunLockError::Held(held)) => {
            assert_eq!(held.holders.len(), 2, "{held}");
            let text = held.to_string();
            assert!(
                text.starts_with("all 2 evaluation slots of campaign team are taken (tally pid="),
                "{text}"
            );
        }
        other => panic!("a third slot: {other:?}"),
    }
    let workers: Vec<PgStore> = (0..2)
        .map(|slot| PgStore::open(&schema_url).unwrap().as_worker(slot))
        .collect();

    // Both claim candidate a at once: exactly one gets it, running and marked with its slot.
    let judge_a = NewEvaluation {
        campaign: campaign.id,
        candidate: CandidateId(0),
        bar: None,
        kind: EvaluationKind::Judge,
        repeats: 1,
        queued: UnixMillis(10),
    };
    let barrier = Arc::new(Barrier::new(2));
    let claims: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = workers
            .iter()
            .map(|w| {
                let barrier = Arc::clone(&barrier);
                let new = &judge_a;
                s.spawn(move || {
                    barrier.wait();
                    w.with_workers().unwrap().claim_candidate(new).unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let won: Vec<usize> = (0..2).filter(|&i| claims[i].is_some()).collect();
    assert_eq!(won.len(), 1, "{claims:?}");
    let winner = won[0];
    let e1 = claims[winner].clone().unwrap();
    assert_eq!(e1.state, EvaluationState::Running);
    let note = e1.note.clone().unwrap();
    assert!(
        note.starts_with(&format!("worker slot {winner} (tally pid=")),
        "{note}"
    );
    // While it runs, nobody claims candidate a again.
    assert_eq!(workers[1 - winner].claim_candidate(&judge_a).unwrap(), None);

    // A queued evaluation (a confirm of b) goes to the first worker that claims it.
    let e2 = setup
        .queue_evaluation(&NewEvaluation {
            candidate: CandidateId(1),
            kind: EvaluationKind::Confirm,
            queued: UnixMillis(11),
            ..judge_a.clone()
        })
        .unwrap();
    let claimed = workers[1].claim_evaluation(e2.id, UnixMillis(12)).unwrap();
    assert_eq!(claimed.map(|e| e.state), Some(EvaluationState::Running));
    assert_eq!(
        workers[0].claim_evaluation(e2.id, UnixMillis(13)).unwrap(),
        None
    );

    // Both workers hold their slots: a worker of another slot finds no orphan.
    let observer = PgStore::open(&schema_url).unwrap().as_worker(5);
    let none = observer
        .abandon_orphans(campaign.id, "gone", UnixMillis(20))
        .unwrap();
    assert!(none.is_empty(), "{none:?}");

    // Slot 1's worker goes away (its connection closes): its evaluations, only, are orphans.
    drop(lock1);
    let mut expected = vec![e2.id];
    if winner == 1 {
        expected.insert(0, e1.id);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let orphans = loop {
        let found = observer
            .abandon_orphans(campaign.id, "gone", UnixMillis(21))
            .unwrap();
        if !found.is_empty() || Instant::now() > deadline {
            break found;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(orphans.iter().map(|e| e.id).collect::<Vec<_>>(), expected);
    for id in &expected {
        let e = setup.evaluation(*id).unwrap().unwrap();
        assert_eq!(e.state, EvaluationState::Abandoned);
        assert_eq!(e.note.as_deref(), Some("gone"));
    }
    let e1_now = setup.evaluation(e1.id).unwrap().unwrap();
    let live = if winner == 0 {
        EvaluationState::Running
    } else {
        EvaluationState::Abandoned
    };
    assert_eq!(e1_now.state, live);
    drop(lock0);
}
