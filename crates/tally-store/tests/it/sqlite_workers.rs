//! The in-process evaluation slots of `SqliteStore` (`docs/team.md#slurm-slots`): two workers
//! of one process, each on a connection of its own to one file, racing for the same candidate
//! or queued evaluation — exactly one gets it, many times over — and recovery that abandons
//! only evaluations no live slot of the process holds.

use std::sync::{Arc, Barrier};

use tally_model::{CandidateId, EvaluationKind, EvaluationState, UnixMillis};
use tally_store::{NewCampaign, NewCandidate, NewEvaluation, SqliteStore, Store, WorkerStore};

#[test]
fn sqlite_slot_workers_claim_work_once_on_their_own_connections_and_recover_only_orphans() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tally.db");
    let setup = SqliteStore::open(&path).unwrap();
    let campaign = setup
        .create_campaign(&NewCampaign {
            name: "slots".into(),
            evaluator: "e".into(),
            config_text: "name = \"slots\"\n".into(),
            created: UnixMillis(1),
        })
        .unwrap();
    const ROUNDS: u32 = 20;
    let revisions: Vec<NewCandidate> = (0..ROUNDS)
        .map(|i| NewCandidate {
            revision: format!("rev{i}"),
            proposed_by: "ana".into(),
            note: None,
            created: UnixMillis(2),
        })
        .collect();
    setup.add_candidates(campaign.id, &revisions).unwrap();
    let workers: Vec<SqliteStore> = (0..2)
        .map(|slot| SqliteStore::open(&path).unwrap().as_worker(slot, 2))
        .collect();
    assert!(
        setup.with_workers().is_none(),
        "a plain store claims nothing"
    );
    assert_eq!(workers[1].with_workers().unwrap().worker_slot(), 1);

    // Round after round, both claim the same candidate at the same moment: one gets it.
    let mut wins = [0u32; 2];
    for round in 0..ROUNDS {
        let new = NewEvaluation {
            campaign: campaign.id,
            candidate: CandidateId(round),
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
                    let new = &new;
                    s.spawn(move || {
                        barrier.wait();
                        w.with_workers().unwrap().claim_candidate(new).unwrap()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let won: Vec<usize> = (0..2).filter(|&i| claims[i].is_some()).collect();
        assert_eq!(won.len(), 1, "round {round}: {claims:?}");
        let winner = won[0];
        wins[winner] += 1;
        let claimed = claims[winner].clone().unwrap();
        assert_eq!(claimed.state, EvaluationState::Running);
        let note = claimed.note.unwrap();
        assert!(
            note.starts_with(&format!("worker slot {winner} (tally pid=")),
            "{note}"
        );
    }
    let unfinished = setup.unfinished_evaluations(campaign.id).unwrap();
    assert_eq!(
        unfinished.len(),
        ROUNDS as usize,
        "one evaluation per candidate"
    );

    // A queued evaluation goes to the first worker that claims it.
    let queued = setup
        .queue_evaluation(&NewEvaluation {
            campaign: campaign.id,
            candidate: CandidateId(0),
            bar: None,
            kind: EvaluationKind::Confirm,
            repeats: 1,
            queued: UnixMillis(11),
        })
        .unwrap();
    assert!(
        workers[1]
            .claim_evaluation(queued.id, UnixMillis(12))
            .unwrap()
            .is_some()
    );
    assert_eq!(
        workers[0]
            .claim_evaluation(queued.id, UnixMillis(13))
            .unwrap(),
        None
    );

    // Slot 0's worker recovers: slot 1 is a live worker of this process, so only slot 0's own
    // evaluations (a killed predecessor's, as far as it can tell) are orphans.
    let orphans = workers[0]
        .abandon_orphans(campaign.id, "gone", UnixMillis(20))
        .unwrap();
    assert_eq!(orphans.len(), wins[0] as usize);
    let left = setup.unfinished_evaluations(campaign.id).unwrap();
    assert_eq!(left.len(), wins[1] as usize + 1);
    assert!(
        left.iter()
            .all(|e| e.note.as_deref().unwrap().starts_with("worker slot 1 ")),
        "{left:?}"
    );
    // A process that runs one slot only (evaluation_slots lowered) finds slot 1's orphaned.
    let alone = SqliteStore::open(&path).unwrap().as_worker(0, 1);
    let orphans = alone
        .abandon_orphans(campaign.id, "gone", UnixMillis(21))
        .unwrap();
    assert_eq!(orphans.len(), wins[1] as usize + 1);
    assert!(
        setup
            .unfinished_evaluations(campaign.id)
            .unwrap()
            .is_empty()
    );
}
