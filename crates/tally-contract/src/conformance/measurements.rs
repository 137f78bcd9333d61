//! Contract: measurements — every field round-trips exactly (floats bit for bit), pairs are
//! linked both ways, samples are checked against their evaluation, retries point at failed
//! attempts, refused samples write nothing, and lists are in recording order.

use std::collections::BTreeMap;
use std::path::PathBuf;

use tally_model::{
    Actor, CampaignId, CandidateId, EvaluationId, EvaluationKind, EvaluationState, EvidenceRef,
    Held, HeldFrom, Measurement, MeasurementId, Side, UnitValues, UnixMillis,
};

use super::{Make, add, campaign_with_baseline, expect_err, sample};
use crate::error::StoreError;
use crate::records::{NewEvaluation, NewMeasurement};
use crate::store::Store;

pub(super) fn run(make: Make<'_>) {
    round_trips_every_field(make);
    links_pairs_both_ways(make);
    checks_samples_against_their_evaluation(make);
    retries_point_at_failed_attempts(make);
    refused_samples_write_nothing(make);
    lists_in_recording_order(make);
}

/// A campaign with a kept baseline, `candidate#1` and a running paired evaluation of it.
fn running(store: &dyn Store) -> (CampaignId, CandidateId, EvaluationId) {
    let c = campaign_with_baseline(store, "alpha");
    let k = add(store, c.id, "rev1", 2_000);
    let e = store
        .queue_evaluation(&NewEvaluation {
            campaign: c.id,
            candidate: k.id,
            bar: Some(CandidateId(0)),
            kind: EvaluationKind::Judge,
            repeats: 2,
            queued: UnixMillis(3_000),
        })
        .unwrap();
    store.start_evaluation(e.id, UnixMillis(3_100)).unwrap();
    (c.id, k.id, e.id)
}

/// What the store must return for `new` recorded as `id` (before any pair links back to it).
fn expected(id: u64, new: &NewMeasurement) -> Measurement {
    Measurement {
        id: MeasurementId(id),
        campaign: new.campaign,
        candidate: new.candidate,
        evaluation: new.evaluation,
        side: new.side,
        sample: new.sample,
        attempt: new.attempt,
        retry_of: new.retry_of,
        pair: new.pair,
        evaluator: new.evaluator.clone(),
        rung: new.rung.clone(),
        duration_ns: new.duration_ns,
        metrics: new.metrics.clone(),
        error: new.error.clone(),
        started: new.started,
        ended: new.ended,
        stdout_log: new.stdout_log.clone(),
        stderr_log: new.stderr_log.clone(),
        evidence: new.evidence.clone(),
        config: new.config,
        recorded_by: new.recorded_by.clone(),
        held: new.held,
    }
}

fn round_trips_every_field(make: Make<'_>) {
    let store = make();
    let (c, k, e) = running(&*store);
    let config = store
        .record_config_text("name = \"alpha\"\n[[metrics]]\n")
        .unwrap();
    let rule = "record_measurement round trip";
    let metrics = BTreeMap::from([
        ("tok_s".to_owned(), 0.1 + 0.2),
        ("p50_ms".to_owned(), 1e-300),
        ("p95_ms".to_owned(), 123_456_789.123_456_79),
        ("neg".to_owned(), -0.0),
        ("big".to_owned(), f64::MAX),
    ]);
    let units: UnitValues = BTreeMap::from([
        (
            "tok_s".to_owned(),
            BTreeMap::from([
                ("prompt-1".to_owned(), 0.1),
                ("prompt-2".to_owned(), 0.2 + 1e-17),
            ]),
        ),
        (
            "p50_ms".to_owned(),
            BTreeMap::from([("prompt-1".to_owned(), 5e-324)]),
        ),
    ]);
    let new = NewMeasurement {
        evaluation: Some(e),
        side: Side::Candidate,
        sample: 2,
        rung: Some("quick".to_owned()),
        duration_ns: Some(123_456_789_012),
        metrics,
        error: Some("non-zero exit 1: CUDA error".to_owned()),
        started: UnixMillis(1_700_000_000_123),
        ended: UnixMillis(1_700_000_123_456),
        stdout_log: Some(PathBuf::from(".tally/logs/1.stdout")),
        stderr_log: Some(PathBuf::from(".tally/logs/1.stderr")),
        evidence: EvidenceRef {
            artifact: Some(".tally/evidence/1.jsonl.gz".to_owned()),
            gpu_busy_ns: Some(98_765_432_100),
        },
        config: Some(config),
        units: units.clone(),
        held: Some(Held {
            gpus: 8,
            elapsed_ns: 123_000_000_000,
            from: HeldFrom::Scontrol,
        }),
        ..sample(c, k)
    };
    let recorded = store.record_measurement(&new).unwrap();
    let want = expected(1, &new);
    assert_eq!(recorded, want, "{rule}: the returned measurement");
    assert_eq!(
        store.measurement(MeasurementId(1)).unwrap(),
        Some(want.clone()),
        "{rule}: measurement()"
    );
    for (name, value) in &new.metrics {
        assert_eq!(
            recorded.metrics[name].to_bits(),
            value.to_bits(),
            "{rule}: metric {name} bit for bit"
        );
    }
    let stored_units = store.units_of_measurement(recorded.id).unwrap();
    assert_eq!(stored_units, units, "{rule}: units");
    assert_eq!(
        stored_units["p50_ms"]["prompt-1"].to_bits(),
        5e-324_f64.to_bits(),
        "{rule}: unit values bit for bit"
    );
    let by_hand = NewMeasurement {
        recorded_by: Actor::Person("ana".to_owned()),
        duration_ns: None,
        metrics: BTreeMap::new(),
        ..sample(c, k)
    };
    let hand = store.record_measurement(&by_hand).unwrap();
    assert_eq!(
        hand,
        expected(2, &by_hand),
        "{rule}: a hand report, no evaluation, no duration"
    );
    assert_eq!(
        store.units_of_measurement(hand.id).unwrap(),
        UnitValues::new(),
        "units_of_measurement: none"
    );
    assert_eq!(
        store.measurement(MeasurementId(3)).unwrap(),
        None,
        "measurement(): unknown id"
    );
    expect_err!(
        store.units_of_measurement(MeasurementId(3)),
        StoreError::NoSuchMeasurement(MeasurementId(3)),
        "units_of_measurement: unknown id"
    );
}

fn links_pairs_both_ways(make: Make<'_>) {
    let store = make();
    let (c, k, e) = running(&*store);
    let rule = "pairs";
    let cand = |n: u32| NewMeasurement {
        evaluation: Some(e),
        side: Side::Candidate,
        sample: n,
        ..sample(c, k)
    };
    let bar = |n: u32| NewMeasurement {
        evaluation: Some(e),
        side: Side::Bar,
        sample: n,
        ..sample(c, CandidateId(0))
    };
    // Pair 0 runs C then B; pair 1 runs B then C.
    let c0 = store.record_measurement(&cand(0)).unwrap();
    assert_eq!(
        c0.pair, None,
        "{rule}: the first of a pair has no partner yet"
    );
    let b0 = store
        .record_measurement(&NewMeasurement {
            pair: Some(c0.id),
            ..bar(0)
        })
        .unwrap();
    assert_eq!(b0.pair, Some(c0.id), "{rule}");
    assert_eq!(
        store.measurement(c0.id).unwrap().unwrap().pair,
        Some(b0.id),
        "{rule}: linked back"
    );
    let b1 = store.record_measurement(&bar(1)).unwrap();
    let c1 = store
        .record_measurement(&NewMeasurement {
            pair: Some(b1.id),
            ..cand(1)
        })
        .unwrap();
    assert_eq!(
        store.measurement(b1.id).unwrap().unwrap().pair,
        Some(c1.id),
        "{rule}: linked back"
    );
    let before = store.list_measurements(c).unwrap();

    let c2 = store.record_measurement(&cand(2)).unwrap();
    expect_err!(
        store.record_measurement(&NewMeasurement {
            pair: Some(c2.id),
            ..cand(3)
        }),
        StoreError::InvalidValue { .. },
        "a pair is one candidate and one bar sample"
    );
    expect_err!(
        store.record_measurement(&NewMeasurement {
            pair: Some(c0.id),
            ..bar(2)
        }),
        StoreError::InvalidValue { .. },
        "a sample is paired once"
    );
    expect_err!(
        store.record_measurement(&NewMeasurement {
            pair: Some(c2.id),
            evaluation: None,
            side: Side::Bar,
            ..sample(c, CandidateId(0))
        }),
        StoreError::InvalidValue { .. },
        "pairs are taken within one evaluation"
    );
    expect_err!(
        store.record_measurement(&NewMeasurement {
            pair: Some(MeasurementId(99)),
            ..bar(2)
        }),
        StoreError::NoSuchMeasurement(MeasurementId(99)),
        "pair: unknown measurement"
    );
    let after = store.list_measurements(c).unwrap();
    assert_eq!(
        after.len(),
        before.len() + 1,
        "{rule}: refused samples are not stored"
    );
    assert_eq!(
        after.last().unwrap().pair,
        None,
        "{rule}: a refused pairing leaves its partner unpaired"
    );
}

fn checks_samples_against_their_evaluation(make: Make<'_>) {
    let store = make();
    let (c, k, e) = running(&*store);
    let rule = "samples and their evaluation";
    let in_e = NewMeasurement {
        evaluation: Some(e),
        ..sample(c, k)
    };
    expect_err!(
        store.record_measurement(&NewMeasurement {
            side: Side::Bar,
            ..in_e.clone()
        }),
        StoreError::InvalidValue { .. },
        "a bar sample measures the bar's candidate"
    );
    expect_err!(
        store.record_measurement(&NewMeasurement {
            candidate: CandidateId(0),
            ..in_e.clone()
        }),
        StoreError::InvalidValue { .. },
        "a candidate sample measures the evaluation's candidate"
    );
    expect_err!(
        store.record_measurement(&NewMeasurement {
            evaluation: Some(EvaluationId(50)),
            ..in_e.clone()
        }),
        StoreError::NoSuchEvaluation(EvaluationId(50)),
        "unknown evaluation"
    );
    let queued = store
        .queue_evaluation(&NewEvaluation {
            campaign: c,
            candidate: k,
            bar: None,
            kind: EvaluationKind::Remeasure,
            repeats: 1,
            queued: UnixMillis(5_000),
        })
        .unwrap();
    expect_err!(
        store.record_measurement(&NewMeasurement {
            evaluation: Some(queued.id),
            ..in_e.clone()
        }),
        StoreError::EvaluationState {
            found: EvaluationState::Queued,
            ..
        },
        "samples need a running evaluation"
    );
    store
        .start_evaluation(queued.id, UnixMillis(5_100))
        .unwrap();
    expect_err!(
        store.record_measurement(&NewMeasurement {
            evaluation: Some(queued.id),
            side: Side::Bar,
            candidate: CandidateId(0),
            ..in_e.clone()
        }),
        StoreError::InvalidValue { .. },
        "an unpaired evaluation has no bar samples"
    );
    store
        .end_evaluation(e, EvaluationState::Finished, None, UnixMillis(6_000))
        .unwrap();
    expect_err!(
        store.record_measurement(&in_e),
        StoreError::EvaluationState {
            found: EvaluationState::Finished,
            ..
        },
        "samples need a running evaluation"
    );
    let other = super::campaign(&*store, "beta");
    super::add(&*store, other.id, "b0", 7_000);
    expect_err!(
        store.record_measurement(&NewMeasurement {
            campaign: other.id,
            candidate: CandidateId(0),
            evaluation: Some(queued.id),
            ..in_e
        }),
        StoreError::InvalidValue { .. },
        "an evaluation of another campaign"
    );
    assert_eq!(
        store.list_measurements(c).unwrap(),
        vec![],
        "{rule}: nothing stored"
    );
}

fn retries_point_at_failed_attempts(make: Make<'_>) {
    let store = make();
    let (c, k, e) = running(&*store);
    let rule = "retries";
    let killed = store
        .record_measurement(&NewMeasurement {
            evaluation: Some(e),
            error: Some("killed by signal 15".to_owned()),
            ..sample(c, k)
        })
        .unwrap();
    let retry = store
        .record_measurement(&NewMeasurement {
            evaluation: Some(e),
            attempt: 2,
            retry_of: Some(killed.id),
            ..sample(c, k)
        })
        .unwrap();
    assert_eq!(
        (retry.attempt, retry.retry_of),
        (2, Some(killed.id)),
        "{rule}"
    );
    expect_err!(
        store.record_measurement(&NewMeasurement {
            attempt: 2,
            retry_of: Some(retry.id),
            ..sample(c, k)
        }),
        StoreError::InvalidValue { .. },
        "only a failed attempt is retried"
    );
    expect_err!(
        store.record_measurement(&NewMeasurement {
            attempt: 2,
            retry_of: Some(killed.id),
            ..sample(c, CandidateId(0))
        }),
        StoreError::InvalidValue { .. },
        "a retry measures the same candidate"
    );
    expect_err!(
        store.record_measurement(&NewMeasurement {
            attempt: 2,
            retry_of: Some(MeasurementId(77)),
            ..sample(c, k)
        }),
        StoreError::NoSuchMeasurement(MeasurementId(77)),
        "retry_of: unknown measurement"
    );
}

fn refused_samples_write_nothing(make: Make<'_>) {
    let store = make();
    let (c, k, _) = running(&*store);
    let rule = "refused samples write nothing";
    let with_metric = |name: &str, v: f64| NewMeasurement {
        metrics: BTreeMap::from([(name.to_owned(), v)]),
        ..sample(c, k)
    };
    let with_units = |units: UnitValues| NewMeasurement {
        units,
        ..sample(c, k)
    };
    let one_unit = |unit: &str, v: f64| {
        BTreeMap::from([("tok_s".to_owned(), BTreeMap::from([(unit.to_owned(), v)]))])
    };
    let bad = [
        ("NaN metric", with_metric("tok_s", f64::NAN)),
        ("infinite metric", with_metric("tok_s", f64::INFINITY)),
        ("empty metric name", with_metric("", 1.0)),
        (
            "infinite unit value",
            with_units(one_unit("u1", f64::NEG_INFINITY)),
        ),
        ("empty unit id", with_units(one_unit("", 1.0))),
        (
            "empty units of a metric",
            with_units(BTreeMap::from([("tok_s".to_owned(), BTreeMap::new())])),
        ),
        (
            "attempt 0",
            NewMeasurement {
                attempt: 0,
                ..sample(c, k)
            },
        ),
        (
            "empty evaluator",
            NewMeasurement {
                evaluator: String::new(),
                ..sample(c, k)
            },
        ),
        (
            "unknown config",
            NewMeasurement {
                config: Some(tally_model::ConfigTextId(404)),
                ..sample(c, k)
            },
        ),
        (
            "duration over 2^63 ns",
            NewMeasurement {
                duration_ns: Some(u64::MAX),
                ..sample(c, k)
            },
        ),
        (
            "gpu busy over 2^63 ns",
            NewMeasurement {
                evidence: EvidenceRef {
                    artifact: None,
                    gpu_busy_ns: Some(1 << 63),
                },
                ..sample(c, k)
            },
        ),
    ];
    for (what, new) in bad {
        expect_err!(
            store.record_measurement(&new),
            StoreError::InvalidValue { .. },
            format!("{rule}: {what}")
        );
    }
    expect_err!(
        store.record_measurement(&sample(c, CandidateId(9))),
        StoreError::NoSuchCandidate { .. },
        "record_measurement: unknown candidate"
    );
    assert_eq!(store.list_measurements(c).unwrap(), vec![], "{rule}");
    assert_eq!(store.totals(c).unwrap().measurements, 0, "{rule}");
    let ok = store
        .record_measurement(&with_units(one_unit("u1", 2.0)))
        .unwrap();
    assert_eq!(
        ok.id,
        MeasurementId(1),
        "{rule}: refused samples use up no id"
    );
    assert_eq!(
        store.units_of_measurement(ok.id).unwrap(),
        one_unit("u1", 2.0),
        "{rule}"
    );
}

fn lists_in_recording_order(make: Make<'_>) {
    let store = make();
    let (c, k, e) = running(&*store);
    let rule = "measurement lists";
    let with_unit =
        |v: f64| BTreeMap::from([("tok_s".to_owned(), BTreeMap::from([("u".to_owned(), v)]))]);
    let order = [
        NewMeasurement {
            evaluation: Some(e),
            units: with_unit(1.0),
            ..sample(c, k)
        },
        NewMeasurement {
            evaluation: Some(e),
            side: Side::Bar,
            ..sample(c, CandidateId(0))
        },
        NewMeasurement {
            evaluation: Some(e),
            sample: 1,
            ..sample(c, k)
        },
        NewMeasurement {
            units: with_unit(4.0),
            ..sample(c, CandidateId(0))
        },
        NewMeasurement {
            units: with_unit(5.0),
            ..sample(c, k)
        },
    ];
    for new in &order {
        store.record_measurement(new).unwrap();
    }
    let ids = |ms: Vec<Measurement>| ms.into_iter().map(|m| m.id.0).collect::<Vec<_>>();
    assert_eq!(
        ids(store.list_measurements(c).unwrap()),
        [1, 2, 3, 4, 5],
        "list_measurements: by id"
    );
    assert_eq!(
        ids(store.measurements_of_candidate(c, k).unwrap()),
        [1, 3, 5],
        "measurements_of_candidate: by id"
    );
    assert_eq!(
        ids(store.measurements_of_candidate(c, CandidateId(0)).unwrap()),
        [2, 4],
        "{rule}: bar samples belong to the bar's candidate"
    );
    assert_eq!(
        ids(store.measurements_of_evaluation(e).unwrap()),
        [1, 2, 3],
        "measurements_of_evaluation: both sides, by id"
    );
    assert_eq!(
        store.list_measurements(c).unwrap(),
        store.list_measurements(c).unwrap(),
        "{rule}: stable"
    );
    let units = store.units_of_candidate(c, k).unwrap();
    assert_eq!(
        units,
        BTreeMap::from([
            (MeasurementId(1), with_unit(1.0)),
            (MeasurementId(5), with_unit(5.0))
        ]),
        "units_of_candidate: only measurements with units, by id"
    );
    expect_err!(
        store.measurements_of_candidate(c, CandidateId(9)),
        StoreError::NoSuchCandidate { .. },
        "measurements_of_candidate: unknown"
    );
    expect_err!(
        store.units_of_candidate(c, CandidateId(9)),
        StoreError::NoSuchCandidate { .. },
        "units_of_candidate: unknown"
    );
    expect_err!(
        store.measurements_of_evaluation(EvaluationId(9)),
        StoreError::NoSuchEvaluation(_),
        "measurements_of_evaluation: unknown"
    );
}
