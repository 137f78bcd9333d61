//! The JSON shape of cases, judgements and rule parameters (the `docs/campaign.md#external-providers` protocol carries them).

use serde_json::json;
use tally_model::{Direction, Verdict};
use tally_stats::{BootstrapRule, Judgement, MinSpeedupRule, VerdictCase};

use crate::cases::{case, guardrail, paired, units};

#[test]
fn a_case_round_trips_with_wire_spellings() {
    let mut c = case("latency_ms", Direction::Lower);
    c.guardrails
        .push(guardrail("mem_gb", Direction::Lower, 1.5, Some(80.0)));
    paired(&mut c.candidate, "latency_ms", &[1.0, 2.0]);
    paired(&mut c.bar, "latency_ms", &[1.5, 2.5]);
    units(&mut c.candidate, "correct", &[("q2", 1.0), ("q1", 0.0)]);
    let value = serde_json::to_value(&c).unwrap();
    assert_eq!(
        value,
        json!({
            "primary": {"name": "latency_ms", "direction": "lower", "deterministic": false},
            "guardrails": [{"name": "mem_gb", "direction": "lower", "margin": 1.5, "floor": 80.0,
                            "deterministic": false}],
            "candidate": {"id": 2, "means": {"correct": 1.0, "latency_ms": 1.5},
                          "units": {"correct": {"q1": 0.0, "q2": 1.0}},
                          "samples": {"latency_ms": [1.0, 2.0]}},
            "bar": {"id": 1, "means": {"latency_ms": 2.0}, "units": {},
                    "samples": {"latency_ms": [1.5, 2.5]}}
        })
    );
    let back: VerdictCase = serde_json::from_value(value).unwrap();
    assert_eq!(back, c);
}

#[test]
fn optional_fields_default_and_unknown_ones_are_refused() {
    let c: VerdictCase = serde_json::from_value(json!({
        "primary": {"name": "tok_s", "direction": "higher"},
        "candidate": {"id": 3},
        "bar": {"id": 1, "means": {"tok_s": 1.0}}
    }))
    .unwrap();
    assert!(c.guardrails.is_empty() && !c.primary.deterministic);
    assert_eq!(
        BootstrapRule::default().decide(&c).reason,
        "no successful measurement"
    );
    let err = serde_json::from_value::<VerdictCase>(json!({
        "primary": {"name": "tok_s", "direction": "faster"},
        "candidate": {"id": 3}, "bar": {"id": 1}
    }))
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("direction = \"faster\": expected \"higher\" or \"lower\""),
        "{err}"
    );
    let err = serde_json::from_value::<VerdictCase>(json!({
        "primary": {"name": "tok_s", "direction": "higher", "repeats": 3},
        "candidate": {"id": 3}, "bar": {"id": 1}
    }))
    .unwrap_err();
    assert!(err.to_string().contains("unknown field `repeats`"), "{err}");
}

#[test]
fn a_judgement_is_outcome_and_reason() {
    let j = Judgement::new(Verdict::Interesting, "why");
    assert_eq!(
        serde_json::to_value(&j).unwrap(),
        json!({"outcome": "interesting", "reason": "why"})
    );
    let back: Judgement =
        serde_json::from_value(json!({"outcome": "keep", "reason": "r"})).unwrap();
    assert_eq!(back, Judgement::new(Verdict::Keep, "r"));
    assert!(
        serde_json::from_value::<Judgement>(json!({"outcome": "great", "reason": "r"})).is_err()
    );
}

#[test]
fn rule_parameters_default_and_validate() {
    let rule: BootstrapRule = serde_json::from_value(json!({})).unwrap();
    assert_eq!(rule, BootstrapRule::default());
    let rule: BootstrapRule =
        serde_json::from_value(json!({"confidence": 0.9, "seed": 4})).unwrap();
    assert_eq!(rule, BootstrapRule::new(0.9, 10_000, 4).unwrap());
    assert_eq!(
        serde_json::to_value(rule).unwrap(),
        json!({"confidence": 0.9, "resamples": 10000, "seed": 4, "max_extra_pairs": 3})
    );
    let rule: BootstrapRule = serde_json::from_value(json!({"max_extra_pairs": 0})).unwrap();
    assert_eq!(rule, BootstrapRule::default().with_max_extra_pairs(0));
    let err = serde_json::from_value::<BootstrapRule>(json!({"confidence": 1.0})).unwrap_err();
    assert!(
        err.to_string()
            .contains("confidence = 1: expected a number strictly between 0.5 and 1"),
        "{err}"
    );
    assert!(serde_json::from_value::<BootstrapRule>(json!({"resamples": 0})).is_err());
    assert!(serde_json::from_value::<BootstrapRule>(json!({"min_speedup": 0.1})).is_err());

    let rule: MinSpeedupRule =
        serde_json::from_value(json!({"min_speedup": 0.05, "seed": 2})).unwrap();
    assert_eq!(
        rule,
        MinSpeedupRule::new(BootstrapRule::new(0.95, 10_000, 2).unwrap(), 0.05).unwrap()
    );
    assert_eq!(
        serde_json::to_value(rule).unwrap(),
        json!({"confidence": 0.95, "resamples": 10000, "seed": 2, "max_extra_pairs": 3, "min_speedup": 0.05})
    );
    let err = serde_json::from_value::<MinSpeedupRule>(json!({"seed": 2})).unwrap_err();
    assert!(
        err.to_string().contains("missing field `min_speedup`"),
        "{err}"
    );
    let err = serde_json::from_value::<MinSpeedupRule>(json!({"min_speedup": -1.0})).unwrap_err();
    assert!(err.to_string().contains("min_speedup = -1"), "{err}");
}
