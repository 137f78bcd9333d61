//! `link_trace_activities`: correlation ids only, exactly one iteration or nothing.

use tally_evidence::{ActivityDomain, AttributionStatus, EventBody, InferenceRecord};
use tally_import::link_trace_activities;

use crate::records::{activity, context, r};

fn status(record: &InferenceRecord) -> (AttributionStatus, Option<String>) {
    let InferenceRecord::Event(e) = record else {
        panic!()
    };
    let EventBody::Activity(a) = e.body() else {
        panic!()
    };
    (
        a.attribution_status,
        a.iteration_ref.as_ref().map(|i| i.id.to_string()),
    )
}

#[test]
fn links_by_scoped_correlation_ids_never_by_time() {
    let engine_ctx = context("eng", Some("h"), Some(10), Some("GPU-A"));
    let trace_ctx = context("tr", Some("h"), Some(10), Some("GPU-A"));
    let other_pid = context("tr", Some("h"), Some(11), Some("GPU-A"));
    let no_host = context("tr", None, Some(10), Some("GPU-A"));
    let engine = vec![
        activity(
            &engine_ctx,
            "e1",
            ActivityDomain::Runtime,
            Some("I1"),
            Some(42),
            (0, 1),
        ),
        activity(
            &engine_ctx,
            "e2",
            ActivityDomain::Runtime,
            Some("I1"),
            Some(44),
            (0, 1),
        ),
        activity(
            &engine_ctx,
            "e3",
            ActivityDomain::Runtime,
            Some("I2"),
            Some(44),
            (0, 1),
        ),
        activity(
            &engine_ctx,
            "e4",
            ActivityDomain::Runtime,
            None,
            Some(45),
            (0, 1),
        ),
    ];
    let trace = vec![
        // Same keys, far away in time: linked.
        activity(
            &trace_ctx,
            "t1",
            ActivityDomain::Gpu,
            None,
            Some(42),
            (9_000_000, 9_000_100),
        ),
        // No engine key: unchanged.
        activity(
            &trace_ctx,
            "t2",
            ActivityDomain::Gpu,
            None,
            Some(43),
            (0, 1),
        ),
        // Two iterations: ambiguous, unchanged.
        activity(
            &trace_ctx,
            "t3",
            ActivityDomain::Gpu,
            None,
            Some(44),
            (0, 1),
        ),
        // Engine record without an iteration contributes nothing.
        activity(
            &trace_ctx,
            "t4",
            ActivityDomain::Gpu,
            None,
            Some(45),
            (0, 1),
        ),
        // Another process, or no host: no key.
        activity(
            &other_pid,
            "t5",
            ActivityDomain::Gpu,
            None,
            Some(42),
            (0, 1),
        ),
        activity(&no_host, "t6", ActivityDomain::Gpu, None, Some(42), (0, 1)),
        // Already linked: kept as is.
        activity(
            &trace_ctx,
            "t7",
            ActivityDomain::Gpu,
            Some("I9"),
            Some(42),
            (0, 1),
        ),
    ];
    let outcome = link_trace_activities(&engine, trace);
    let got: Vec<_> = outcome.records.iter().map(status).collect();
    use AttributionStatus::*;
    assert_eq!(
        got,
        [
            (Linked, Some("I1".into())),
            (Unresolved, None),
            (Unresolved, None),
            (Unresolved, None),
            (Unresolved, None),
            (Unresolved, None),
            (Linked, Some("I9".into())),
        ]
    );
    assert_eq!(
        (outcome.linked, outcome.ambiguous, outcome.unmatched),
        (1, 1, 4)
    );
    let InferenceRecord::Event(e) = &outcome.records[0] else {
        panic!()
    };
    assert_eq!(e.event_id(), "t1");
    let EventBody::Activity(a) = e.body() else {
        panic!()
    };
    assert_eq!(a.iteration_ref, Some(r("eng", "I1")));
}
