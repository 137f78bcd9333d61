//! The sequential design (`docs/verdicts.md#more-pairs`): far samples set aside and their pairs
//! re-measured, a second look when the first is inconclusive but promising, the budget of extra
//! pairs, and the reason texts verbatim.

use tally_model::{Direction, Verdict};
use tally_stats::{
    BootstrapRule, MinSpeedupRule, MoreSamples, PairSide, Ruling, Sampling, Step, VerdictCase,
};

use crate::cases::{case, guardrail, paired};

const MEASURING: Sampling = Sampling {
    repeats: 3,
    can_measure: true,
};

fn throughput(candidate: &[f64], bar: &[f64]) -> VerdictCase {
    let mut c = case("tok_s", Direction::Higher);
    paired(&mut c.candidate, "tok_s", candidate);
    paired(&mut c.bar, "tok_s", bar);
    c
}

fn rule(c: &VerdictCase, sampling: &Sampling) -> Ruling {
    BootstrapRule::default().rule(c, sampling)
}

fn more(pairs: u32, reason: &str) -> Ruling {
    Ruling::More(MoreSamples {
        pairs,
        reason: reason.to_owned(),
    })
}

fn judged(ruling: Ruling) -> (Verdict, String) {
    match ruling {
        Ruling::Judged(j) => (j.outcome, j.reason),
        Ruling::More(m) => panic!("expected a judgement, got a request: {m:?}"),
    }
}

#[test]
fn a_throttled_sample_has_its_pair_re_measured() {
    // Pair 2's bar sample is 20% slow: a clear +10% would read as "not significant".
    let c = throughput(&[110.0, 110.5, 109.6], &[100.0, 80.2, 100.3]);
    assert_eq!(
        BootstrapRule::default().decide(&c).outcome,
        Verdict::Interesting
    );
    assert_eq!(
        rule(&c, &MEASURING),
        more(
            1,
            "re-measure pair 2: the bar's tok_s 80.20 is 19.8% below its side's median 100.0"
        )
    );
    // The pair measured again takes its place.
    let c = throughput(&[110.0, 110.5, 109.6, 110.2], &[100.0, 80.2, 100.3, 100.1]);
    let (outcome, reason) = judged(rule(&c, &MEASURING));
    assert_eq!(outcome, Verdict::Keep, "{reason}");
    assert_eq!(
        reason,
        "against candidate#1: tok_s 109.9 vs 100.1 (+9.800; 97% worst case +8.819 over 3 pairs); \
         re-measured pair 2: the bar's tok_s 80.20 was 19.8% below its side's median 100.0"
    );
    let Step::Judged(assessment) = BootstrapRule::default().assess_sampled(&c, &MEASURING) else {
        panic!("judged");
    };
    assert_eq!(assessment.set_aside.len(), 1);
    let set_aside = &assessment.set_aside[0];
    assert_eq!((set_aside.pair, set_aside.replaced), (1, true));
    assert_eq!(
        (set_aside.far.side, set_aside.far.value),
        (PairSide::Bar, 80.2)
    );
    assert_eq!(assessment.confidence.percent(), "97%");
}

#[test]
fn without_more_pairs_a_far_pair_is_set_aside_all_the_same() {
    let c = throughput(&[110.0, 110.5, 109.6], &[100.0, 80.2, 100.3]);
    let done = Sampling {
        can_measure: false,
        ..MEASURING
    };
    let (outcome, reason) = judged(rule(&c, &done));
    assert_eq!(outcome, Verdict::Keep, "{reason}");
    assert!(
        reason.ends_with(
            "over 2 pairs); set aside pair 2: the bar's tok_s 80.20 was 19.8% below its side's \
             median 100.0"
        ),
        "{reason}"
    );
}

#[test]
fn an_inconclusive_promising_first_look_adds_the_extra_pairs() {
    // d = 3, 9, 6: mean 6, sd 3; t(0.97, 2) · 3 / √3 = 6.749 > 6, so the first look is
    // inconclusive; at 0.98, 4 pairs would show it if mean and spread held (t(0.98, 3) · 3 / 2
    // = 5.22 < 6), and 4 ≤ 1.2 × the 6 pairs of a second look.
    let c = throughput(&[103.0, 109.0, 106.0], &[100.0, 100.0, 100.0]);
    assert_eq!(
        rule(&c, &MEASURING),
        more(
            3,
            "add 3 pairs: the first 3 are inconclusive (97% worst case -0.7488); about 4 pairs \
             would show a gain this size"
        )
    );
    let c = throughput(
        &[103.0, 109.0, 106.0, 105.0, 107.0, 106.0],
        &[100.0, 100.0, 100.0, 100.0, 100.0, 100.0],
    );
    let (outcome, reason) = judged(rule(&c, &MEASURING));
    assert_eq!(outcome, Verdict::Keep, "{reason}");
    assert_eq!(
        reason,
        "against candidate#1: tok_s 106.0 vs 100.0 (+6.000; 98% worst case +3.749 over 6 pairs); \
         added 3 pairs: the first 3 were inconclusive (97% worst case -0.7488)"
    );
}

#[test]
fn a_first_look_that_shows_the_gain_or_a_loss_asks_for_nothing() {
    let c = throughput(&[110.0, 110.5, 109.6], &[100.0, 100.2, 100.3]);
    assert_eq!(judged(rule(&c, &MEASURING)).0, Verdict::Keep);
    // A loss stops at once, however noisy.
    let c = throughput(&[97.0, 104.0, 95.0], &[100.0, 100.0, 100.0]);
    assert_eq!(judged(rule(&c, &MEASURING)).0, Verdict::Discard);
}

#[test]
fn a_gain_hopeless_against_its_spread_is_not_worth_more_pairs() {
    // d = 9, −7, 1: mean 1, sd 8: hundreds of pairs would be needed.
    let c = throughput(&[109.0, 93.0, 101.0], &[100.0, 100.0, 100.0]);
    let (outcome, reason) = judged(rule(&c, &MEASURING));
    assert_eq!(outcome, Verdict::Interesting);
    assert!(reason.contains("97% worst case"), "{reason}");
    assert!(!reason.contains("added"), "{reason}");
}

#[test]
fn the_rule_never_asks_past_max_extra_pairs() {
    // Every pair measured again is throttled on the bar, then inconclusive: the walk may ask
    // for pairs only while the case has fewer than repeats + max_extra_pairs.
    for max_extra_pairs in [1, 3, 5] {
        let r = BootstrapRule::default().with_max_extra_pairs(max_extra_pairs);
        let (mut cand, mut bar) = (vec![110.0, 110.5, 109.6], vec![100.0, 80.2, 100.3]);
        let mut asked = 0;
        while let Ruling::More(m) = r.rule(&throughput(&cand, &bar), &MEASURING) {
            asked += m.pairs;
            for _ in 0..m.pairs {
                cand.push(110.0);
                bar.push(if cand.len() % 2 == 0 { 79.0 } else { 81.0 });
            }
            assert!(asked <= max_extra_pairs, "asked {asked}");
        }
        assert_eq!(cand.len() as u32, 3 + asked);
    }
}

#[test]
fn max_extra_pairs_zero_is_the_fixed_design() {
    let r = BootstrapRule::default().with_max_extra_pairs(0);
    for (cand, bar) in [
        (vec![110.0, 110.5, 109.6], vec![100.0, 80.2, 100.3]),
        (vec![103.0, 109.0, 106.0], vec![100.0, 100.0, 100.0]),
    ] {
        let c = throughput(&cand, &bar);
        assert_eq!(r.rule(&c, &MEASURING), Ruling::Judged(r.decide(&c)));
    }
}

#[test]
fn an_incomplete_first_look_is_judged_as_it_is() {
    // The evaluation stopped at a failure after two pairs: no screening, no second look.
    let c = throughput(&[103.0, 109.0], &[100.0, 100.0]);
    assert_eq!(
        rule(&c, &MEASURING),
        Ruling::Judged(BootstrapRule::default().decide(&c))
    );
}

#[test]
fn guardrails_are_compared_over_the_pairs_kept() {
    // The throttled pair also ruined the guardrail; once it is set aside the guardrail holds.
    let mut c = throughput(&[110.0, 110.5, 109.6, 110.2], &[100.0, 80.2, 100.3, 100.1]);
    c.guardrails
        .push(guardrail("p95_ms", Direction::Lower, 0.5, None));
    paired(&mut c.candidate, "p95_ms", &[20.0, 20.1, 20.0, 20.1]);
    paired(&mut c.bar, "p95_ms", &[20.0, 14.0, 20.1, 20.0]);
    assert_eq!(
        BootstrapRule::default().decide(&c).outcome,
        Verdict::Interesting
    );
    assert_eq!(judged(rule(&c, &MEASURING)).0, Verdict::Keep);
}

#[test]
fn min_speedup_passes_requests_through_and_judges_the_pairs_kept() {
    let r = MinSpeedupRule::new(BootstrapRule::default(), 0.15).unwrap();
    let c = throughput(&[110.0, 110.5, 109.6], &[100.0, 80.2, 100.3]);
    assert!(matches!(r.rule(&c, &MEASURING), Ruling::More(m) if m.pairs == 1));
    let c = throughput(&[110.0, 110.5, 109.6, 110.2], &[100.0, 80.2, 100.3, 100.1]);
    let (outcome, reason) = judged(r.rule(&c, &MEASURING));
    assert_eq!(outcome, Verdict::Interesting);
    assert!(
        reason.ends_with("median 100.0; 9.8% is below min_speedup 15%"),
        "{reason}"
    );
}

#[test]
fn two_pairs_a_look_have_no_screening_but_a_second_look() {
    let sampling = Sampling {
        repeats: 2,
        can_measure: true,
    };
    let c = throughput(&[110.0, 80.0], &[100.0, 100.0]);
    // d = 10, −20: a loss, judged at once.
    assert_eq!(judged(rule(&c, &sampling)).0, Verdict::Discard);
    let c = throughput(&[104.0, 108.0], &[100.0, 100.0]);
    assert!(matches!(rule(&c, &sampling), Ruling::More(m) if m.pairs == 3));
}

#[test]
fn pairs_measured_after_a_conclusive_first_look_join_a_second_look_without_asking() {
    // A fourth pair from elsewhere (a run interrupted and evaluated again, a remeasure): the
    // first look keeps, so no pair is asked for, and every pair is judged at the second look.
    let c = throughput(&[110.0, 110.5, 109.6, 110.2], &[100.0, 100.2, 100.3, 100.1]);
    let (outcome, reason) = judged(rule(&c, &MEASURING));
    assert_eq!(outcome, Verdict::Keep, "{reason}");
    assert_eq!(
        reason,
        "against candidate#1: tok_s 110.1 vs 100.2 (+9.925; 98% worst case +9.168 over 4 pairs); \
         with 1 pair measured after the first 3 (97% worst case +8.712)"
    );
}

#[test]
fn the_latency_example_of_the_docs_is_a_first_look_at_97_percent() {
    let mut c = case("latency_ms", Direction::Lower);
    paired(&mut c.candidate, "latency_ms", &[10.2, 9.9, 10.1]);
    paired(&mut c.bar, "latency_ms", &[10.8, 10.5, 10.9]);
    // d = 0.6, 0.6, 0.8: t(0.97, 2) = 0.94 / √(2 · 0.97 · 0.03) = 3.896, times √(1/75) / √3.
    assert_eq!(
        rule(&c, &MEASURING),
        Ruling::Judged(tally_stats::Judgement::new(
            Verdict::Keep,
            "against candidate#1: latency_ms 10.07 vs 10.73 (-0.6667; 97% worst case -0.4069 \
             over 3 pairs)"
        ))
    );
}
