//! `bootstrap` and `min_speedup` as providers: they answer exactly what `tally-stats`'s rules
//! answer, `min_speedup` turns a small keep into `interesting` with the reason of `docs/campaign.md#min-speedup`, and bad
//! parameters are problems at their keys.

use serde_json::json;
use tally_model::Verdict;
use tally_plugin::{Ruling, Sampling, VerdictCase};
use tally_stats::{BootstrapRule, MinSpeedupRule};

use crate::fixture::verdict_rule;

fn case(direction: &str, candidate: &[f64], bar: &[f64]) -> VerdictCase {
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    serde_json::from_value(json!({
        "primary": {"name": "m", "direction": direction},
        "candidate": {"id": 7, "means": {"m": mean(candidate)}, "samples": {"m": candidate}},
        "bar": {"id": 2, "means": {"m": mean(bar)}, "samples": {"m": bar}},
    }))
    .unwrap()
}

#[test]
fn bootstrap_answers_what_tally_stats_answers() {
    let rule = verdict_rule("bootstrap", json!({})).unwrap();
    let latency = case("lower", &[10.2, 9.9, 10.1], &[10.8, 10.5, 10.9]);
    let judgement = rule.decide(&latency).unwrap();
    assert_eq!(judgement.outcome, Verdict::Keep);
    assert_eq!(judgement, BootstrapRule::default().decide(&latency));
    let custom = verdict_rule(
        "bootstrap",
        json!({"confidence": 0.9, "resamples": 2000, "seed": 7, "confirm": true}),
    )
    .unwrap();
    let expected = BootstrapRule::new(0.9, 2000, 7).unwrap().decide(&latency);
    assert_eq!(custom.decide(&latency).unwrap(), expected);
    assert!(
        expected.reason.contains("90% worst case"),
        "{}",
        expected.reason
    );
}

#[test]
fn min_speedup_turns_a_small_keep_into_interesting() {
    let small = case("higher", &[103.0, 103.1, 102.9], &[100.0, 100.1, 99.9]);
    let bootstrap = verdict_rule("bootstrap", json!({}))
        .unwrap()
        .decide(&small)
        .unwrap();
    assert_eq!(bootstrap.outcome, Verdict::Keep);
    let rule = verdict_rule("min_speedup", json!({"min_speedup": 0.05})).unwrap();
    let judgement = rule.decide(&small).unwrap();
    assert_eq!(judgement.outcome, Verdict::Interesting);
    assert_eq!(
        judgement.reason,
        format!("{}; 3.0% is below min_speedup 5%", bootstrap.reason)
    );
    let expected = MinSpeedupRule::new(BootstrapRule::default(), 0.05).unwrap();
    assert_eq!(judgement, expected.decide(&small));
    let large = case("higher", &[110.0, 110.1, 109.9], &[100.0, 100.1, 99.9]);
    assert_eq!(rule.decide(&large).unwrap().outcome, Verdict::Keep);
}

#[test]
fn max_extra_pairs_bounds_the_pairs_a_rule_asks_for() {
    // Pair 2's bar sample is 20% slow: measured with room for more, the rule asks for it again.
    let throttled = case("higher", &[110.0, 110.5, 109.6], &[100.0, 80.2, 100.3]);
    let sampling = Sampling {
        repeats: 3,
        can_measure: true,
    };
    for (provider, mut table) in [
        ("bootstrap", json!({})),
        ("min_speedup", json!({"min_speedup": 0.05})),
    ] {
        let rule = verdict_rule(provider, table.clone()).unwrap();
        let asked = rule.rule(&throttled, &sampling).unwrap();
        assert!(
            matches!(&asked, Ruling::More(m) if m.pairs == 1),
            "{asked:?}"
        );
        // `decide` is the fixed design: it never asks.
        assert_eq!(
            rule.decide(&throttled).unwrap().outcome,
            Verdict::Interesting
        );
        table["max_extra_pairs"] = json!(0);
        let fixed = verdict_rule(provider, table).unwrap();
        assert_eq!(
            fixed.rule(&throttled, &sampling).unwrap(),
            Ruling::Judged(fixed.decide(&throttled).unwrap())
        );
    }
    let expected = BootstrapRule::default()
        .with_max_extra_pairs(5)
        .rule(&throttled, &sampling);
    let rule = verdict_rule("bootstrap", json!({"max_extra_pairs": 5})).unwrap();
    assert_eq!(rule.rule(&throttled, &sampling).unwrap(), expected);
}

#[test]
fn bad_parameters_are_reported_at_their_keys() {
    let problems = verdict_rule("bootstrap", json!({"max_extra_pairs": 1001}))
        .err()
        .unwrap();
    assert_eq!(
        problems,
        [
            "plugins.verdict_rule.max_extra_pairs = 1001: expected a whole number of pairs from 0 to 1000, such as 3"
        ]
    );
    let problems = verdict_rule(
        "bootstrap",
        json!({"confidence": 1.5, "resamples": 0, "seed": -1}),
    )
    .err()
    .unwrap();
    assert_eq!(
        problems,
        [
            "plugins.verdict_rule.confidence = 1.5: expected a number strictly between 0.5 and 1, such as 0.95",
            "plugins.verdict_rule.resamples = 0: expected a whole number of resamples from 1 to 4294967295, such as 10000",
            "plugins.verdict_rule.seed = -1: expected a whole number of at least 0",
        ]
    );
    let problems = verdict_rule(
        "min_speedup",
        json!({"min_speedup": -0.1, "confidence": 0.5}),
    )
    .err()
    .unwrap();
    assert_eq!(
        problems,
        [
            "plugins.verdict_rule.min_speedup = -0.1: expected a fraction of at least 0, such as 0.05 for 5%",
            "plugins.verdict_rule.confidence = 0.5: expected a number strictly between 0.5 and 1, such as 0.95",
        ]
    );
    let problems = verdict_rule("min_speedup", json!({})).err().unwrap();
    assert_eq!(
        problems,
        [
            "plugins.verdict_rule.min_speedup: missing required parameter: add `min_speedup = <number>` (the smallest relative gain a keep must show, as a fraction (0.05 = 5%))"
        ]
    );
}
