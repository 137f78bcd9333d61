//! The `bootstrap` rule: every step of the decision order, every comparison path, and the reason
//! texts verbatim.

use tally_model::{Direction, Verdict};
use tally_stats::{BootstrapRule, Evidence, Judgement, VerdictCase};

use crate::cases::{case, guardrail, mean, paired, units};

fn decide(case: &VerdictCase) -> Judgement {
    BootstrapRule::default().decide(case)
}

fn expect(case: &VerdictCase, outcome: Verdict, reason: &str) {
    let judgement = decide(case);
    assert_eq!(judgement.outcome, outcome, "{}", judgement.reason);
    assert_eq!(judgement.reason, reason);
}

/// The latency vector of `docs/verdicts.md`: 3 pairs, lower is better, clearly faster.
fn faster_latency() -> VerdictCase {
    let mut c = case("latency_ms", Direction::Lower);
    paired(&mut c.candidate, "latency_ms", &[10.2, 9.9, 10.1]);
    paired(&mut c.bar, "latency_ms", &[10.8, 10.5, 10.9]);
    c
}

#[test]
fn step_1_no_successful_primary_is_a_crash() {
    let mut c = faster_latency();
    c.candidate.means.clear();
    expect(&c, Verdict::Crash, "no successful measurement");
    c.candidate.means.insert("latency_ms".into(), f64::NAN);
    expect(&c, Verdict::Crash, "no successful measurement");
    // Other metrics do not stand in for the primary.
    c.candidate.means.insert("p95_ms".into(), 3.0);
    c.candidate.means.remove("latency_ms");
    expect(&c, Verdict::Crash, "no successful measurement");
}

#[test]
fn step_2_a_guardrail_past_its_floor_is_a_discard() {
    let mut c = faster_latency();
    c.guardrails
        .push(guardrail("accuracy", Direction::Higher, 0.01, Some(0.9)));
    mean(&mut c.candidate, "accuracy", 0.85);
    mean(&mut c.bar, "accuracy", 0.95);
    expect(
        &c,
        Verdict::Discard,
        "floor: accuracy 0.8500 past its floor 0.9000",
    );
    // For a lower-is-better guardrail the floor is a ceiling.
    let mut c = faster_latency();
    c.guardrails
        .push(guardrail("mem_gb", Direction::Lower, 1.0, Some(80.0)));
    mean(&mut c.candidate, "mem_gb", 80.5);
    expect(
        &c,
        Verdict::Discard,
        "floor: mem_gb 80.50 past its floor 80.00",
    );
}

#[test]
fn step_2_exactly_at_the_floor_is_not_past_it() {
    let mut c = faster_latency();
    c.guardrails
        .push(guardrail("accuracy", Direction::Higher, 0.01, Some(0.9)));
    mean(&mut c.candidate, "accuracy", 0.9);
    c.candidate
        .samples
        .insert("accuracy".into(), vec![0.9, 0.9, 0.9]);
    mean(&mut c.bar, "accuracy", 0.9);
    c.bar.samples.insert("accuracy".into(), vec![0.9, 0.9, 0.9]);
    assert_eq!(decide(&c).outcome, Verdict::Keep, "{}", decide(&c).reason);
}

#[test]
fn step_2_comes_before_the_bar_and_the_comparison() {
    let mut c = case("tok_s", Direction::Higher);
    mean(&mut c.candidate, "tok_s", 1.0);
    c.guardrails
        .push(guardrail("accuracy", Direction::Higher, 0.0, Some(0.9)));
    c.guardrails
        .push(guardrail("quality", Direction::Higher, 0.0, Some(0.5)));
    mean(&mut c.candidate, "accuracy", 0.1);
    mean(&mut c.candidate, "quality", 0.1);
    expect(
        &c,
        Verdict::Discard,
        "floor: accuracy 0.1000 past its floor 0.9000",
    );
}

#[test]
fn step_3_a_bar_without_a_score_is_a_keep() {
    let mut c = faster_latency();
    c.bar.means.clear();
    c.bar.id = 7;
    expect(
        &c,
        Verdict::Keep,
        "candidate#7 has no score under the current evaluator",
    );
}

#[test]
fn step_4_no_gain_is_a_discard() {
    let mut c = case("latency_ms", Direction::Lower);
    paired(&mut c.candidate, "latency_ms", &[10.8, 10.5, 10.9]);
    paired(&mut c.bar, "latency_ms", &[10.2, 9.9, 10.1]);
    expect(
        &c,
        Verdict::Discard,
        "against candidate#1: latency_ms 10.73 vs 10.07 (+0.6667; 95% worst case +0.8613 over 3 pairs)",
    );
    // A gain of exactly zero is no gain.
    let mut c = case("tok_s", Direction::Higher);
    c.primary.deterministic = true;
    mean(&mut c.candidate, "tok_s", 100.0);
    mean(&mut c.bar, "tok_s", 100.0);
    expect(
        &c,
        Verdict::Discard,
        "against candidate#1: tok_s 100.0 vs 100.0 (0; aggregate: deterministic metric)",
    );
}

#[test]
fn step_5_sanity_units_that_cancel_are_interesting() {
    let mut c = case("correct", Direction::Higher);
    let cand = [1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0];
    let bar = [0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0];
    let ids = ["u0", "u1", "u2", "u3", "u4", "u5", "u6", "u7", "u8", "u9"];
    let pairs = |values: &[f64]| -> Vec<(&str, f64)> {
        ids.iter().copied().zip(values.iter().copied()).collect()
    };
    units(&mut c.candidate, "correct", &pairs(&cand));
    units(&mut c.bar, "correct", &pairs(&bar));
    let judgement = decide(&c);
    assert_eq!(judgement.outcome, Verdict::Interesting);
    assert!(
        judgement
            .reason
            .starts_with("against candidate#1: correct 6.000 vs 3.000 (+3.000; 95% worst case "),
        "{}",
        judgement.reason
    );
    assert!(
        judgement
            .reason
            .ends_with(" over 10 units): the gain is not significant")
    );
}

#[test]
fn step_5_sanity_units_that_lose_overall_are_a_discard() {
    // d = [-2, 1, 0.5]: the total gain is negative, so step 4 answers before step 5.
    let mut c = case("correct", Direction::Higher);
    units(
        &mut c.candidate,
        "correct",
        &[("a", 0.0), ("b", 1.0), ("c", 1.5)],
    );
    units(&mut c.bar, "correct", &[("a", 2.0), ("b", 0.0), ("c", 1.0)]);
    let judgement = decide(&c);
    assert_eq!(judgement.outcome, Verdict::Discard);
    assert!(
        judgement
            .reason
            .starts_with("against candidate#1: correct 2.500 vs 3.000 (-0.5000; 95% worst case -")
    );
}

#[test]
fn step_5_a_single_pair_is_not_significant() {
    let mut c = case("latency_ms", Direction::Lower);
    paired(&mut c.candidate, "latency_ms", &[10.0]);
    paired(&mut c.bar, "latency_ms", &[10.5]);
    expect(
        &c,
        Verdict::Interesting,
        "against candidate#1: latency_ms 10.00 vs 10.50 (-0.5000; no bound from 1 pair): the gain is not significant",
    );
}

#[test]
fn step_5_a_noisy_aggregate_is_interesting() {
    let mut c = case("tok_s", Direction::Higher);
    mean(&mut c.candidate, "tok_s", 110.0);
    mean(&mut c.bar, "tok_s", 100.0);
    expect(
        &c,
        Verdict::Interesting,
        "against candidate#1: tok_s 110.0 vs 100.0 (+10.00; aggregate: not significant: no repeats or per-unit results)",
    );
}

#[test]
fn step_7_a_deterministic_aggregate_is_a_keep() {
    let mut c = case("tok_s", Direction::Higher);
    c.primary.deterministic = true;
    mean(&mut c.candidate, "tok_s", 110.0);
    mean(&mut c.bar, "tok_s", 100.0);
    expect(
        &c,
        Verdict::Keep,
        "against candidate#1: tok_s 110.0 vs 100.0 (+10.00; aggregate: deterministic metric)",
    );
}

#[test]
fn step_7_sanity_faster_latency_is_a_keep_on_the_student_t_bound() {
    let c = faster_latency();
    expect(
        &c,
        Verdict::Keep,
        "against candidate#1: latency_ms 10.07 vs 10.73 (-0.6667; 95% worst case -0.4720 over 3 pairs)",
    );
    let assessment = BootstrapRule::default().assess(&c);
    let primary = assessment.primary.unwrap();
    let Evidence::Pairs {
        pairs,
        bootstrap,
        student_t,
        spread,
    } = primary.evidence.clone()
    else {
        panic!("expected the pairs path, got {:?}", primary.evidence);
    };
    assert_eq!(pairs, 3);
    assert!((bootstrap.unwrap() - 0.6).abs() < 1e-12);
    assert!((student_t.unwrap() - 0.472_001).abs() < 1e-6);
    // d = [0.6, 0.6, 0.8]: mean 2/3, Σ(d − mean)² = 2/75, sd = √(1/75).
    assert!((spread.unwrap() - (1.0f64 / 75.0).sqrt()).abs() < 1e-12);
    assert_eq!(primary.bound(), student_t);
}

#[test]
fn step_7_one_unit_is_its_own_bound() {
    let mut c = case("correct", Direction::Higher);
    units(&mut c.candidate, "correct", &[("q1", 1.0)]);
    units(&mut c.bar, "correct", &[("q1", 0.0)]);
    expect(
        &c,
        Verdict::Keep,
        "against candidate#1: correct 1.000 vs 0 (+1.000; 95% worst case +1.000 over 1 unit)",
    );
}

#[test]
fn units_come_before_pairs_and_need_the_same_unit_ids() {
    let mut c = faster_latency();
    units(&mut c.candidate, "latency_ms", &[("a", 5.0), ("b", 5.0)]);
    units(&mut c.bar, "latency_ms", &[("a", 5.5), ("b", 5.5)]);
    // Means now come from the units: 10 vs 11, d = [0.5, 0.5] exactly.
    expect(
        &c,
        Verdict::Keep,
        "against candidate#1: latency_ms 10.00 vs 11.00 (-1.000; 95% worst case -1.000 over 2 units)",
    );
    units(&mut c.bar, "latency_ms", &[("a", 5.5), ("c", 5.5)]);
    let judgement = decide(&c);
    assert!(
        judgement.reason.ends_with("over 3 pairs)"),
        "{}",
        judgement.reason
    );
}

#[test]
fn pairs_use_only_complete_finite_pairs() {
    let mut c = faster_latency();
    // A fourth candidate sample without its bar, and a NaN pair: both left out.
    c.candidate
        .samples
        .insert("latency_ms".into(), vec![10.2, 9.9, f64::NAN, 10.1, 9.0]);
    c.bar
        .samples
        .insert("latency_ms".into(), vec![10.8, 10.5, 10.0, 10.9]);
    expect(
        &c,
        Verdict::Keep,
        "against candidate#1: latency_ms 10.07 vs 10.73 (-0.6667; 95% worst case -0.4720 over 3 pairs)",
    );
}

fn with_memory_guardrail(candidate: &[f64], bar: &[f64], margin: f64) -> VerdictCase {
    let mut c = faster_latency();
    c.guardrails
        .push(guardrail("mem_gb", Direction::Lower, margin, None));
    paired(&mut c.candidate, "mem_gb", candidate);
    paired(&mut c.bar, "mem_gb", bar);
    c
}

#[test]
fn step_6_a_guardrail_beyond_its_margin_is_interesting() {
    // Memory up by exactly 2 GB in every pair: bound −2 < −1.
    let c = with_memory_guardrail(&[12.0, 12.0, 12.0], &[10.0, 10.0, 10.0], 1.0);
    expect(
        &c,
        Verdict::Interesting,
        "against candidate#1: latency_ms 10.07 vs 10.73 (-0.6667; 95% worst case -0.4720 over 3 pairs); \
         guardrails past their margin: mem_gb 12.00 vs 10.00 (+2.000; 95% worst case +2.000 over 3 pairs)",
    );
}

#[test]
fn step_6_a_guardrail_within_its_margin_keeps() {
    let c = with_memory_guardrail(&[12.0, 12.0, 12.0], &[10.0, 10.0, 10.0], 2.0);
    expect(
        &c,
        Verdict::Keep,
        "against candidate#1: latency_ms 10.07 vs 10.73 (-0.6667; 95% worst case -0.4720 over 3 pairs)",
    );
}

#[test]
fn step_6_an_unmeasured_or_unbounded_guardrail_is_interesting() {
    let mut c = faster_latency();
    c.guardrails
        .push(guardrail("mem_gb", Direction::Lower, 1.0, None));
    c.guardrails
        .push(guardrail("p95_ms", Direction::Lower, 1.0, None));
    c.guardrails
        .push(guardrail("power_w", Direction::Lower, 1.0, None));
    c.guardrails
        .push(guardrail("ttft_ms", Direction::Lower, 1.0, None));
    mean(&mut c.candidate, "mem_gb", 10.0);
    mean(&mut c.bar, "p95_ms", 10.0);
    // A noisy guardrail with only means cannot be bounded.
    mean(&mut c.candidate, "ttft_ms", 5.0);
    mean(&mut c.bar, "ttft_ms", 6.0);
    expect(
        &c,
        Verdict::Interesting,
        "against candidate#1: latency_ms 10.07 vs 10.73 (-0.6667; 95% worst case -0.4720 over 3 pairs); \
         guardrails past their margin: mem_gb unmeasured on the bar, p95_ms unmeasured on the candidate, \
         power_w unmeasured on both sides, \
         ttft_ms 5.000 vs 6.000 (-1.000; aggregate: not significant: no repeats or per-unit results)",
    );
}

#[test]
fn a_deterministic_guardrail_bounds_on_its_means() {
    let mut c = faster_latency();
    let mut memory = guardrail("mem_gb", Direction::Lower, 0.5, None);
    memory.deterministic = true;
    c.guardrails.push(memory);
    mean(&mut c.candidate, "mem_gb", 10.4);
    mean(&mut c.bar, "mem_gb", 10.0);
    assert_eq!(decide(&c).outcome, Verdict::Keep);
    mean(&mut c.candidate, "mem_gb", 10.6);
    assert_eq!(decide(&c).outcome, Verdict::Interesting);
}

#[test]
fn the_confidence_is_shown_as_written() {
    let rule = BootstrapRule::new(0.975, 10_000, 0).unwrap();
    let mut c = case("correct", Direction::Higher);
    units(&mut c.candidate, "correct", &[("q1", 1.0)]);
    units(&mut c.bar, "correct", &[("q1", 0.0)]);
    assert_eq!(
        rule.decide(&c).reason,
        "against candidate#1: correct 1.000 vs 0 (+1.000; 97.5% worst case +1.000 over 1 unit)"
    );
}

fn as_refs(v: &[(String, f64)]) -> Vec<(&str, f64)> {
    v.iter().map(|(k, x)| (k.as_str(), *x)).collect()
}

#[test]
fn the_rule_replays_and_answers_on_any_thread_count() {
    let mut c = case("correct", Direction::Higher);
    let contributions: Vec<(String, f64)> = (0..2_000)
        .map(|i| (format!("u{i:04}"), ((i * 7) % 5) as f64))
        .collect();
    let bar: Vec<(String, f64)> = (0..2_000)
        .map(|i| (format!("u{i:04}"), ((i * 3) % 5) as f64))
        .collect();
    units(&mut c.candidate, "correct", &as_refs(&contributions));
    units(&mut c.bar, "correct", &as_refs(&bar));
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let many = rayon::ThreadPoolBuilder::new()
        .num_threads(16)
        .build()
        .unwrap();
    let first = one.install(|| decide(&c));
    assert_eq!(first, many.install(|| decide(&c)));
    assert_eq!(first, decide(&c));
}

#[test]
fn parameters_are_validated() {
    assert_eq!(
        BootstrapRule::new(0.95, 0, 0).unwrap_err().to_string(),
        "resamples = 0: expected at least 1, such as 10000"
    );
    assert!(BootstrapRule::new(0.5, 10, 0).is_err());
    let rule = BootstrapRule::default();
    assert_eq!(
        (rule.confidence.value(), rule.resamples.get(), rule.seed),
        (0.95, 10_000, 0)
    );
}
