//! The statistics: exact percentile index, the bootstrap bound, the Student-t bound, and the
//! sanity vectors of `docs/verdicts.md` at confidence 0.95.

use std::num::NonZeroU32;

use tally_stats::{Bootstrap, Confidence, Execution, Samples, StatsError, student_t_lower_bound};

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
    // Golden values: a change here changes every stored verdict's bound. They were computed by a
    // third implementation, written from the published algorithms in Python (SplitMix64 seeding,
    // xoshiro256++ with its jump polynomial, Lemire's multiply-and-reject, sequential sums, the
    // exact tail index), not by this crate; `independent_bootstrap` below is a second one in Rust.
    let d = samples(&[0.37, -1.21, 2.05, 0.88, -0.14, 1.67, 0.52, -0.73, 3.1, 0.05]);
    let goldens: [(f64, u32, u64, u64); 4] = [
        (0.95, 10_000, 0, 0x3fd5_1eb8_51eb_8510), // 0.3299999999999992
        (0.95, 10_000, 1, 0x3fd0_a3d7_0a3d_70a6), // 0.2600000000000001
        (0.99, 1_000, 7, 0xbffd_70a3_d70a_3d72),  // -1.8400000000000003
        (0.9, 300, 42, 0x4003_eb85_1eb8_51ea),    // 2.4899999999999993
    ];
    for (confidence, resamples, seed, golden) in goldens {
        let bound = bootstrap(confidence, resamples, seed).lower_bound(&d);
        assert_eq!(
            bound.to_bits(),
            golden,
            "{confidence} × {resamples}, seed {seed}: {bound:?} = {:#x}",
            bound.to_bits()
        );
    }
    // The first resample sums of seed 5, in order.
    let sums = bootstrap(0.95, 3, 5).resample_sums(&d, Execution::Serial);
    assert_eq!(
        sums,
        [10.68, 6.609_999_999_999_998_5, 1.929_999_999_999_999_5]
    );
    // Units that mostly cancel: the first four sums of seed 0, and a bound of exactly 0.
    let d = samples(&[1.0, 0.0, 0.0, -1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0]);
    let sums = bootstrap(0.95, 4, 0).resample_sums(&d, Execution::Serial);
    assert_eq!(sums, [1.0, 3.0, 3.0, -1.0]);
    assert_eq!(bootstrap(0.95, 10_000, 0).lower_bound(&d), 0.0);
    let d = samples(&[0.1, 0.7, -0.3, 2.9, 1.3]);
    let bound = bootstrap(0.9, 999, 12_345).lower_bound(&d);
    assert_eq!(bound.to_bits(), 0x3ffe_6666_6666_6666, "{bound:?}"); // 1.9
}

/// A second implementation of the bootstrap, from the published algorithms and not from
/// `tally-stats` or `rand_xoshiro`: the bound must agree bit for bit on any input.
mod independent {
    const GOLDEN_GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;
    const JUMP: [u64; 4] = [
        0x180e_c6d3_3cfd_0aba,
        0xd5a6_1266_f0c9_392c,
        0xa958_2618_e03f_c9aa,
        0x39ab_dc45_29b1_661c,
    ];

    /// xoshiro256++ (Blackman and Vigna), seeded by four outputs of SplitMix64.
    #[derive(Clone)]
    pub struct Xoshiro([u64; 4]);

    impl Xoshiro {
        pub fn seeded(seed: u64) -> Self {
            let mut state = seed;
            let mut next = || {
                state = state.wrapping_add(GOLDEN_GAMMA);
                let mut z = state;
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                z ^ (z >> 31)
            };
            Self([next(), next(), next(), next()])
        }

        pub fn next(&mut self) -> u64 {
            let s = &mut self.0;
            let result = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
            let t = s[1] << 17;
            s[2] ^= s[0];
            s[3] ^= s[1];
            s[1] ^= s[2];
            s[0] ^= s[3];
            s[2] ^= t;
            s[3] = s[3].rotate_left(45);
            result
        }

        /// 2^128 steps ahead.
        pub fn jump(&mut self) {
            let mut acc = [0u64; 4];
            for word in JUMP {
                for bit in 0..64 {
                    if word & (1 << bit) != 0 {
                        for (a, s) in acc.iter_mut().zip(self.0) {
                            *a ^= s;
                        }
                    }
                    self.next();
                }
            }
            self.0 = acc;
        }
    }

    /// A uniform index below `n` (Lemire, "Fast random integer generation in an interval").
    fn index(rng: &mut Xoshiro, n: u64) -> usize {
        loop {
            let product = u128::from(rng.next()) * u128::from(n);
            let low = product as u64;
            if low >= n || low >= n.wrapping_neg() % n {
                return (product >> 64) as usize;
            }
        }
    }

    /// Every resample sum: blocks of 256 resamples, block `b` drawing from the seeded
    /// generator jumped `b` times.
    pub fn sums(values: &[f64], resamples: usize, seed: u64) -> Vec<f64> {
        let mut generator = Xoshiro::seeded(seed);
        let mut out = Vec::with_capacity(resamples);
        while out.len() < resamples {
            let mut rng = generator.clone();
            for _ in 0..256.min(resamples - out.len()) {
                let mut sum = 0.0;
                for _ in 0..values.len() {
                    sum += values[index(&mut rng, values.len() as u64)];
                }
                out.push(sum);
            }
            generator.jump();
        }
        out
    }

    /// The sum at index ⌊(1 − confidence) · resamples⌋ in ascending order, the tail index
    /// computed in integers from the confidence's decimal digits (`per_mille` of 1000).
    pub fn bound(values: &[f64], per_mille: u64, resamples: usize, seed: u64) -> f64 {
        let mut sums = sums(values, resamples, seed);
        sums.sort_by(f64::total_cmp);
        sums[((1000 - per_mille) * resamples as u64 / 1000) as usize]
    }
}

#[test]
fn an_independent_implementation_gives_the_same_bits() {
    let inputs: Vec<Vec<f64>> = vec![
        vec![0.37, -1.21, 2.05, 0.88, -0.14, 1.67, 0.52, -0.73, 3.1, 0.05],
        vec![1.0, 0.0, 0.0, -1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0],
        vec![0.6, 0.6, 0.8],
        vec![-2.5],
        (0..97)
            .map(|i| ((i * 53) % 89) as f64 / 13.0 - 3.0)
            .collect(),
        // 3 values: Lemire's rejection is taken for some draws of a small n.
        vec![1e-3, 7.0, -4.25],
    ];
    for values in &inputs {
        for (per_mille, resamples, seed) in [
            (950, 10_000, 0),
            (950, 999, 1),
            (990, 1_000, 7),
            (900, 257, 42),
            (975, 40, u64::MAX),
        ] {
            let b = bootstrap(per_mille as f64 / 1000.0, resamples as u32, seed);
            let ours = b.lower_bound(&samples(values));
            let theirs = independent::bound(values, per_mille, resamples, seed);
            assert_eq!(
                ours.to_bits(),
                theirs.to_bits(),
                "n = {}, {per_mille}‰ × {resamples}, seed {seed}: {ours} vs {theirs}",
                values.len()
            );
            let sums = b.resample_sums(&samples(values), Execution::Serial);
            let theirs = independent::sums(values, resamples, seed);
            assert!(
                sums.iter()
                    .zip(&theirs)
                    .all(|(a, b)| a.to_bits() == b.to_bits())
            );
        }
    }
}

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
