//! The statistics: exact percentile index, the bootstrap bound, the Student-t bound, and the
//! sanity vectors of the issue at confidence 0.95.

use std::num::NonZeroU32;

use tally_stats::{
    Bootstrap, CHUNK_RESAMPLES, Confidence, Execution, Samples, StatsError, student_t_lower_bound,
};

fn bootstrap(confidence: f64, resamples: u32, seed: u64) -> Bootstrap {
    Bootstrap {
        confidence: Confidence::new(confidence).unwrap(),
        resamples: NonZeroU32::new(resamples).unwrap(),
        seed,
    }
}

fn samples(values: &[f64]) -> Samples {
    Samples::new(values.to_vec()).unwrap()
}

/// t(0.95, 2): the 95% quantile of Student's t with 2 degrees of freedom, from tables.
const T_95_2: f64 = 2.919_985_580_353_724;

#[test]
fn tail_index_is_exact() {
    let cases = [
        (0.9, 10_000, 1_000),
        (0.95, 10_000, 500),
        (0.99, 10_000, 100),
        (0.9, 999, 99),
        (0.95, 999, 49),
        (0.99, 999, 9),
        (0.9, 1, 0),
        (0.95, 1, 0),
        (0.99, 1, 0),
        (0.975, 40, 1),
        (0.999, 1_000, 1),
        (0.75, 4, 1),
    ];
    for (confidence, resamples, index) in cases {
        let c = Confidence::new(confidence).unwrap();
        assert_eq!(c.tail_index(resamples), index, "{confidence} × {resamples}");
    }
}

#[test]
fn the_float_index_is_off_by_one_where_ours_is_not() {
    // piloop's formula, to show the test above would catch it.
    let float_index = ((1.0 - 0.9) * 10_000.0f64).floor() as usize;
    assert_eq!(float_index, 999);
    assert_eq!(Confidence::new(0.9).unwrap().tail_index(10_000), 1_000);
}

#[test]
fn confidence_is_strictly_between_one_half_and_one() {
    for bad in [0.5, 1.0, 0.2, 1.5, f64::NAN, f64::INFINITY, -0.95] {
        assert!(
            matches!(Confidence::new(bad), Err(StatsError::Confidence(_))),
            "{bad}"
        );
    }
    assert_eq!(
        Confidence::new(1.0).unwrap_err().to_string(),
        "confidence = 1: expected a number strictly between 0.5 and 1, such as 0.95"
    );
    assert_eq!(Confidence::new(0.95).unwrap().percent(), "95%");
    assert_eq!(Confidence::new(0.9).unwrap().percent(), "90%");
    assert_eq!(Confidence::new(0.975).unwrap().percent(), "97.5%");
    assert_eq!(Confidence::new(0.501).unwrap().percent(), "50.1%");
}

#[test]
fn samples_refuse_empty_and_non_finite_values() {
    assert_eq!(Samples::new(vec![]), Err(StatsError::NoValues));
    let err = Samples::new(vec![1.0, f64::NAN]).unwrap_err();
    assert!(matches!(err, StatsError::NonFinite { index: 1, .. }));
    assert_eq!(
        err.to_string(),
        "value #1 is NaN, not a finite number: drop it before building samples"
    );
    assert_eq!(
        Samples::new(vec![1.0, f64::NEG_INFINITY]).unwrap_err(),
        StatsError::NonFinite {
            index: 1,
            value: f64::NEG_INFINITY
        }
    );
}

#[test]
fn the_bound_is_the_sorted_sum_at_the_tail_index() {
    let d = samples(&[3.0, -1.0, 0.5, 2.0, 7.0]);
    for (confidence, resamples) in [(0.9, 10_000), (0.95, 999), (0.99, 1_000), (0.95, 1)] {
        let b = bootstrap(confidence, resamples, 11);
        let mut sums = b.resample_sums(&d, Execution::Serial);
        assert_eq!(sums.len(), resamples as usize);
        sums.sort_by(f64::total_cmp);
        let index = b.confidence.tail_index(resamples);
        assert_eq!(b.lower_bound(&d).to_bits(), sums[index].to_bits());
    }
}

#[test]
fn serial_and_parallel_are_bit_identical() {
    let big: Vec<f64> = (0..1_000)
        .map(|i| ((i * 37) % 101) as f64 / 7.0 - 5.0)
        .collect();
    let inputs = [samples(&big), samples(&[0.6, 0.6, 0.8]), samples(&[1.0])];
    for d in &inputs {
        for resamples in [1, 255, 256, 257, 999, 10_000] {
            let b = bootstrap(0.95, resamples, 3);
            let serial = b.resample_sums(d, Execution::Serial);
            let parallel = b.resample_sums(d, Execution::Parallel);
            let serial_bits: Vec<u64> = serial.iter().map(|v| v.to_bits()).collect();
            let parallel_bits: Vec<u64> = parallel.iter().map(|v| v.to_bits()).collect();
            assert_eq!(serial_bits, parallel_bits, "n = {}, {resamples}", d.len());
            assert_eq!(
                b.lower_bound_with(d, Execution::Serial).to_bits(),
                b.lower_bound_with(d, Execution::Parallel).to_bits()
            );
        }
    }
    assert_eq!(CHUNK_RESAMPLES, 256);
}

#[test]
fn the_bound_is_the_same_on_one_thread_or_sixteen() {
    let d: Vec<f64> = (0..300).map(|i| (i as f64 * 0.37).sin()).collect();
    let d = samples(&d);
    let b = bootstrap(0.95, 10_000, 9);
    let on = |threads| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| b.lower_bound_with(&d, Execution::Parallel))
    };
    assert_eq!(on(1).to_bits(), on(16).to_bits());
    assert_eq!(
        on(1).to_bits(),
        b.lower_bound_with(&d, Execution::Serial).to_bits()
    );
}

#[test]
fn the_seed_pins_the_stream() {
    // Golden values: a change here changes every stored verdict's bound.
    let d = samples(&[1.0, 0.0, 0.0, -1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0]);
    assert_eq!(bootstrap(0.95, 10_000, 0).lower_bound(&d), GOLDEN_SEED_0);
    assert_eq!(bootstrap(0.95, 10_000, 1).lower_bound(&d), GOLDEN_SEED_1);
    let sums = bootstrap(0.95, 4, 0).resample_sums(&d, Execution::Serial);
    assert_eq!(sums, [1.0, 3.0, 3.0, -1.0]);
    let d = samples(&[0.1, 0.7, -0.3, 2.9, 1.3]);
    let bound = bootstrap(0.9, 999, 12_345).lower_bound(&d);
    assert_eq!(
        bound.to_bits(),
        GOLDEN_BITS,
        "{bound:?} = {:#x}",
        bound.to_bits()
    );
}

const GOLDEN_SEED_0: f64 = 0.0;
const GOLDEN_SEED_1: f64 = 0.0;
const GOLDEN_BITS: u64 = 0x3ffe_6666_6666_6666;

#[test]
fn sanity_pairs_of_a_faster_latency() {
    // Lower is better: d = bar − candidate = [0.6, 0.6, 0.8].
    let candidate = [10.2, 9.9, 10.1];
    let bar = [10.8, 10.5, 10.9];
    let d: Vec<f64> = candidate.iter().zip(bar).map(|(c, b)| b - c).collect();
    let d = samples(&d);
    let b = bootstrap(0.95, 10_000, 0);
    let per_pair = b.lower_bound(&d) / 3.0;
    assert!((per_pair - 0.6).abs() < 1e-12, "{per_pair}");
    let t = student_t_lower_bound(&d, b.confidence).unwrap();
    let expected = d.mean() - T_95_2 * d.sd().unwrap() / 3f64.sqrt();
    assert!((t - expected).abs() < 1e-9, "{t} vs {expected}");
    assert!((t - 0.472_001).abs() < 1e-6, "{t}");
}

#[test]
fn sanity_units_that_mostly_cancel_are_not_significant() {
    let d = samples(&[1.0, 0.0, 0.0, -1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0]);
    assert!(bootstrap(0.95, 10_000, 0).lower_bound(&d) <= 0.0);
}

#[test]
fn sanity_units_that_lose_overall_have_a_negative_bound() {
    let d = samples(&[-2.0, 1.0, 0.5]);
    assert!(bootstrap(0.95, 10_000, 0).lower_bound(&d) < 0.0);
}

#[test]
fn sanity_one_unit_is_its_own_bound_at_any_confidence() {
    let d = samples(&[1.0]);
    for confidence in [0.51, 0.9, 0.95, 0.99, 0.999] {
        for resamples in [1, 999, 10_000] {
            assert_eq!(bootstrap(confidence, resamples, 5).lower_bound(&d), 1.0);
        }
    }
}

#[test]
fn student_t_matches_the_formula() {
    // mean 2, sd 1 (values 1, 2, 3), n 3.
    let d = samples(&[1.0, 2.0, 3.0]);
    let t = student_t_lower_bound(&d, Confidence::default()).unwrap();
    assert!((t - (2.0 - T_95_2 / 3f64.sqrt())).abs() < 1e-9, "{t}");
    // t(0.99, 9) = 2.821437925; d = 0..=9, mean 4.5, sd √(82.5/9).
    let d = samples(&(0..10).map(f64::from).collect::<Vec<_>>());
    let t = student_t_lower_bound(&d, Confidence::new(0.99).unwrap()).unwrap();
    let expected = 4.5 - 2.821_437_925 * (82.5f64 / 9.0).sqrt() / 10f64.sqrt();
    assert!((t - expected).abs() < 1e-6, "{t} vs {expected}");
}
