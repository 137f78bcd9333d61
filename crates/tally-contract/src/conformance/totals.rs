//! Contract: aggregates and the snapshot — verdict counts, judged-since-last-keep, the exact
//! nanosecond ledger over every measurement (bar, failed, retried and hand-added ones
//! included), evaluation counts, recent evaluation durations, and the consistent bulk read.

use tally_model::{
    Actor, CampaignId, CandidateId, EvaluationId, EvaluationKind, EvaluationState, Side,
    UnixMillis, Verdict,
};

use super::{Make, add, applied, by_loop, campaign, campaign_with_baseline, sample};
use crate::records::{
    CampaignTotals, EvaluationCounts, EvaluationDuration, HeadUpdate, NewEvaluation,
    NewMeasurement, VerdictCounts,
};
use crate::store::Store;

pub(super) fn run(make: Make<'_>) {
    an_empty_campaign_has_zero_totals(make);
    totals_count_and_sum_everything(make);
}

fn an_empty_campaign_has_zero_totals(make: Make<'_>) {
    let store = make();
    let c = campaign(&*store, "alpha");
    assert_eq!(
        store.totals(c.id).unwrap(),
        CampaignTotals::default(),
        "totals of an empty campaign"
    );
    assert_eq!(
        store.recent_evaluation_durations(c.id, 5).unwrap(),
        vec![],
        "no evaluations yet"
    );
    let snap = store.snapshot(c.id).unwrap();
    assert_eq!(
        (
            snap.campaign,
            snap.candidates.len(),
            snap.measurements.len(),
            snap.evaluations.len()
        ),
        (c, 0, 0, 0),
        "empty snapshot"
    );
}

/// Queues, starts and returns an evaluation of `candidate` against the baseline.
fn evaluation(store: &dyn Store, c: CampaignId, candidate: u32, started: i64) -> EvaluationId {
    let e = store
        .queue_evaluation(&NewEvaluation {
            campaign: c,
            candidate: CandidateId(candidate),
            bar: Some(CandidateId(0)),
            kind: EvaluationKind::Judge,
            repeats: 1,
            queued: UnixMillis(started - 10),
        })
        .unwrap();
    store.start_evaluation(e.id, UnixMillis(started)).unwrap();
    e.id
}

/// Records a sample of `ms` milliseconds (stored as ns) in evaluation `e` (bar samples
/// measure the baseline).
fn timed(
    store: &dyn Store,
    c: CampaignId,
    e: Option<EvaluationId>,
    (side, candidate): (Side, u32),
    ms: u64,
    started: i64,
    error: bool,
) {
    let candidate = if side == Side::Bar { 0 } else { candidate };
    store
        .record_measurement(&NewMeasurement {
            evaluation: e,
            side,
            duration_ns: Some(ms * 1_000_000),
            error: error.then(|| "timeout after 600 s".to_owned()),
            started: UnixMillis(started),
            ..sample(c, CandidateId(candidate))
        })
        .unwrap();
}

fn totals_count_and_sum_everything(make: Make<'_>) {
    let store = make();
    let c = campaign_with_baseline(&*store, "alpha").id;
    for n in 1..=5 {
        add(&*store, c, &format!("rev{n}"), 2_000 + n);
    }
    let judge = |n: u32, verdict, head| {
        applied(
            store
                .set_verdict(c, CandidateId(n), &by_loop(verdict, "r", 9_000, head))
                .unwrap(),
            "verdict",
        );
    };
    judge(1, Verdict::Discard, HeadUpdate::Unchanged);
    judge(
        2,
        Verdict::Keep,
        HeadUpdate::MakeHead {
            expected: Some(CandidateId(0)),
        },
    );
    judge(3, Verdict::Interesting, HeadUpdate::Unchanged);
    judge(4, Verdict::Crash, HeadUpdate::Unchanged);

    let e1 = evaluation(&*store, c, 1, 20_000);
    timed(
        &*store,
        c,
        Some(e1),
        (Side::Candidate, 1),
        1_500,
        20_001,
        false,
    );
    timed(&*store, c, Some(e1), (Side::Bar, 1), 2_000, 20_002, false);
    timed(
        &*store,
        c,
        Some(e1),
        (Side::Candidate, 1),
        500,
        20_003,
        true,
    );
    timed(
        &*store,
        c,
        Some(e1),
        (Side::Candidate, 1),
        1_000,
        20_004,
        false,
    );
    store
        .end_evaluation(e1, EvaluationState::Finished, None, UnixMillis(21_000))
        .unwrap();
    let e2 = evaluation(&*store, c, 2, 30_000);
    timed(
        &*store,
        c,
        Some(e2),
        (Side::Candidate, 2),
        3_000,
        30_001,
        false,
    );
    timed(&*store, c, Some(e2), (Side::Bar, 2), 3_000, 30_002, false);
    store
        .end_evaluation(e2, EvaluationState::Finished, None, UnixMillis(31_000))
        .unwrap();
    let e3 = evaluation(&*store, c, 3, 40_000);
    timed(
        &*store,
        c,
        Some(e3),
        (Side::Candidate, 3),
        7_000,
        40_001,
        true,
    );
    store
        .end_evaluation(
            e3,
            EvaluationState::Abandoned,
            Some("interrupted"),
            UnixMillis(41_000),
        )
        .unwrap();
    let _running = evaluation(&*store, c, 5, 50_000);
    store
        .queue_evaluation(&NewEvaluation {
            campaign: c,
            candidate: CandidateId(5),
            bar: None,
            kind: EvaluationKind::Remeasure,
            repeats: 1,
            queued: UnixMillis(60_000),
        })
        .unwrap();
    timed(&*store, c, None, (Side::Candidate, 4), 250, 15_000, false);
    store
        .record_measurement(&NewMeasurement {
            duration_ns: None,
            recorded_by: Actor::Person("ana".to_owned()),
            started: UnixMillis(70_000),
            ..sample(c, CandidateId(3))
        })
        .unwrap();

    let totals = store.totals(c).unwrap();
    let want = CampaignTotals {
        verdicts: VerdictCounts {
            pending: 1,
            keep: 2,
            interesting: 1,
            discard: 1,
            crash: 1,
        },
        judged_since_last_keep: 2,
        measurements: 9,
        failed_measurements: 2,
        duration_ns: 18_250_000_000,
        first_measurement_started: Some(UnixMillis(15_000)),
        first_evaluation_started: Some(UnixMillis(20_000)),
        evaluations: EvaluationCounts {
            queued: 1,
            running: 1,
            finished: 2,
            abandoned: 1,
        },
    };
    assert_eq!(totals, want, "totals");
    assert_eq!(
        (totals.verdicts.total(), totals.verdicts.judged()),
        (6, 5),
        "VerdictCounts sums"
    );

    assert_eq!(
        store.recent_evaluation_durations(c, 5).unwrap(),
        vec![
            EvaluationDuration {
                evaluation: e2,
                duration_ns: 6_000_000_000,
                measurements: 2
            },
            EvaluationDuration {
                evaluation: e1,
                duration_ns: 5_000_000_000,
                measurements: 4
            },
        ],
        "recent_evaluation_durations: finished only, newest first, both sides, failed included"
    );
    assert_eq!(
        store
            .recent_evaluation_durations(c, 1)
            .unwrap()
            .iter()
            .map(|d| d.evaluation)
            .collect::<Vec<_>>(),
        vec![e2],
        "recent_evaluation_durations: limit"
    );

    let snap = store.snapshot(c).unwrap();
    assert_eq!(
        Some(snap.campaign),
        store.campaign(c).unwrap(),
        "snapshot: campaign"
    );
    assert_eq!(
        snap.candidates,
        store.list_candidates(c).unwrap(),
        "snapshot: candidates"
    );
    assert_eq!(
        snap.measurements,
        store.list_measurements(c).unwrap(),
        "snapshot: measurements"
    );
    assert_eq!(
        snap.evaluations,
        store.list_evaluations(c).unwrap(),
        "snapshot: evaluations"
    );
    assert_eq!(
        snap.measurements.len(),
        9,
        "snapshot: every measurement once"
    );

    let other = campaign(&*store, "beta");
    assert_eq!(
        store.totals(other.id).unwrap(),
        CampaignTotals::default(),
        "totals are per campaign"
    );
}
