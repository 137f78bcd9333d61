//! The `tally trace shares` and `tally trace align` outputs: the typed JSON prints the bytes the
//! commands printed when they built a `serde_json::Value` (keys sorted at every level), escapes
//! included, and the texts keep their shape.

use serde_json::json;
use tally_evidence::{
    AlignedTimestamp, ClockKind, DeviceClock, EntityRef, RequestShareEstimate, ShareBudget,
};
use tally_report::evidence::{align, shares};

fn entity(producer_id: &str, id: &str) -> EntityRef {
    EntityRef::new(producer_id, id).unwrap()
}

fn budget() -> ShareBudget {
    ShareBudget {
        iteration_ref: entity("eng", "I\"1"),
        device_clock: DeviceClock {
            device_uuid: "GPU-A".into(),
            clock_domain: "w/mono".into(),
            clock_kind: ClockKind::Monotonic,
        },
        budget_ns: 10_000_000,
        shares: vec![
            RequestShareEstimate::new(entity("cli", "A"), 6_000_000, "token-weighted-v1", None)
                .unwrap(),
            RequestShareEstimate::new(
                entity("cli", "B"),
                3_000_000,
                "token-weighted-v1",
                Some(entity("cli", "B\\retry")),
            )
            .unwrap(),
        ],
        unattributed_ns: 1_000_000,
    }
}

#[test]
fn shares_json_is_the_sorted_object_on_one_line() {
    let r = |e: &EntityRef| json!({"producer_id": &*e.producer_id, "id": &*e.id});
    let b = budget();
    let expected = json!({
        "iteration_ref": r(&b.iteration_ref),
        "device_clock": {"device_uuid": "GPU-A", "clock_domain": "w/mono", "clock_kind": "monotonic"},
        "budget_ns": 10_000_000,
        "shares": b.shares.iter().map(|s| json!({
            "request_ref": r(s.request_ref()),
            "attempt_ref": s.attempt_ref().map(r),
            "duration_ns": s.duration_ns(),
            "model": &**s.model(),
        })).collect::<Vec<_>>(),
        "unattributed_ns": 1_000_000,
    });
    assert_eq!(shares::json(&b), format!("{expected}\n"));
    assert!(shares::json(&b).starts_with(
        r#"{"budget_ns":10000000,"device_clock":{"clock_domain":"w/mono","clock_kind":"monotonic","device_uuid":"GPU-A"},"iteration_ref":{"id":"I\"1","producer_id":"eng"},"#
    ));
}

#[test]
fn shares_text_names_the_budget_and_each_share() {
    assert_eq!(
        shares::text(&budget()),
        "valid: 2 share(s) of model token-weighted-v1 plus 1000000 ns unattributed equal the \
         measured budget of 10000000 ns (eng/I\"1 on GPU-A w/mono monotonic)\n  cli/A: 6000000 \
         ns\n  cli/B (attempt cli/B\\retry): 3000000 ns\n"
    );
}

#[test]
fn align_prints_one_line_either_way() {
    let aligned = AlignedTimestamp {
        value_ns: -50,
        uncertainty_ns: 4,
        clock_domain: "worker-a/\"mono\"".into(),
    };
    assert_eq!(align::text(&aligned), "-50 ± 4 ns in worker-a/\"mono\"\n");
    let expected =
        json!({"value_ns": -50, "uncertainty_ns": 4, "clock_domain": "worker-a/\"mono\""});
    assert_eq!(align::json(&aligned), format!("{expected}\n"));
    assert_eq!(
        align::json(&aligned),
        "{\"clock_domain\":\"worker-a/\\\"mono\\\"\",\"uncertainty_ns\":4,\"value_ns\":-50}\n"
    );
    assert_eq!(
        align::why_not(200, "b/mono", "a/mono", &[]),
        "no alignment from b/mono to a/mono covers 200"
    );
}
