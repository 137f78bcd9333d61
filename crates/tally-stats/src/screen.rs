//! Far samples: in a paired comparison, a sample that lies far from the other samples of its
//! own side — a clock throttle, a neighbour's job, a page-cache miss — found with a robust scale
//! so that the far sample cannot hide itself by inflating the spread (`docs/verdicts.md`).
//!
//! The test, for the values of `n ≥ 3` pairs: each side's median `m`; each sample's deviation
//! `|v − m|`; for each sample the scale `S`, the median of both sides' deviations pooled without
//! the sample's own (and without, on a side with an odd count, the zero of the median sample
//! itself). A sample is far when its deviation is more than [`FAR_SCALES`] · `S` **and** at least
//! [`FAR_RELATIVE`] of its side's median: a gross disturbance, not the spread of an ordinary
//! noisy benchmark. The farthest such sample (most scales away) is the answer; the caller sets
//! its pair aside and asks again, one sample at a time. Relative distances need a positive scale
//! of measurement, so sides whose medians are not both positive have no far sample. This module
//! only finds samples; what to do about them is the verdict rule's.

/// How many robust scales from its side's median a far sample is, at least.
pub const FAR_SCALES: f64 = 4.0;

/// How far from its side's median a far sample is, at least, as a fraction of the median.
pub const FAR_RELATIVE: f64 = 0.15;

/// The side of a pair a sample was measured on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PairSide {
    /// The candidate being judged.
    Candidate,
    /// The bar it is judged against.
    Bar,
}

impl PairSide {
    /// `candidate` or `bar`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Candidate => "candidate",
            Self::Bar => "bar",
        }
    }
}

/// A sample far from the other samples of its side.
#[derive(Clone, Debug, PartialEq)]
pub struct FarSample {
    /// Its position in the values given to [`far_sample`].
    pub index: usize,
    /// Its side.
    pub side: PairSide,
    /// Its value.
    pub value: f64,
    /// The median of its side (over the values given, itself included).
    pub median: f64,
}

impl FarSample {
    /// `value / median − 1`: −0.2 for a sample 20% below its side's median.
    pub fn relative(&self) -> f64 {
        self.value / self.median - 1.0
    }
}

/// The farthest sample among `candidate[i]` next to `bar[i]`, when it is far: the sample whose
/// deviation from its side's median is the most robust scales away, the scale computed without
/// that sample's own deviation (so that a second far sample on the other side cannot hide the
/// first by inflating the scale). `worse` (when given) restricts the search to samples worse
/// than their side's median in that direction: a disturbance slows a benchmark down. `None` for
/// fewer than three pairs, sides of different lengths, a value that is not finite, or a side
/// whose median is not positive.
pub fn far_sample(candidate: &[f64], bar: &[f64]) -> Option<FarSample> {
    let n = candidate.len();
    if n < 3 || bar.len() != n || candidate.iter().chain(bar).any(|v| !v.is_finite()) {
        return None;
    }
    let sides = [(PairSide::Candidate, candidate), (PairSide::Bar, bar)];
    let medians = sides.map(|(_, values)| median(values));
    if medians.iter().any(|m| *m <= 0.0) {
        return None;
    }
    let mut pooled = Vec::with_capacity(2 * n);
    for ((_, values), m) in sides.iter().zip(medians) {
        let mut deviations: Vec<f64> = values.iter().map(|v| (v - m).abs()).collect();
        if n % 2 == 1 {
            // The median sample's own zero says nothing about the spread.
            deviations.sort_by(f64::total_cmp);
            deviations.remove(0);
        }
        pooled.extend(deviations);
    }
    pooled.sort_by(f64::total_cmp);
    let mut farthest: Option<(f64, FarSample)> = None;
    for ((side, values), m) in sides.iter().zip(medians) {
        for (index, value) in values.iter().enumerate() {
            let deviation = (value - m).abs();
            if deviation == 0.0 || deviation < FAR_RELATIVE * m {
                continue;
            }
            let scale = median_without(&pooled, deviation);
            if deviation <= FAR_SCALES * scale {
                continue;
            }
            // Robust scales away; a zero scale makes any gross deviation infinitely far.
            let distance = deviation / scale;
            if farthest.as_ref().is_none_or(|(d, f)| {
                distance > *d || (distance == *d && deviation > (f.value - f.median).abs())
            }) {
                farthest = Some((
                    distance,
                    FarSample {
                        index,
                        side: *side,
                        value: *value,
                        median: m,
                    },
                ));
            }
        }
    }
    farthest.map(|(_, far)| far)
}

/// The median of `sorted` (ascending, at least two values) without one value equal to `value`.
fn median_without(sorted: &[f64], value: f64) -> f64 {
    let skip = sorted
        .iter()
        .position(|v| *v == value)
        .unwrap_or(sorted.len() - 1);
    let at = |i: usize| if i < skip { sorted[i] } else { sorted[i + 1] };
    let m = sorted.len() - 1;
    if m % 2 == 1 {
        at(m / 2)
    } else {
        (at(m / 2 - 1) + at(m / 2)) / 2.0
    }
}

/// The median of non-empty finite values (the mean of the middle two for an even count).
fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_throttled_bar_sample_is_far() {
        // Bar median 100, deviations 19.8 and 0.3; candidate median 110, deviations 0.5 and
        // 0.4: without its own, S = median of [0.3, 0.4, 0.5] = 0.4, and 19.8 > 4 · 0.4, ≥ 15.
        let far = far_sample(&[110.0, 110.5, 109.6], &[100.0, 80.2, 100.3]);
        assert_eq!(
            far,
            Some(FarSample {
                index: 1,
                side: PairSide::Bar,
                value: 80.2,
                median: 100.0,
            })
        );
        assert!((far.unwrap().relative() + 0.198).abs() < 1e-12);
    }

    #[test]
    fn one_far_sample_on_each_side_does_not_hide_the_other() {
        // With both throttles in the pooled scale, S would be (2.5 + 16.5) / 2 = 9.5 and neither
        // 20.1 nor 16.5 would be 4 scales away. Without its own deviation each is; the farther
        // (20.1 against S = 2.5) comes first.
        let far = far_sample(&[109.1, 89.0, 111.6], &[82.6, 99.1, 99.1]).unwrap();
        assert_eq!((far.index, far.side), (1, PairSide::Candidate));
        let far = far_sample(&[109.1, 111.0, 111.6], &[82.6, 99.1, 99.1]).unwrap();
        assert_eq!((far.index, far.side), (0, PairSide::Bar));
    }

    #[test]
    fn ordinary_noise_is_never_far() {
        // 5% noise: deviations of several percent, under 15% of the median.
        assert_eq!(
            far_sample(&[104.0, 97.0, 100.0], &[95.0, 103.0, 100.0]),
            None
        );
        // Many scales away (S is tiny) but only 2% away: not a gross disturbance.
        assert_eq!(
            far_sample(&[100.0, 100.01, 102.0], &[100.0, 100.01, 100.0]),
            None
        );
        // 20% away, but the others vary as much: not far in scales.
        assert_eq!(
            far_sample(&[100.0, 120.0, 85.0], &[110.0, 90.0, 100.0]),
            None
        );
    }

    #[test]
    fn too_few_pairs_or_no_positive_scale_find_nothing() {
        assert_eq!(far_sample(&[100.0, 80.0], &[100.0, 100.0]), None);
        assert_eq!(far_sample(&[-1.0, -1.0, -5.0], &[-1.0, -1.0, -1.0]), None);
        assert_eq!(far_sample(&[1.0, f64::NAN, 1.0], &[1.0, 1.0, 1.0]), None);
        assert_eq!(far_sample(&[1.0, 1.0, 1.0], &[1.0, 1.0]), None);
    }

    #[test]
    fn identical_values_make_any_gross_deviation_far() {
        // S = 0: a 25% slower latency among identical ones is far.
        let far = far_sample(&[10.0, 12.5, 10.0, 10.0], &[10.0, 10.0, 10.0, 10.0]).unwrap();
        assert_eq!((far.index, far.side), (1, PairSide::Candidate));
    }

    #[test]
    fn medians_with_and_without_one_value() {
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median_without(&[1.0, 2.0, 3.0, 4.0], 1.0), 3.0);
        assert_eq!(median_without(&[1.0, 2.0, 3.0, 4.0], 4.0), 2.0);
        assert_eq!(median_without(&[1.0, 2.0, 3.0], 2.0), 2.0);
    }
}
