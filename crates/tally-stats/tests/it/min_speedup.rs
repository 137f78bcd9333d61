//! The `min_speedup` rule (`docs/campaign.md#min-speedup`): bootstrap, then a minimum relative gain.

use tally_model::{Direction, Verdict};
use tally_stats::{BootstrapRule, MinSpeedupRule, VerdictCase};

use crate::cases::{case, mean, paired};

fn rule(min_speedup: f64) -> MinSpeedupRule {
    MinSpeedupRule::new(BootstrapRule::default(), min_speedup).unwrap()
}

fn throughput(candidate: &[f64], bar: &[f64]) -> VerdictCase {
    let mut c = case("tok_s", Direction::Higher);
    paired(&mut c.candidate, "tok_s", candidate);
    paired(&mut c.bar, "tok_s", bar);
    c
}

#[test]
fn a_significant_but_small_gain_is_interesting() {
    let c = throughput(&[103.1, 103.2, 103.3], &[100.0, 100.0, 100.0]);
    let bootstrap = BootstrapRule::default().decide(&c);
    assert_eq!(bootstrap.outcome, Verdict::Keep);
    let judgement = rule(0.05).decide(&c);
    assert_eq!(judgement.outcome, Verdict::Interesting);
    assert_eq!(
        judgement.reason,
        format!("{}; 3.2% is below min_speedup 5%", bootstrap.reason)
    );
    assert_eq!(
        judgement.reason,
        "against candidate#1: tok_s 103.2 vs 100.0 (+3.200; 95% worst case +3.031 over 3 pairs); \
         3.2% is below min_speedup 5%"
    );
}

#[test]
fn a_ten_percent_gain_keeps() {
    let c = throughput(&[110.1, 110.0, 109.9], &[100.0, 100.0, 100.0]);
    let judgement = rule(0.05).decide(&c);
    assert_eq!(judgement, BootstrapRule::default().decide(&c));
    assert_eq!(judgement.outcome, Verdict::Keep);
}

#[test]
fn the_speedup_uses_paired_means_over_pairs() {
    // The sides' means (over all measurements) say +20%; the pairs say +3.2%.
    let mut c = throughput(&[103.1, 103.2, 103.3], &[100.0, 100.0, 100.0]);
    mean(&mut c.candidate, "tok_s", 120.0);
    let judgement = rule(0.05).decide(&c);
    assert_eq!(judgement.outcome, Verdict::Interesting);
    assert!(judgement.reason.ends_with("; 3.2% is below min_speedup 5%"));
}

#[test]
fn a_lower_is_better_speedup_is_the_relative_drop() {
    let mut c = case("latency_ms", Direction::Lower);
    c.primary.deterministic = true;
    mean(&mut c.candidate, "latency_ms", 9.7);
    mean(&mut c.bar, "latency_ms", 10.0);
    let judgement = rule(0.05).decide(&c);
    assert_eq!(judgement.outcome, Verdict::Interesting);
    assert_eq!(
        judgement.reason,
        "against candidate#1: latency_ms 9.700 vs 10.00 (-0.3000; aggregate: deterministic metric); \
         3.0% is below min_speedup 5%"
    );
    // 10 − 9.7 is 0.3000000000000007 in binary: not below 3%.
    assert_eq!(rule(0.03).decide(&c).outcome, Verdict::Keep);
    assert_eq!(rule(0.02).decide(&c).outcome, Verdict::Keep);
}

#[test]
fn a_bar_mean_of_zero_leaves_the_keep() {
    let mut c = case("score", Direction::Higher);
    c.primary.deterministic = true;
    mean(&mut c.candidate, "score", 0.001);
    mean(&mut c.bar, "score", 0.0);
    assert_eq!(rule(0.5).decide(&c).outcome, Verdict::Keep);
}

#[test]
fn a_keep_without_a_bar_score_passes_unchanged() {
    let mut c = throughput(&[103.1, 103.2, 103.3], &[100.0, 100.0, 100.0]);
    c.bar.means.clear();
    let judgement = rule(0.05).decide(&c);
    assert_eq!(judgement.outcome, Verdict::Keep);
    assert_eq!(
        judgement.reason,
        "candidate#1 has no score under the current evaluator"
    );
}

#[test]
fn other_judgements_pass_unchanged() {
    let c = throughput(&[99.0, 99.5, 99.2], &[100.0, 100.0, 100.0]);
    assert_eq!(rule(0.05).decide(&c), BootstrapRule::default().decide(&c));
    assert_eq!(rule(0.05).decide(&c).outcome, Verdict::Discard);
    let c = throughput(&[101.0], &[100.0]);
    assert_eq!(rule(0.05).decide(&c).outcome, Verdict::Interesting);
    assert!(!rule(0.05).decide(&c).reason.contains("min_speedup"));
}

#[test]
fn min_speedup_is_validated() {
    for bad in [-0.01, f64::NAN, f64::INFINITY] {
        assert!(
            MinSpeedupRule::new(BootstrapRule::default(), bad).is_err(),
            "{bad}"
        );
    }
    assert_eq!(
        MinSpeedupRule::new(BootstrapRule::default(), -0.05)
            .unwrap_err()
            .to_string(),
        "min_speedup = -0.05: expected a fraction of at least 0, such as 0.05 for 5%"
    );
}
