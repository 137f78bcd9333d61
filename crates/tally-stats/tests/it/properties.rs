//! Properties of the bootstrap bound over random inputs: replayable per seed, within the range
//! of possible sums, monotone in the confidence.

use std::num::NonZeroU32;

use proptest::prelude::*;
use tally_stats::{Bootstrap, Confidence, Execution, Samples};

fn values() -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(-1.0e3..1.0e3f64, 1..40)
}

fn confidence() -> impl Strategy<Value = f64> {
    prop_oneof![Just(0.9), Just(0.95), Just(0.99), 0.501..0.999f64]
}

fn bootstrap(confidence: f64, resamples: u32, seed: u64) -> Bootstrap {
    Bootstrap {
        confidence: Confidence::new(confidence).unwrap(),
        resamples: NonZeroU32::new(resamples).unwrap(),
        seed,
    }
}

/// `v + v + ... + v` (n times), added as the bootstrap adds.
fn repeated(v: f64, n: usize) -> f64 {
    (0..n).fold(0.0, |sum, _| sum + v)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn the_bound_replays_per_seed(d in values(), c in confidence(), seed in any::<u64>(), resamples in 1u32..3_000) {
        let d = Samples::new(d).unwrap();
        let b = bootstrap(c, resamples, seed);
        let serial = b.lower_bound_with(&d, Execution::Serial);
        prop_assert_eq!(serial.to_bits(), b.lower_bound_with(&d, Execution::Serial).to_bits());
        prop_assert_eq!(serial.to_bits(), b.lower_bound_with(&d, Execution::Parallel).to_bits());
    }

    #[test]
    fn the_bound_lies_within_the_possible_sums(d in values(), c in confidence(), seed in any::<u64>()) {
        let d = Samples::new(d).unwrap();
        let bound = bootstrap(c, 1_000, seed).lower_bound(&d);
        prop_assert!(bound <= repeated(d.max(), d.len()), "{} > n·max", bound);
        prop_assert!(bound >= repeated(d.min(), d.len()), "{} < n·min", bound);
    }

    #[test]
    fn more_confidence_never_raises_the_bound(d in values(), a in confidence(), b in confidence(), seed in any::<u64>()) {
        let (low, high) = if a <= b { (a, b) } else { (b, a) };
        let d = Samples::new(d).unwrap();
        let at_low = bootstrap(low, 2_000, seed).lower_bound(&d);
        let at_high = bootstrap(high, 2_000, seed).lower_bound(&d);
        prop_assert!(at_high <= at_low, "{} at {} > {} at {}", at_high, high, at_low, low);
    }

    #[test]
    fn the_tail_index_matches_exact_rational_arithmetic(thousandths in 501u32..1000, resamples in 1u32..100_000) {
        let c = Confidence::new(f64::from(thousandths) / 1000.0).unwrap();
        let expected = (u64::from(1000 - thousandths) * u64::from(resamples) / 1000) as usize;
        prop_assert_eq!(c.tail_index(resamples), expected);
    }
}
