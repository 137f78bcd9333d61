//! Accounting cases of `docs/evidence.md#conformance-cases` (01, 04, 05, 06, 09) with the exact expected numbers.

use serde_json::json;
use tally_evidence::{
    ActivityDomain, BusyIntervals, BusySpan, ClockKind, DeviceClock, Error, EventBody, Nanos,
    account_gpu_time, resolve_inference_events,
};

use crate::build::{
    Ctx, accounting_summary, act, act_intervals, activity, counts, ev, ev_meta, iteration,
    unresolved_rows,
};

pub fn key_k() -> DeviceClock {
    DeviceClock {
        device_uuid: "GPU-A".into(),
        clock_domain: "w/mono".into(),
        clock_kind: ClockKind::Monotonic,
    }
}

/// Case 01's records: I1 [0,10ms) with K1 [0,8ms) and K2 [2,10ms); I2 [20,25ms) with K3.
pub fn case_01() -> Vec<tally_evidence::InferenceRecord> {
    let e = Ctx::engine();
    const MS: Nanos = 1_000_000;
    vec![
        ev(&e, "i1", iteration("I1", Some(0), Some(10 * MS))),
        ev(&e, "i2", iteration("I2", Some(20 * MS), Some(25 * MS))),
        act("k1", "K1", Some("I1"), 0, 8 * MS),
        act("k2", "K2", Some("I1"), 2 * MS, 10 * MS),
        act("k3", "K3", Some("I2"), 20 * MS, 25 * MS),
    ]
}

#[test]
fn case_01_overlap_summed_vs_busy() {
    let graph = resolve_inference_events(case_01()).unwrap();
    assert_eq!(counts(&graph), [0, 2, 0, 0, 3, 0]);
    assert!(graph.unresolved().is_empty());
    let acc = account_gpu_time(&graph).unwrap();
    assert_eq!(acc.run_id.as_deref(), Some("r"));
    let k = "GPU-A|w/mono|monotonic";
    assert_eq!(
        accounting_summary(&acc),
        json!({
            "iterations": {
                "eng/I1": {"elapsed": 10_000_000, "gpu": {k: [16_000_000, 10_000_000, 2]}},
                "eng/I2": {"elapsed": 5_000_000, "gpu": {k: [5_000_000, 5_000_000, 1]}}
            },
            "totals": {k: [21_000_000, 15_000_000, 3]},
            "unattributed": [],
            "unmeasured": []
        })
    );
    assert_eq!(
        acc.device_spans.get(&key_k()),
        Some(&BusySpan {
            start_ns: 0,
            end_ns: 25_000_000
        })
    );
}

#[test]
fn case_04_measurability() {
    let e = Ctx::engine();
    let t = Ctx::trace();
    let runtime = {
        let mut a = activity("K-runtime", None, None, None);
        a.activity_domain = ActivityDomain::Runtime;
        a
    };
    let records = vec![
        ev(&e, "i1", iteration("I1", Some(0), Some(100))),
        act("k-mono", "K-mono", Some("I1"), 0, 50),
        ev(
            &t.clone().kind(ClockKind::Device),
            "k-dev",
            EventBody::Activity(activity("K-dev", Some("I1"), Some(0), Some(80))),
        ),
        ev(
            &t.clone().kind(ClockKind::Wall),
            "k-wall",
            EventBody::Activity(activity("K-wall", Some("I1"), Some(0), Some(80))),
        ),
        ev(
            &t.clone().uuid(None),
            "k-nouuid",
            EventBody::Activity(activity("K-nouuid", Some("I1"), Some(0), Some(80))),
        ),
        ev(
            &t,
            "k-noend",
            EventBody::Activity(activity("K-noend", None, Some(0), None)),
        ),
        act("k-dangling", "K-dangling", Some("I9"), 60, 90),
        ev(&t, "k-runtime", EventBody::Activity(runtime)),
        act("k-free", "K-free", None, 200, 300),
    ];
    let graph = resolve_inference_events(records).unwrap();
    assert_eq!(counts(&graph), [0, 1, 0, 0, 8, 0]);
    assert_eq!(
        unresolved_rows(graph.unresolved()),
        json!([["k-dangling", "iteration", "eng", "I9"]])
    );
    let acc = account_gpu_time(&graph).unwrap();
    let k = "GPU-A|w/mono|monotonic";
    let kd = "GPU-A|w/mono|device";
    assert_eq!(
        accounting_summary(&acc),
        json!({
            "iterations": {"eng/I1": {"elapsed": 100, "gpu": {k: [50, 50, 1], kd: [80, 80, 1]}}},
            "totals": {k: [180, 180, 3], kd: [80, 80, 1]},
            "unattributed": ["tr/K-free", "tr/K-noend", "tr/K-runtime"],
            "unmeasured": ["tr/K-noend", "tr/K-nouuid", "tr/K-wall"]
        })
    );
    // The JSON order of device keys: (uuid, domain, kind as its string): device < monotonic.
    let keys: Vec<String> = acc.device_totals.keys().map(ToString::to_string).collect();
    assert_eq!(keys, [kd, k]);
}

#[test]
fn case_05_intervals() {
    let e = Ctx::engine();
    let records = vec![
        ev(&e, "i1", iteration("I1", Some(0), Some(1000))),
        act_intervals("k1", "K1", Some("I1"), 100, 200, &[(0, 30), (50, 50)]),
        act("k2", "K2", Some("I1"), 120, 160),
        act("k3", "K3", Some("I1"), 300, 300),
        act("k4", "K4", Some("I1"), 400, 410),
        act("k5", "K5", Some("I1"), 410, 420),
    ];
    let graph = resolve_inference_events(records).unwrap();
    let acc = account_gpu_time(&graph).unwrap();
    let k = "GPU-A|w/mono|monotonic";
    assert_eq!(
        accounting_summary(&acc),
        json!({
            "iterations": {"eng/I1": {"elapsed": 1000, "gpu": {k: [140, 120, 5]}}},
            "totals": {k: [140, 120, 5]},
            "unattributed": [],
            "unmeasured": []
        })
    );
}

#[test]
fn null_intervals_mean_the_whole_span() {
    let mut body = activity("K1", None, Some(100), Some(200));
    body.intervals = BusyIntervals::Null;
    let graph = resolve_inference_events([ev_meta(
        &Ctx::trace(),
        "k1",
        r#"{"intervals": null}"#,
        EventBody::Activity(body),
    )])
    .unwrap();
    let acc = account_gpu_time(&graph).unwrap();
    assert_eq!(acc.device_totals[&key_k()].summed_activity_ns, 100);
    assert_eq!(acc.device_totals[&key_k()].busy_ns, 100);
}

#[test]
fn case_06_alias_contexts_count_as_one_device_clock() {
    // Two v4 definitions of the same context arrive as two separate Arcs of equal content.
    let records = vec![
        act("k1", "K1", None, 0, 10),
        act_intervals("k2", "K2", None, 5, 20, &[(0, 2), (10, 5)]),
    ];
    let graph = resolve_inference_events(records).unwrap();
    let acc = account_gpu_time(&graph).unwrap();
    let k = "GPU-A|w/mono|monotonic";
    assert_eq!(
        accounting_summary(&acc),
        json!({
            "iterations": {},
            "totals": {k: [17, 15, 2]},
            "unattributed": ["tr/K1", "tr/K2"],
            "unmeasured": []
        })
    );
}

#[test]
fn case_09_elapsed_needs_a_monotonic_clock_and_both_ends() {
    let e = Ctx::engine();
    let records = vec![
        ev(&e, "i1", iteration("I1", Some(10), Some(60))),
        ev(&e, "i2", iteration("I2", Some(10), None)),
        ev(
            &e.clone()
                .domain("h/b/unix_epoch_ns")
                .kind(ClockKind::Wall)
                .uuid(Some("GPU-A")),
            "i3",
            iteration("I3", Some(10), Some(60)),
        ),
        ev(
            &e.clone().kind(ClockKind::Device).uuid(Some("GPU-A")),
            "i4",
            iteration("I4", Some(10), Some(60)),
        ),
    ];
    let graph = resolve_inference_events(records).unwrap();
    let acc = account_gpu_time(&graph).unwrap();
    assert_eq!(
        accounting_summary(&acc),
        json!({
            "iterations": {
                "eng/I1": {"elapsed": 50, "gpu": {}},
                "eng/I2": {"elapsed": null, "gpu": {}},
                "eng/I3": {"elapsed": null, "gpu": {}},
                "eng/I4": {"elapsed": null, "gpu": {}}
            },
            "totals": {}, "unattributed": [], "unmeasured": []
        })
    );
}

#[test]
fn iterations_are_keyed_by_producer_then_id() {
    let e = Ctx::engine();
    let body = |p: &str, id: &str| {
        EventBody::Iteration(tally_evidence::IterationEvent {
            iteration_ref: crate::build::r(p, id),
            batch_ref: None,
            start_ns: None,
            end_ns: None,
        })
    };
    let graph = resolve_inference_events([
        ev(&e, "1", body("b", "A")),
        ev(&e, "2", body("a", "Z")),
        ev(&e, "3", body("a", "B")),
    ])
    .unwrap();
    let acc = account_gpu_time(&graph).unwrap();
    let order: Vec<String> = acc.iterations.keys().map(ToString::to_string).collect();
    assert_eq!(order, ["a/B", "a/Z", "b/A"]);
}

#[test]
fn the_host_is_not_part_of_the_device_key() {
    let t1 = Ctx::trace().host("h1");
    let t2 = Ctx::trace().host("h2").producer("tr2");
    let graph = resolve_inference_events([
        ev(
            &t1,
            "a",
            EventBody::Activity(activity("A", None, Some(0), Some(10))),
        ),
        ev(
            &t2,
            "b",
            EventBody::Activity(activity("B", None, Some(5), Some(20))),
        ),
    ])
    .unwrap();
    let acc = account_gpu_time(&graph).unwrap();
    assert_eq!(acc.device_totals.len(), 1);
    assert_eq!(acc.device_totals[&key_k()].busy_ns, 20);
    assert_eq!(acc.device_totals[&key_k()].summed_activity_ns, 25);
}

#[test]
fn summed_time_that_overflows_u64_is_an_error_not_a_wrap() {
    let records = (0..3).map(|i| act(&format!("k{i}"), &format!("K{i}"), None, 0, Nanos::MAX));
    let graph = resolve_inference_events(records).unwrap();
    let err = account_gpu_time(&graph).unwrap_err();
    assert!(matches!(err, Error::OutOfRange { .. }), "{err:?}");
    assert!(err.message().contains("summed activity time"), "{err}");
    // Two of them still fit: 2 × (2⁶³ − 1) < 2⁶⁴.
    let graph = resolve_inference_events(
        (0..2).map(|i| act(&format!("k{i}"), &format!("K{i}"), None, 0, Nanos::MAX)),
    )
    .unwrap();
    let acc = account_gpu_time(&graph).unwrap();
    assert_eq!(
        acc.device_totals[&key_k()].summed_activity_ns,
        2 * (Nanos::MAX as u64)
    );
    assert_eq!(acc.device_totals[&key_k()].busy_ns, Nanos::MAX as u64);
}
