//! The verdict (`docs/campaign.md#bootstrap`, `docs/campaign.md#min-speedup`) through the real `bootstrap` and `min_speedup` rules:
//! every branch of the decision order — crash (with the failure sentence), floor, keep (the head
//! moves), discard, not significant, a guardrail past its margin — the smaller of the bootstrap
//! and Student-t bounds over pairs, the per-unit path, and `min_speedup`'s minimum.
//!
//! The bar (the baseline, `score=100`) prints the same value in every sample, so each expected
//! bound below follows from the candidate's paired differences by hand. With the default
//! `max_extra_pairs`, the three pairs are the first look of `docs/verdicts.md#more-pairs`, at
//! 0.97; the cases here never call for more pairs.

use tally_model::Verdict;
use tally_runner::{Outcome, ScriptedAttempt};

use crate::lab::{Lab, config, id, metrics, score};

/// Runs candidate 1 against the kept baseline and returns its verdict and reason. `candidate`
/// answers candidate 1's samples by sample index; the baseline prints `bar`.
fn judge(
    text: &str,
    bar: ScriptedAttempt,
    candidate: impl Fn(u32) -> ScriptedAttempt + Send + 'static,
) -> (Lab, Verdict, String) {
    let lab = Lab::new(text);
    lab.respond(move |ask| {
        if ask.rev == 0 {
            bar.clone()
        } else {
            candidate(ask.sample)
        }
    });
    assert!(matches!(
        lab.init(),
        tally_engine::InitOutcome::Registered { .. }
    ));
    lab.add(&[1]);
    lab.run();
    let (verdict, reason) = lab.verdict(1);
    (lab, verdict, reason)
}

const GUARDRAIL: &str = "[[metrics]]\n\
                         name = \"mem_gb\"\n\
                         direction = \"lower\"\n\
                         role = \"guardrail\"\n\
                         margin = 1.0\n\
                         floor = 40.0\n";

#[test]
fn a_candidate_without_a_successful_sample_crashes_with_the_failure_sentence() {
    let (lab, verdict, reason) = judge(&config(3, ""), score(100.0), |_| {
        ScriptedAttempt::ends(Outcome::Exited(0), "METRIC other=1\n")
    });
    assert_eq!(lab.order_since(3), ["C1.0"], "stops at the first failure");
    assert_eq!(verdict, Verdict::Crash);
    assert_eq!(
        reason,
        "no successful measurement: the evaluate command exited 0 but did not print the required \
         metric score (expected a stdout line `METRIC score=<number>`)"
    );
    assert_eq!(lab.head(), Some(id(0)));
}

#[test]
fn a_timeout_is_a_crash_that_says_so() {
    let (_, verdict, reason) = judge(&config(3, ""), score(100.0), |_| {
        ScriptedAttempt::ends(Outcome::TimedOut, "METRIC score=500\n")
    });
    assert_eq!(verdict, Verdict::Crash);
    assert_eq!(
        reason,
        "no successful measurement: the evaluate command timed out after 60 s \
         (evaluate_timeout) and its process group was killed"
    );
}

#[test]
fn a_guardrail_past_its_floor_is_a_discard_before_anything_is_compared() {
    let text = config(3, GUARDRAIL);
    let bar = metrics(&[("score", 100.0), ("mem_gb", 20.0)]);
    let (lab, verdict, reason) = judge(&text, bar, |_| {
        metrics(&[("score", 150.0), ("mem_gb", 45.0)])
    });
    assert_eq!(verdict, Verdict::Discard);
    assert_eq!(reason, "floor: mem_gb 45.00 past its floor 40.00");
    assert_eq!(lab.head(), Some(id(0)));
}

#[test]
fn a_significant_gain_is_a_keep_judged_on_the_smaller_bound_and_the_head_moves() {
    // d = [9, 10, 11]: Student-t 10 − 3.896·1/√3 = 7.750 (t(0.97, 2) = 3.896) is below the
    // bootstrap's 28/3.
    let (lab, verdict, reason) = judge(&config(3, ""), score(100.0), |sample| {
        score(109.0 + f64::from(sample))
    });
    assert_eq!(verdict, Verdict::Keep);
    assert_eq!(
        reason,
        "against candidate#0: score 110.0 vs 100.0 (+10.00; 97% worst case +7.750 over 3 pairs)"
    );
    assert_eq!(lab.head(), Some(id(1)));
    let kept = lab.candidate(1);
    assert_eq!(kept.judged_against, Some(id(0)));
    assert_eq!(kept.parent, Some(id(0)));
    assert_eq!(
        *lab.observer.judged.lock().unwrap(),
        [
            (id(0), Verdict::Keep, "baseline: score 100.0".to_string()),
            (id(1), Verdict::Keep, reason)
        ]
    );
}

#[test]
fn no_gain_is_a_discard() {
    let (lab, verdict, reason) = judge(&config(3, ""), score(100.0), |_| score(95.0));
    assert_eq!(verdict, Verdict::Discard);
    assert_eq!(
        reason,
        "against candidate#0: score 95.00 vs 100.0 (-5.000; 97% worst case -5.000 over 3 pairs)"
    );
    assert_eq!(lab.head(), Some(id(0)));
}

#[test]
fn a_gain_that_is_not_significant_is_interesting() {
    // d = [3, -1, 1]: mean 1, sd 2, Student-t 1 − 3.896·2/√3 = −3.499; 17 pairs at 0.97. The
    // gain is hopeless against its spread for a second look (about 28 pairs at 0.98).
    let (lab, verdict, reason) = judge(&config(3, ""), score(100.0), |sample| {
        score([103.0, 99.0, 101.0][sample as usize])
    });
    assert_eq!(verdict, Verdict::Interesting);
    assert_eq!(
        reason,
        "against candidate#0: score 101.0 vs 100.0 (+1.000; 97% worst case -3.499 over 3 \
         pairs): the gain is not significant; the paired gains vary by 2.000 (sd): if gain and \
         spread hold, about 17 pairs would show it (`repeats = 17`, or `tally candidate \
         remeasure 1` for more pairs)"
    );
    assert_eq!(lab.head(), Some(id(0)));
}

#[test]
fn a_guardrail_beyond_its_margin_makes_a_significant_gain_interesting() {
    let text = config(3, GUARDRAIL);
    let bar = metrics(&[("score", 100.0), ("mem_gb", 20.0)]);
    let (lab, verdict, reason) = judge(&text, bar.clone(), |_| {
        metrics(&[("score", 110.0), ("mem_gb", 22.0)])
    });
    assert_eq!(verdict, Verdict::Interesting);
    assert_eq!(
        reason,
        "against candidate#0: score 110.0 vs 100.0 (+10.00; 97% worst case +10.00 over 3 \
         pairs); guardrails past their margin: mem_gb 22.00 vs 20.00 (+2.000; 95% worst case \
         +2.000 over 3 pairs)"
    );
    assert_eq!(lab.head(), Some(id(0)));

    // Within the margin (0.5 GB worse, margin 1 GB): a keep.
    let (_, verdict, _) = judge(&text, bar, |_| {
        metrics(&[("score", 110.0), ("mem_gb", 20.5)])
    });
    assert_eq!(verdict, Verdict::Keep);
}

#[test]
fn min_speedup_turns_a_small_keep_into_interesting_and_keeps_a_large_one() {
    let text = config(
        3,
        "[plugins.verdict_rule]\nprovider = \"min_speedup\"\nmin_speedup = 0.05\n",
    );
    let (lab, verdict, reason) = judge(&text, score(100.0), |_| score(103.0));
    assert_eq!(verdict, Verdict::Interesting);
    assert_eq!(
        reason,
        "against candidate#0: score 103.0 vs 100.0 (+3.000; 97% worst case +3.000 over 3 \
         pairs); 3.0% is below min_speedup 5%"
    );
    assert_eq!(lab.head(), Some(id(0)));

    let (lab, verdict, reason) = judge(&text, score(100.0), |_| score(110.0));
    assert_eq!(verdict, Verdict::Keep);
    assert_eq!(
        reason,
        "against candidate#0: score 110.0 vs 100.0 (+10.00; 97% worst case +10.00 over 3 pairs)"
    );
    assert_eq!(lab.head(), Some(id(1)));
}

#[test]
fn per_unit_results_are_judged_over_units_even_without_repeats() {
    let units = |a: f64, b: f64| {
        score(a + b).with_units(&format!(r#"{{"score": {{"u1": {a}, "u2": {b}}}}}"#))
    };
    let (lab, verdict, reason) = judge(&config(1, ""), units(50.0, 50.0), move |_| {
        units(54.0, 56.0)
    });
    assert_eq!(lab.order(), ["C0.0", "C1.0"], "one repeat: unpaired");
    assert_eq!(verdict, Verdict::Keep);
    // d = [4, 6]: every resample sums to at least 8.
    assert_eq!(
        reason,
        "against candidate#0: score 110.0 vs 100.0 (+10.00; 95% worst case +8.000 over 2 units)"
    );
    assert_eq!(lab.head(), Some(id(1)));
}

#[test]
fn a_units_file_that_does_not_sum_is_a_crash() {
    let (_, verdict, reason) = judge(&config(1, ""), score(100.0), |_| {
        score(110.0).with_units(r#"{"score": {"u1": 1, "u2": 2}}"#)
    });
    assert_eq!(verdict, Verdict::Crash);
    assert!(
        reason.starts_with("no successful measurement: bad units file: "),
        "{reason}"
    );
}
