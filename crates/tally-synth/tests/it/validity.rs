//! Every generated record obeys the rules of `docs/evidence.md#wire-format` and `docs/evidence.md#resolution` that the generator
//! controls, and the planted dangling references are the only ones.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use tally_artifact::write::ArtifactForm;
use tally_evidence::{
    AttributionStatus, BusyIntervals, ClockKind, CorrelationEvent, EntityRef, EventBody,
    InferenceRecord,
};
use tally_synth::{Delivery, Scenario, write_artifact_to};

fn planted(unresolved: u64) -> (Scenario, Vec<InferenceRecord>) {
    let scenario = Scenario {
        unresolved,
        ..Scenario::new(31, 800)
    };
    let records = scenario.records().collect();
    (scenario, records)
}

fn span_ok(start: Option<i64>, end: Option<i64>) -> bool {
    start.is_none_or(|s| s >= 0)
        && end.is_none_or(|e| e >= 0)
        && match (start, end) {
            (Some(s), Some(e)) => e >= s,
            _ => true,
        }
}

/// No floats or booleans anywhere, and every integer fits in `i64`.
fn plain_json(value: &Value) -> bool {
    match value {
        Value::Bool(_) => false,
        Value::Number(n) => n.is_i64(),
        Value::Array(items) => items.iter().all(plain_json),
        Value::Object(map) => map.values().all(plain_json),
        Value::Null | Value::String(_) => true,
    }
}

fn check_event(e: &CorrelationEvent) {
    let ctx = e.context();
    for s in [
        &ctx.run_id,
        &ctx.session_id,
        &ctx.producer_id,
        &ctx.source,
        &ctx.clock_domain,
    ] {
        assert!(!s.is_empty());
    }
    assert!(ctx.world_size.is_none_or(|w| w >= 1));
    assert!(!e.event_id().is_empty());
    let meta: Value = serde_json::from_str(e.metadata().json_text()).unwrap();
    assert!(meta.is_object());
    assert!(plain_json(&meta), "{}: {meta}", e.event_id());
    match e.body() {
        EventBody::Artifact(a) => assert!(a.created_at_ns >= 0),
        EventBody::Request(r) => assert!(span_ok(r.start_ns, r.end_ns)),
        EventBody::Iteration(i) => assert!(span_ok(i.start_ns, i.end_ns)),
        EventBody::Stage(s) => {
            assert!(span_ok(s.start_ns, s.end_ns));
            assert!(s.request_ref.is_some() || s.iteration_ref.is_some());
        }
        EventBody::Membership(m) => {
            assert!(&*m.role == "prefill" || &*m.role == "decode")
        }
        EventBody::Activity(a) => {
            assert!(span_ok(a.start_ns, a.end_ns));
            assert_eq!(
                a.attribution_status == AttributionStatus::Linked,
                a.iteration_ref.is_some()
            );
            assert_eq!(
                meta.get("intervals").is_some(),
                a.intervals != BusyIntervals::Absent
            );
            assert_eq!(
                e.schema_version(),
                if meta.get("intervals").is_some() {
                    3
                } else {
                    2
                }
            );
            if let BusyIntervals::List(list) = &a.intervals {
                assert!(!list.is_empty());
                let (start, end) = (a.start_ns.unwrap(), a.end_ns.unwrap());
                let mut cursor = 0;
                for &(offset, duration) in list {
                    assert!(offset >= cursor && duration >= 0, "sorted and disjoint");
                    cursor = offset + duration;
                    assert!(start + cursor <= end, "inside the span");
                }
                let listed: Vec<(i64, i64)> =
                    serde_json::from_value(meta["intervals"].clone()).unwrap();
                assert_eq!(&listed, list);
            }
        }
        EventBody::Capabilities(c) => {
            let set = |l: &Vec<tally_evidence::Text>| l.iter().cloned().collect::<BTreeSet<_>>();
            for list in [&c.supported, &c.enabled, &c.collected] {
                assert_eq!(set(list).len(), list.len());
            }
            assert!(set(&c.collected).is_subset(&set(&c.enabled)));
            assert!(set(&c.enabled).is_subset(&set(&c.supported)));
            if !c.available {
                assert!(c.supported.is_empty());
            }
        }
        EventBody::ClockAlignment(a) => {
            assert!(a.uncertainty_ns >= 0);
            assert!(span_ok(a.valid_from_ns, a.valid_to_ns));
        }
    }
}

#[test]
fn every_record_is_valid() {
    let (_, records) = planted(9);
    let events = crate::events(&records);
    let runs: BTreeSet<_> = events.iter().map(|e| e.context().run_id.clone()).collect();
    assert_eq!(runs.len(), 1);
    for e in &events {
        check_event(e);
    }
}

#[test]
fn identities_and_entities_are_unique() {
    let (_, records) = planted(9);
    let mut identities = BTreeSet::new();
    let mut entities = BTreeSet::new();
    for e in crate::events(&records) {
        let ctx = e.context();
        let identity = (
            ctx.session_id.clone(),
            ctx.producer_id.clone(),
            e.event_id().to_owned(),
        );
        assert!(
            identities.insert(identity),
            "event id {} repeated",
            e.event_id()
        );
        let key = match e.body() {
            EventBody::Request(r) => format!("request {:?} {:?}", r.request_ref, r.attempt_ref),
            EventBody::Iteration(i) => format!("iteration {:?}", i.iteration_ref),
            EventBody::Stage(s) => format!("stage {:?}", s.stage_ref),
            EventBody::Membership(m) => format!(
                "membership {:?} {:?} {:?} {}",
                m.request_ref, m.attempt_ref, m.iteration_ref, m.role
            ),
            EventBody::Activity(a) => format!("activity {:?}", a.activity_ref),
            EventBody::ClockAlignment(a) => {
                format!("alignment {} {} {a:?}", ctx.session_id, ctx.producer_id)
            }
            EventBody::Artifact(_) | EventBody::Capabilities(_) => continue,
        };
        assert!(entities.insert(key.clone()), "entity repeated: {key}");
    }
}

/// The references that point at nothing, as (kind, ref), in the reference's terms (`docs/evidence.md#unresolved`).
fn dangling(records: &[InferenceRecord]) -> Vec<(&'static str, EntityRef)> {
    let events = crate::events(records);
    let mut requests = BTreeMap::new();
    let mut iterations = BTreeSet::new();
    for e in &events {
        match e.body() {
            EventBody::Request(r) => {
                requests
                    .entry(r.request_ref.clone())
                    .or_insert_with(BTreeSet::new)
                    .insert(r.attempt_ref.clone());
            }
            EventBody::Iteration(i) => {
                iterations.insert(i.iteration_ref.clone());
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    let missing_iteration = |r: &Option<EntityRef>, out: &mut Vec<_>| {
        if let Some(i) = r
            && !iterations.contains(i)
        {
            out.push(("iteration", i.clone()));
        }
    };
    for e in &events {
        match e.body() {
            EventBody::Membership(m) => {
                match requests.get(&m.request_ref) {
                    None => out.push(("request", m.request_ref.clone())),
                    Some(attempts) => {
                        if let Some(a) = &m.attempt_ref
                            && !attempts.contains(&Some(a.clone()))
                        {
                            out.push(("attempt", a.clone()));
                        }
                    }
                }
                missing_iteration(&Some(m.iteration_ref.clone()), &mut out);
            }
            EventBody::Stage(s) => {
                if let Some(r) = &s.request_ref
                    && !requests.contains_key(r)
                {
                    out.push(("request", r.clone()));
                }
                missing_iteration(&s.iteration_ref, &mut out);
            }
            EventBody::Activity(a) => missing_iteration(&a.iteration_ref, &mut out),
            _ => {}
        }
    }
    out
}

#[test]
fn only_planted_references_dangle() {
    let (_, clean) = planted(0);
    assert_eq!(dangling(&clean), vec![]);
    let (_, records) = planted(10);
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    for (kind, _) in dangling(&records) {
        *kinds.entry(kind).or_default() += 1;
    }
    // Plants cycle: iteration (membership), request (stage), iteration (launch), attempt.
    assert_eq!(
        kinds,
        BTreeMap::from([("attempt", 2), ("iteration", 5), ("request", 3)])
    );
}

#[test]
fn gpu_time_is_measurable_and_some_is_not() {
    let (_, records) = planted(0);
    let mut measurable = 0;
    let mut unmeasurable = 0;
    let mut unattributed = 0;
    for e in crate::events(&records) {
        if let EventBody::Activity(a) = e.body() {
            if a.attribution_status == AttributionStatus::Unresolved {
                unattributed += 1;
            }
            if a.activity_domain != tally_evidence::ActivityDomain::Gpu {
                continue;
            }
            let ctx = e.context();
            if ctx.device_uuid.is_some()
                && ctx.clock_kind != ClockKind::Wall
                && a.start_ns.is_some()
                && a.end_ns.is_some()
            {
                measurable += 1;
            } else {
                unmeasurable += 1;
            }
        }
    }
    assert!(
        measurable > 2 * unmeasurable,
        "{measurable} vs {unmeasurable}"
    );
    assert!(unmeasurable > 0 && unattributed > 0);
}

#[test]
fn v4_files_define_each_context_before_use() {
    let scenario = Scenario::new(32, 120);
    let delivery = Delivery {
        duplicates: 0.05,
        shuffle: true,
        legacy: 6,
        ..Delivery::default()
    };
    let (bytes, summary) =
        write_artifact_to(&scenario, &delivery, ArtifactForm::V4, Vec::new()).unwrap();
    let text = String::from_utf8(bytes).unwrap();
    let mut defined = BTreeSet::new();
    let mut rows = 0;
    for line in text.lines() {
        let row: Value = serde_json::from_str(line).unwrap();
        match row.get("context_id").and_then(Value::as_str) {
            Some(id) if row["event_type"] == "infer.context" => {
                assert!(defined.insert(id.to_owned()), "{id} defined twice");
            }
            Some(id) => {
                assert!(defined.contains(id), "{id} used before its definition");
                assert_eq!(row["schema_version"], 4);
                rows += 1;
            }
            None => rows += 1,
        }
    }
    assert_eq!(rows, summary.records);
    // client, clock-sync, 4 engines, 6 traces, 2 samplers
    assert_eq!(defined.len(), 14);
}
