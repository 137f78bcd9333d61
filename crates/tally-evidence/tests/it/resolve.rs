//! Resolution cases of `docs/evidence.md#conformance-cases` (02, 03, 07, 08) and the resolver's error origins.

use serde_json::json;
use tally_evidence::{
    Error, EventBody, InferenceRecord, Origin, Resolver, account_gpu_time, resolve_inference_events,
};

use crate::build::{
    Ctx, accounting_summary, counts, ev, ev_meta, iteration, legacy, membership, r, request, stage,
    unresolved_rows,
};

fn err_message<T: std::fmt::Debug>(result: Result<T, Error>) -> String {
    result.expect_err("must be refused").message()
}

#[test]
fn case_02_dedup_tiebreak_keeps_the_smallest_event_id() {
    let e = Ctx::engine();
    let records = vec![
        ev(&e, "i1", iteration("I1", Some(0), Some(100))),
        ev(&e, "i1", iteration("I1", Some(0), Some(100))),
        ev(&e, "a-early", iteration("I1", Some(0), Some(100))),
        ev(&e, "m-z", membership(r("cli", "R1"), None, "I1", "decode")),
        ev(&e, "m-a", membership(r("cli", "R1"), None, "I1", "decode")),
        ev(&e, "m-b", membership(r("cli", "R1"), None, "I1", "prefill")),
    ];
    let graph = resolve_inference_events(records).unwrap();
    assert_eq!(counts(&graph), [0, 1, 0, 2, 0, 0]);
    assert_eq!(&**graph.iterations()[0].event_id(), "a-early");
    assert_eq!(
        unresolved_rows(graph.unresolved()),
        json!([
            ["m-a", "request", "cli", "R1"],
            ["m-b", "request", "cli", "R1"]
        ])
    );
    let ids: Vec<&str> = graph
        .memberships()
        .iter()
        .map(|m| &**m.event_id())
        .collect();
    assert_eq!(ids, ["m-a", "m-b"]);
    let acc = account_gpu_time(&graph).unwrap();
    assert_eq!(
        accounting_summary(&acc),
        json!({"iterations": {"eng/I1": {"elapsed": 100, "gpu": {}}}, "totals": {},
               "unattributed": [], "unmeasured": []})
    );
}

#[test]
fn replacement_keeps_the_first_appearance_position() {
    let e = Ctx::engine();
    let graph = resolve_inference_events([
        ev(&e, "z", iteration("I1", Some(0), Some(1))),
        ev(&e, "y", iteration("I2", Some(0), Some(1))),
        ev(&e, "a", iteration("I1", Some(0), Some(1))),
    ])
    .unwrap();
    let rows: Vec<(&str, &str)> = graph
        .iterations()
        .iter()
        .map(|i| (&*i.body().iteration_ref.id, &**i.event_id()))
        .collect();
    assert_eq!(rows, [("I1", "a"), ("I2", "y")]);
    assert_eq!(graph.iterations().position_of(&r("eng", "I2")), Some(1));
}

#[test]
fn case_03a_conflicting_event_identity_names_the_offending_record() {
    let e = Ctx::engine();
    let mut resolver = Resolver::new();
    resolver
        .push(
            ev(&e, "i1", iteration("I1", Some(0), Some(100))),
            Origin::at("f".into(), 1),
        )
        .unwrap();
    let err = resolver
        .push(
            ev(&e, "i1", iteration("I1", Some(0), Some(101))),
            Origin::at("f".into(), 2),
        )
        .unwrap_err();
    assert_eq!(err.message(), "conflicting event identity");
    assert_eq!(err.origin(), Some(&Origin::at("f".into(), 2)));
    assert_eq!(err.to_string(), "f: conflicting event identity");
}

#[test]
fn case_03b_conflicting_entity_identity() {
    let e = Ctx::engine();
    let result = resolve_inference_events([
        ev(&e, "i1", iteration("I1", Some(0), Some(100))),
        ev(&e, "i2", iteration("I1", Some(0), Some(101))),
    ]);
    assert!(matches!(
        result,
        Err(Error::ConflictingEntityIdentity { .. })
    ));
    assert_eq!(err_message(result), "conflicting entity identity");
}

#[test]
fn the_same_entity_from_two_sessions_is_a_conflict() {
    let result = resolve_inference_events([
        ev(&Ctx::engine(), "i1", iteration("I1", Some(0), Some(100))),
        ev(
            &Ctx::engine().session("s2"),
            "i1",
            iteration("I1", Some(0), Some(100)),
        ),
    ]);
    assert_eq!(err_message(result), "conflicting entity identity");
}

#[test]
fn identity_spans_event_types_and_run_check_comes_first() {
    let e = Ctx::engine();
    let result = resolve_inference_events([
        ev(&e, "x", iteration("I1", Some(0), Some(100))),
        ev(&e, "x", request("R1", None)),
    ]);
    assert_eq!(err_message(result), "conflicting event identity");
    // A record that breaks both the run and its identity reports the run.
    let result = resolve_inference_events([
        ev(&e, "x", iteration("I1", Some(0), Some(100))),
        ev(&e.clone().run("r2"), "x", request("R1", None)),
    ]);
    assert_eq!(
        err_message(result),
        "correlation artifact contains multiple run_id values"
    );
}

#[test]
fn case_07_unresolved_order() {
    let records = vec![
        ev(&Ctx::client(), "rq", request("R1", None)),
        ev(
            &Ctx::engine().session("s2"),
            "m",
            membership(r("A", "x"), None, "I1", "decode"),
        ),
        ev(
            &Ctx::engine().session("s1"),
            "m",
            membership(r("B", "x"), None, "I1", "decode"),
        ),
        ev(
            &Ctx::engine(),
            "m-att",
            membership(r("cli", "R1"), Some(r("cli", "R1/a2")), "I1", "decode"),
        ),
        ev(
            &Ctx::engine(),
            "st",
            stage("S1", Some(r("cli", "R2")), Some(r("eng", "I1"))),
        ),
    ];
    let graph = resolve_inference_events(records).unwrap();
    assert_eq!(counts(&graph), [1, 0, 1, 3, 0, 0]);
    assert_eq!(
        unresolved_rows(graph.unresolved()),
        json!([
            ["m", "iteration", "eng", "I1"],
            ["m", "iteration", "eng", "I1"],
            ["m", "request", "B", "x"],
            ["m", "request", "A", "x"],
            ["m-att", "attempt", "cli", "R1/a2"],
            ["m-att", "iteration", "eng", "I1"],
            ["st", "iteration", "eng", "I1"],
            ["st", "request", "cli", "R2"]
        ])
    );
}

#[test]
fn a_known_attempt_resolves_and_a_generic_request_covers_any_attempt() {
    let c = Ctx::client();
    let e = Ctx::engine();
    let graph = resolve_inference_events([
        ev(&c, "rq-a1", request("R1", Some("R1/a1"))),
        ev(&e, "it", iteration("I1", Some(0), Some(10))),
        // Request R1 exists only as an attempt: the request check passes, the attempt check
        // then looks for (R1, R1/a1) exactly.
        ev(
            &e,
            "m1",
            membership(r("cli", "R1"), Some(r("cli", "R1/a1")), "I1", "decode"),
        ),
        ev(&e, "m2", membership(r("cli", "R1"), None, "I1", "prefill")),
        ev(
            &e,
            "m3",
            membership(r("cli", "R1"), Some(r("cli", "R1/a9")), "I1", "decode"),
        ),
    ])
    .unwrap();
    assert_eq!(counts(&graph), [1, 1, 0, 3, 0, 0]);
    assert!(
        graph
            .requests()
            .contains(&r("cli", "R1"), Some(&r("cli", "R1/a1")))
    );
    assert!(!graph.requests().contains(&r("cli", "R1"), None));
    assert_eq!(
        unresolved_rows(graph.unresolved()),
        json!([["m3", "attempt", "cli", "R1/a9"]])
    );
}

#[test]
fn case_08a_legacy_only() {
    let graph = resolve_inference_events([legacy(), legacy(), legacy()]).unwrap();
    assert_eq!(graph.run_id(), None);
    assert_eq!(counts(&graph), [0; 6]);
    assert!(graph.unresolved().is_empty());
    let acc = account_gpu_time(&graph).unwrap();
    assert_eq!(acc.run_id, None);
    assert_eq!(
        accounting_summary(&acc),
        json!({"iterations": {}, "totals": {}, "unattributed": [], "unmeasured": []})
    );
}

#[test]
fn case_08b_two_runs_and_legacy_records_never_set_the_run() {
    let e = Ctx::engine();
    let mut resolver = Resolver::new();
    resolver.push(legacy(), Origin::at("f".into(), 1)).unwrap();
    resolver
        .push(
            ev(&e, "i1", iteration("I1", None, None)),
            Origin::at("f".into(), 2),
        )
        .unwrap();
    let capabilities = EventBody::Capabilities(tally_evidence::CapabilityEvent {
        component: "trace_collector".into(),
        available: false,
        supported: vec![],
        enabled: vec![],
        collected: vec![],
    });
    let err = resolver
        .push(
            ev(&e.clone().run("other"), "cap", capabilities),
            Origin::at("f".into(), 3),
        )
        .unwrap_err();
    assert!(matches!(err, Error::MultipleRunIds { .. }));
    assert_eq!(err.origin(), Some(&Origin::at("f".into(), 3)));
    assert_eq!(
        err.message(),
        "correlation artifact contains multiple run_id values"
    );
}

#[test]
fn artifact_and_capability_records_set_the_run_but_fill_no_table() {
    let e = Ctx::engine().run("first");
    let artifact = EventBody::Artifact(tally_evidence::ArtifactIdentityEvent {
        artifact_kind: "stormlog".into(),
        created_at_ns: 5,
    });
    let graph = resolve_inference_events([legacy(), ev(&e, "a", artifact)]).unwrap();
    assert_eq!(graph.run_id().map(|r| &**r), Some("first"));
    assert_eq!(counts(&graph), [0; 6]);
}

#[test]
fn duplicates_cost_no_identity_and_renamed_copies_one() {
    let e = Ctx::engine();
    let mut resolver = Resolver::new();
    let record = ev(&e, "i1", iteration("I1", Some(0), Some(1)));
    for _ in 0..5 {
        resolver.push(record.clone(), Origin::default()).unwrap();
    }
    assert_eq!(resolver.distinct_events(), 1);
    resolver
        .push(
            crate::build::renamed(&record, "i1-again"),
            Origin::default(),
        )
        .unwrap();
    assert_eq!(resolver.distinct_events(), 2);
    let graph = resolver.finish();
    assert_eq!(counts(&graph), [0, 1, 0, 0, 0, 0]);
    assert_eq!(&**graph.iterations()[0].event_id(), "i1");
}

#[test]
fn equal_contexts_are_interned_into_one_allocation() {
    // Each record built by `ev` gets its own Arc; the graph must share one per content.
    let e = Ctx::engine();
    let graph = resolve_inference_events([
        ev(&e, "i1", iteration("I1", None, None)),
        ev(&e, "i2", iteration("I2", None, None)),
        ev(
            &e.clone().session("other"),
            "i3",
            iteration("I3", None, None),
        ),
    ])
    .unwrap();
    let its = graph.iterations();
    assert!(std::sync::Arc::ptr_eq(
        its[0].context_arc(),
        its[1].context_arc()
    ));
    assert!(!std::sync::Arc::ptr_eq(
        its[0].context_arc(),
        its[2].context_arc()
    ));
}

#[test]
fn legacy_records_between_events_change_nothing() {
    let e = Ctx::engine();
    let with: Vec<InferenceRecord> = vec![
        legacy(),
        ev(&e, "i1", iteration("I1", Some(0), Some(5))),
        legacy(),
    ];
    let graph = resolve_inference_events(with).unwrap();
    assert_eq!(counts(&graph), [0, 1, 0, 0, 0, 0]);
    assert_eq!(graph.run_id().map(|r| &**r), Some("r"));
}

#[test]
fn identities_of_replaced_and_losing_representatives_stay_known() {
    let e = Ctx::engine();
    let same = |id: &str| ev(&e, id, iteration("I1", Some(0), Some(100)));
    let other = |id: &str| ev(&e, id, iteration("I1", Some(0), Some(101)));
    let mut resolver = Resolver::new();
    for id in ["m", "a", "z"] {
        // "a" replaces "m" as the representative; "z" loses to "a".
        resolver.push(same(id), Origin::default()).unwrap();
    }
    for id in ["m", "a", "z"] {
        resolver.push(same(id), Origin::default()).unwrap();
    }
    assert_eq!(resolver.distinct_events(), 3);
    for id in ["m", "a", "z"] {
        let mut probe = Resolver::new();
        for id in ["m", "a", "z"] {
            probe.push(same(id), Origin::default()).unwrap();
        }
        let err = probe.push(other(id), Origin::default()).unwrap_err();
        assert_eq!(err.message(), "conflicting event identity", "identity {id}");
    }
    // A new identity with other content is an entity conflict instead.
    let err = resolver.push(other("n"), Origin::default()).unwrap_err();
    assert_eq!(err.message(), "conflicting entity identity");
    let graph = resolver.finish();
    assert_eq!(&**graph.iterations()[0].event_id(), "a");
}

#[test]
fn artifact_identities_are_checked_too() {
    let e = Ctx::engine();
    let artifact = |at: i64| {
        EventBody::Artifact(tally_evidence::ArtifactIdentityEvent {
            artifact_kind: "stormlog".into(),
            created_at_ns: at,
        })
    };
    let ok = resolve_inference_events([ev(&e, "a", artifact(1)), ev(&e, "a", artifact(1))]);
    assert!(ok.is_ok());
    let result = resolve_inference_events([ev(&e, "a", artifact(1)), ev(&e, "a", artifact(2))]);
    assert_eq!(err_message(result), "conflicting event identity");
    // Artifacts have no entity key: two different ones under different ids are fine.
    let ok = resolve_inference_events([ev(&e, "a", artifact(1)), ev(&e, "b", artifact(2))]);
    assert!(ok.is_ok());
}

#[test]
fn identity_is_scoped_by_session_and_producer() {
    let graph = resolve_inference_events([
        ev(&Ctx::engine(), "x", iteration("I1", None, None)),
        ev(
            &Ctx::engine().session("s2"),
            "x",
            iteration("I2", None, None),
        ),
        ev(
            &Ctx::engine().producer("eng2"),
            "x",
            iteration("I3", None, None),
        ),
    ])
    .unwrap();
    assert_eq!(counts(&graph), [0, 3, 0, 0, 0, 0]);
}

#[test]
fn large_tables_span_storage_chunks_and_keep_positions() {
    let e = Ctx::engine();
    let n = 10_000;
    let records = (0..n).map(|i| {
        ev(
            &e,
            &format!("i{i}"),
            iteration(&format!("I{i}"), None, None),
        )
    });
    let graph = resolve_inference_events(records).unwrap();
    assert_eq!(graph.iterations().len(), n);
    assert_eq!(graph.iterations().iter().len(), n);
    for i in [0, 4095, 4096, 9999] {
        let r = r("eng", &format!("I{i}"));
        assert_eq!(graph.iterations().position_of(&r), Some(i));
        assert_eq!(&*graph.iterations()[i].body().iteration_ref.id, &*r.id);
        assert_eq!(
            graph.iterations().get_at(i).map(|e| &**e.event_id()),
            Some(&*format!("i{i}"))
        );
    }
    assert!(graph.iterations().get_at(n).is_none());
}

/// Records are compared directly in resolution (not by a stored fingerprint); metadata compares
/// by value — key order, `1` against `1.0` and `true` — on every path: a redelivered identity,
/// a repeated entity key under another event id, and an identity kept aside (artifacts).
#[test]
fn metadata_compares_by_value_on_every_path() {
    let e = Ctx::engine();
    let a = r#"{"x": 1, "y": [1.0, {"k": "v", "z": null}]}"#;
    let same = r#"{"y": [true, {"z": null, "k": "v"}], "x": 1.0}"#;
    let other = r#"{"x": 2, "y": [1.0, {"k": "v", "z": null}]}"#;
    let it = || iteration("I1", Some(0), Some(100));
    let artifact = || {
        EventBody::Artifact(tally_evidence::ArtifactIdentityEvent {
            artifact_kind: "stormlog".into(),
            created_at_ns: 1,
        })
    };
    for (first, second, id2) in [
        (
            ev_meta(&e, "i1", a, it()),
            ev_meta(&e, "i1", same, it()),
            "i1",
        ),
        (
            ev_meta(&e, "i1", a, it()),
            ev_meta(&e, "i0", same, it()),
            "i0",
        ),
        (
            ev_meta(&e, "a", a, artifact()),
            ev_meta(&e, "a", same, artifact()),
            "a",
        ),
    ] {
        let graph = resolve_inference_events([first, second]);
        assert!(graph.is_ok(), "equal by value, second id {id2}");
    }
    let conflicts = [
        (
            ev_meta(&e, "i1", a, it()),
            ev_meta(&e, "i1", other, it()),
            "conflicting event identity",
        ),
        (
            ev_meta(&e, "i1", a, it()),
            ev_meta(&e, "i0", other, it()),
            "conflicting entity identity",
        ),
        (
            ev_meta(&e, "a", a, artifact()),
            ev_meta(&e, "a", other, artifact()),
            "conflicting event identity",
        ),
    ];
    for (first, second, message) in conflicts {
        assert_eq!(
            err_message(resolve_inference_events([first, second])),
            message
        );
    }
}

/// The kept representative of a replaced entity is compared by fingerprint once it is aside:
/// redelivering the replaced record is a duplicate, a changed copy of it a conflict.
#[test]
fn a_replaced_representative_is_still_checked() {
    let e = Ctx::engine();
    let it = |end| iteration("I1", Some(0), Some(end));
    let ok = resolve_inference_events([
        ev_meta(&e, "i9", r#"{"a": 1}"#, it(100)),
        ev_meta(&e, "i1", r#"{"a": 1.0}"#, it(100)),
        ev_meta(&e, "i9", r#"{"a": true}"#, it(100)),
    ])
    .unwrap();
    assert_eq!(&**ok.iterations()[0].event_id(), "i1");
    let result = resolve_inference_events([
        ev_meta(&e, "i9", r#"{"a": 1}"#, it(100)),
        ev_meta(&e, "i1", r#"{"a": 1}"#, it(100)),
        ev_meta(&e, "i9", r#"{"a": 2}"#, it(100)),
    ]);
    assert_eq!(err_message(result), "conflicting event identity");
}
