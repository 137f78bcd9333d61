//! `limits` (`docs/campaign.md#stop-rules`): every limit and its reason text, holds before stops, the
//! reserve projection, failed and missing facts, `max_runs` waiting for in-flight work, and the
//! problems of bad parameters.

use serde_json::json;
use tally_plugin::{FactReading, MetricView, StopDecision, StopInput, StopRule};

use crate::fixture::stop_rule;

fn value(v: f64) -> FactReading {
    FactReading::Value {
        value: v,
        projection: None,
    }
}

fn projected(v: f64, p: f64) -> FactReading {
    FactReading::Value {
        value: v,
        projection: Some(p),
    }
}

fn input(facts: &[(&str, FactReading)], direction: &str, in_flight: bool) -> StopInput {
    StopInput {
        facts: facts
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
        primary: MetricView {
            name: if direction == "higher" {
                "tokens_per_s"
            } else {
                "p50_ms"
            }
            .into(),
            direction: direction.into(),
            role: "primary".into(),
            margin: None,
            floor: None,
            repeats: 3,
            deterministic: false,
        },
        in_flight,
    }
}

fn rule(table: serde_json::Value) -> Box<dyn StopRule> {
    stop_rule("limits", table).unwrap_or_else(|p| panic!("{p:?}"))
}

fn check(rule: &dyn StopRule, facts: &[(&str, FactReading)]) -> StopDecision {
    rule.check(&input(facts, "higher", false)).unwrap()
}

fn stop(reason: &str) -> StopDecision {
    StopDecision::Stop(reason.into())
}

fn hold(reason: &str) -> StopDecision {
    StopDecision::Hold(reason.into())
}

#[test]
fn wanted_facts_are_those_of_the_configured_limits() {
    let all = rule(
        json!({"target": 1500, "max_runs": 200, "max_hours": 24, "plateau": 10,
                          "hold_at": {"gpu_usd": 50, "gpu_hours": 10, "runs": 300}}),
    );
    assert_eq!(
        all.wanted_facts(),
        [
            "head",
            "runs",
            "hours",
            "without_keep",
            "gpu_hours",
            "gpu_usd"
        ]
    );
    assert_eq!(rule(json!({"max_runs": 5})).wanted_facts(), ["runs"]);
    assert!(rule(json!({})).wanted_facts().is_empty());
}

#[test]
fn no_limit_reached_is_go() {
    let r = rule(
        json!({"target": 1500, "max_runs": 200, "max_hours": 24, "plateau": 10,
                        "hold_at": {"gpu_usd": 50}}),
    );
    let facts = [
        ("head", value(1499.0)),
        ("runs", value(199.0)),
        ("hours", value(23.9)),
        ("without_keep", value(9.0)),
        ("gpu_usd", value(49.99)),
    ];
    assert_eq!(check(&*r, &facts), StopDecision::Go);
    assert_eq!(check(&*rule(json!({})), &[]), StopDecision::Go);
}

#[test]
fn target_stops_in_the_primary_direction() {
    let r = rule(json!({"target": 1500}));
    assert_eq!(
        check(&*r, &[("head", value(1500.0))]),
        stop("target: tokens_per_s 1500 ≥ 1500")
    );
    assert_eq!(
        check(&*r, &[("head", value(1623.25))]),
        stop("target: tokens_per_s 1623 ≥ 1500")
    );
    // No head yet: nothing to compare.
    assert_eq!(check(&*r, &[]), StopDecision::Go);
    let lower = rule(json!({"target": 12.5}));
    let at = |head: f64| {
        lower
            .check(&input(&[("head", value(head))], "lower", false))
            .unwrap()
    };
    assert_eq!(at(11.5), stop("target: p50_ms 11.50 ≤ 12.5"));
    assert_eq!(at(12.6), StopDecision::Go);
}

#[test]
fn max_runs_stops_only_when_nothing_is_in_flight() {
    let r = rule(json!({"max_runs": 200}));
    let facts = [("runs", value(200.0))];
    assert_eq!(check(&*r, &facts), stop("max_runs: 200 runs"));
    assert_eq!(
        r.check(&input(&facts, "higher", true)).unwrap(),
        StopDecision::Go
    );
    assert_eq!(check(&*r, &[("runs", value(199.0))]), StopDecision::Go);
}

#[test]
fn max_hours_and_plateau_stop_with_their_reasons() {
    let r = rule(json!({"max_hours": 1.5}));
    assert_eq!(
        check(&*r, &[("hours", value(1.5))]),
        stop("max_hours: 1.5h since the first evaluation")
    );
    let r = rule(json!({"max_hours": 24}));
    assert_eq!(
        check(&*r, &[("hours", value(30.0))]),
        stop("max_hours: 24h since the first evaluation")
    );
    let r = rule(json!({"plateau": 10}));
    assert_eq!(
        check(&*r, &[("without_keep", value(10.0))]),
        stop("plateau: 10 runs without a keep")
    );
    assert_eq!(
        check(&*r, &[("without_keep", value(9.0))]),
        StopDecision::Go
    );
}

#[test]
fn stops_are_checked_in_the_spec_order() {
    let r = rule(json!({"target": 1500, "max_runs": 5, "max_hours": 1, "plateau": 2}));
    let facts = [
        ("head", value(1600.0)),
        ("runs", value(5.0)),
        ("hours", value(2.0)),
        ("without_keep", value(3.0)),
    ];
    assert_eq!(check(&*r, &facts), stop("target: tokens_per_s 1600 ≥ 1500"));
    assert_eq!(check(&*r, &facts[1..]), stop("max_runs: 5 runs"));
    assert_eq!(
        check(&*r, &facts[2..]),
        hold("max_runs: runs unknown: the host did not supply it")
    );
}

#[test]
fn hold_at_holds_when_a_fact_reaches_its_limit() {
    let r = rule(json!({"hold_at": {"gpu_usd": 50}}));
    assert_eq!(
        check(&*r, &[("gpu_usd", value(50.0))]),
        hold("hold_at: gpu_usd 50.00 reached 50")
    );
    assert_eq!(
        check(&*r, &[("gpu_usd", value(61.234))]),
        hold("hold_at: gpu_usd 61.23 reached 50")
    );
    assert_eq!(check(&*r, &[("gpu_usd", value(49.0))]), StopDecision::Go);
}

#[test]
fn reserve_holds_before_the_evaluation_that_would_cross_the_limit() {
    let r = rule(json!({"hold_at": {"gpu_usd": 50}}));
    assert_eq!(
        check(&*r, &[("gpu_usd", projected(41.2, 9.8))]),
        hold("hold_at: gpu_usd 41.20 + 9.80 expected would reach 50")
    );
    assert_eq!(
        check(&*r, &[("gpu_usd", projected(41.2, 8.7))]),
        StopDecision::Go
    );
    let no_reserve = rule(json!({"hold_at": {"gpu_usd": 50}, "reserve": false}));
    assert_eq!(
        check(&*no_reserve, &[("gpu_usd", projected(41.2, 9.8))]),
        StopDecision::Go
    );
    assert_eq!(
        check(&*no_reserve, &[("gpu_usd", projected(50.5, 9.8))]),
        hold("hold_at: gpu_usd 50.50 reached 50")
    );
}

#[test]
fn a_failed_or_missing_fact_holds_and_is_never_read_as_zero() {
    let r = rule(json!({"hold_at": {"gpu_usd": 50}}));
    let failed = FactReading::Failed("exec ./price.py: timed out after 10 s".into());
    assert_eq!(
        check(&*r, &[("gpu_usd", failed)]),
        hold("hold_at: gpu_usd unknown: exec ./price.py: timed out after 10 s")
    );
    assert_eq!(
        check(&*r, &[]),
        hold("hold_at: gpu_usd unknown: no active fact source supplied it")
    );
    let r = rule(json!({"plateau": 3}));
    assert_eq!(
        check(
            &*r,
            &[(
                "without_keep",
                FactReading::Failed("store is locked".into())
            )]
        ),
        hold("plateau: without_keep unknown: store is locked")
    );
}

#[test]
fn holds_are_checked_before_stops() {
    let r =
        rule(json!({"max_runs": 10, "plateau": 2, "hold_at": {"gpu_hours": 10, "gpu_usd": 50}}));
    let facts = [
        ("runs", value(10.0)),
        ("without_keep", value(5.0)),
        ("gpu_hours", value(3.0)),
        ("gpu_usd", value(55.0)),
    ];
    assert_eq!(
        check(&*r, &facts),
        hold("hold_at: gpu_usd 55.00 reached 50")
    );
    // Facts are checked in name order: gpu_hours before gpu_usd.
    let facts = [
        ("runs", value(10.0)),
        ("without_keep", value(5.0)),
        ("gpu_hours", value(12.0)),
        ("gpu_usd", value(55.0)),
    ];
    assert_eq!(
        check(&*r, &facts),
        hold("hold_at: gpu_hours 12.00 reached 10")
    );
}

#[test]
fn bad_parameters_are_reported_at_their_keys() {
    let problems = stop_rule(
        "limits",
        json!({"max_runs": 0, "max_hours": -1, "plateau": 2.5, "reserve": "yes",
               "hold_at": {"gpu_usd": "fifty", "gpu_hours": 10}, "max_run": 3}),
    )
    .err()
    .unwrap();
    assert_eq!(
        problems,
        [
            "plugins.stop_rule.max_run: unknown key; did you mean `max_runs`?",
            "plugins.stop_rule.plateau = 2.5: expected an integer (stop after this many judged candidates without a keep)",
            "plugins.stop_rule.reserve = \"yes\": expected a boolean (hold_at also holds when the fact plus the next evaluation's projected growth would reach the limit)",
        ]
    );
    let problems = stop_rule(
        "limits",
        json!({"max_runs": 0, "max_hours": -1, "plateau": 0, "hold_at": {"gpu_usd": "fifty", "gpu_hours": 10}}),
    )
    .err()
    .unwrap();
    assert_eq!(
        problems,
        [
            "plugins.stop_rule.max_runs = 0: expected a whole number of runs ≥ 1",
            "plugins.stop_rule.max_hours = -1: expected a number of hours > 0",
            "plugins.stop_rule.plateau = 0: expected a whole number of runs ≥ 1",
            "plugins.stop_rule.hold_at.gpu_usd = \"fifty\": expected a number: the value of `gpu_usd` that holds the campaign",
        ]
    );
}

#[test]
fn limits_read_back_from_the_campaign_summary() {
    let limits = tally_providers::Limits::from_table(&json!({
        "provider": "limits", "max_runs": 200, "hold_at": {"gpu_usd": 50}
    }))
    .unwrap();
    assert_eq!(limits.max_runs, Some(200));
    assert_eq!(limits.hold_at, [("gpu_usd".to_string(), 50.0)]);
    assert!(limits.reserve);
    assert!(tally_providers::Limits::from_table(&json!({"provider": "exec"})).is_none());
}
