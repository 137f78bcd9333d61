//! Shared test data: a campaign with a baseline, a running paired evaluation, and samples.

use std::collections::BTreeMap;

use tally_model::{
    Actor, CampaignId, CandidateId, EvaluationId, EvaluationKind, EvidenceRef, Side, UnixMillis,
    Verdict,
};
use tally_store::{
    HeadUpdate, NewCampaign, NewCandidate, NewEvaluation, NewMeasurement, Store, VerdictWrite,
    VerdictWriteOutcome,
};

/// Registers `alpha`, keeps its baseline `rev0`, queues `rev1` and starts a paired evaluation
/// of it against the baseline.
pub fn running_campaign(store: &dyn Store) -> (CampaignId, CandidateId, EvaluationId) {
    let c = store
        .create_campaign(&NewCampaign {
            name: "alpha".to_owned(),
            evaluator: "eval-1".to_owned(),
            config_text: "name = \"alpha\"\n".to_owned(),
            created: UnixMillis(1_000),
        })
        .unwrap();
    let added = store
        .add_candidates(
            c.id,
            &[NewCandidate {
                revision: "rev0".to_owned(),
                proposed_by: "init".to_owned(),
                note: None,
                created: UnixMillis(1_100),
            }],
        )
        .unwrap();
    let keep = VerdictWrite {
        verdict: Verdict::Keep,
        reason: Some("baseline".to_owned()),
        by: Actor::Loop,
        at: UnixMillis(1_200),
        judged_against: None,
        head: HeadUpdate::MakeHead { expected: None },
    };
    assert!(matches!(
        store.set_verdict(c.id, added[0].id, &keep).unwrap(),
        VerdictWriteOutcome::Applied(_)
    ));
    let k = store
        .add_candidates(
            c.id,
            &[NewCandidate {
                revision: "rev1".to_owned(),
                proposed_by: "ana".to_owned(),
                note: None,
                created: UnixMillis(2_000),
            }],
        )
        .unwrap()
        .remove(0);
    let e = store
        .queue_evaluation(&NewEvaluation {
            campaign: c.id,
            candidate: k.id,
            bar: Some(CandidateId(0)),
            kind: EvaluationKind::Judge,
            repeats: 3,
            queued: UnixMillis(3_000),
        })
        .unwrap();
    store.start_evaluation(e.id, UnixMillis(3_100)).unwrap();
    (c.id, k.id, e.id)
}

/// A candidate-side sample of evaluation `e` with `units` unit values for `tok_s`.
pub fn sample_with_units(
    campaign: CampaignId,
    candidate: CandidateId,
    e: EvaluationId,
    index: u32,
    units: usize,
) -> NewMeasurement {
    let per_unit: BTreeMap<String, f64> = (0..units)
        .map(|u| (format!("prompt-{u:04}"), 0.5 + u as f64))
        .collect();
    NewMeasurement {
        campaign,
        candidate,
        evaluation: Some(e),
        side: Side::Candidate,
        sample: index,
        attempt: 1,
        retry_of: None,
        pair: None,
        evaluator: "eval-1".to_owned(),
        rung: None,
        duration_ns: Some(1_000_000_000 + u64::from(index)),
        metrics: BTreeMap::from([("tok_s".to_owned(), per_unit.values().sum())]),
        error: None,
        started: UnixMillis(10_000 + i64::from(index)),
        ended: UnixMillis(11_000 + i64::from(index)),
        stdout_log: None,
        stderr_log: None,
        evidence: EvidenceRef::default(),
        config: None,
        recorded_by: Actor::Loop,
        held: None,
        units: BTreeMap::from([("tok_s".to_owned(), per_unit)]),
    }
}

/// A SQLite store file at schema version 5, exactly as the first five migrations left it, with
/// `rows` (SQL) written in the same transaction: what an older tally left for an upgrade to meet.
pub fn version_5_store(path: &std::path::Path, rows: &str) {
    let mut raw = rusqlite::Connection::open(path).unwrap();
    let tx = raw.transaction().unwrap();
    for sql in [
        include_str!("../../migrations/sqlite/0001_initial.sql"),
        include_str!("../../migrations/sqlite/0002_implementers.sql"),
        include_str!("../../migrations/sqlite/0003_run_usage.sql"),
        include_str!("../../migrations/sqlite/0004_checks.sql"),
        include_str!("../../migrations/sqlite/0005_held_gpus.sql"),
    ] {
        tx.execute_batch(sql).unwrap();
    }
    tx.pragma_update(None, "user_version", 5).unwrap();
    tx.execute_batch(rows).unwrap();
    tx.commit().unwrap();
}
