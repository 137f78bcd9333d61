//! Finite, non-empty samples and their plain summaries: mean, standard deviation, and the
//! one-sided Student-t lower bound on the mean.
//!
//! The invariant (at least one value, every value finite) is checked once in [`Samples::new`],
//! so nothing downstream tests for NaN or divides by zero. This module does not resample; the
//! bootstrap lives in `bootstrap`.

use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::{Confidence, StatsError};

/// Finite values, at least one.
#[derive(Clone, Debug, PartialEq)]
pub struct Samples(Vec<f64>);

impl Samples {
    /// Checks that `values` is non-empty and every value finite.
    pub fn new(values: Vec<f64>) -> Result<Self, StatsError> {
        if values.is_empty() {
            return Err(StatsError::NoValues);
        }
        if let Some((index, &value)) = values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(StatsError::NonFinite { index, value });
        }
        Ok(Self(values))
    }

    /// The values, in the order given.
    pub fn values(&self) -> &[f64] {
        &self.0
    }

    /// Number of values (at least 1).
    #[allow(clippy::len_without_is_empty)] // never empty, by construction
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Sum of the values, added left to right.
    pub fn sum(&self) -> f64 {
        self.0.iter().sum()
    }

    /// Arithmetic mean.
    pub fn mean(&self) -> f64 {
        self.sum() / self.0.len() as f64
    }

    /// Sample standard deviation (divisor `n − 1`); `None` for a single value.
    pub fn sd(&self) -> Option<f64> {
        let n = self.0.len();
        if n < 2 {
            return None;
        }
        let mean = self.mean();
        let squares: f64 = self.0.iter().map(|v| (v - mean) * (v - mean)).sum();
        Some((squares / (n - 1) as f64).sqrt())
    }

    /// The smallest value.
    pub fn min(&self) -> f64 {
        self.0.iter().copied().fold(f64::INFINITY, f64::min)
    }

    /// The largest value.
    pub fn max(&self) -> f64 {
        self.0.iter().copied().fold(f64::NEG_INFINITY, f64::max)
    }
}

impl TryFrom<Vec<f64>> for Samples {
    type Error = StatsError;
    fn try_from(values: Vec<f64>) -> Result<Self, StatsError> {
        Self::new(values)
    }
}

/// The one-sided Student-t lower bound on the mean of `d`:
/// `mean(d) − t(confidence, n − 1) · sd(d) / √n`, where `t(c, k)` is the `c` quantile of
/// Student's t with `k` degrees of freedom.
///
/// `None` for a single value (no spread to estimate). Identical values give the mean.
pub fn student_t_lower_bound(d: &Samples, confidence: Confidence) -> Option<f64> {
    let sd = d.sd()?;
    let freedom = (d.len() - 1) as f64;
    let quantile = StudentsT::new(0.0, 1.0, freedom)
        .ok()?
        .inverse_cdf(confidence.value());
    Some(d.mean() - quantile * sd / (d.len() as f64).sqrt())
}

/// The number of pairs at which the Student-t bound of a paired gain with mean `gain > 0` and
/// standard deviation `sd` would first be positive, if both held as more pairs came: the
/// smallest `n ≥ 2` with `t(confidence, n − 1) · sd / √n < gain`. `None` past `limit` pairs (the
/// gain is too small against the noise to show) or when `gain` is not positive.
pub fn pairs_to_show(gain: f64, sd: f64, confidence: Confidence, limit: usize) -> Option<usize> {
    if gain.is_nan() || gain <= 0.0 || !sd.is_finite() || sd < 0.0 {
        return None;
    }
    (2..=limit).find(|&n| {
        StudentsT::new(0.0, 1.0, (n - 1) as f64)
            .map(|t| t.inverse_cdf(confidence.value()) * sd / (n as f64).sqrt() < gain)
            .unwrap_or(false)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sd_divides_by_n_minus_one() {
        let s = Samples::new(vec![2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(s.mean(), 5.0);
        // Σ(v − 5)² = 32; 32 / 7.
        assert_eq!(s.sd(), Some((32.0f64 / 7.0).sqrt()));
        assert_eq!((s.min(), s.max()), (2.0, 9.0));
    }

    #[test]
    fn one_value_has_no_sd_and_no_t_bound() {
        let s = Samples::new(vec![3.5]).unwrap();
        assert_eq!(s.sd(), None);
        assert_eq!(student_t_lower_bound(&s, Confidence::default()), None);
    }

    #[test]
    fn pairs_to_show_is_where_the_t_bound_turns_positive() {
        // mean 1, sd 2: t(0.95, 11) · 2 / √12 = 1.037 ≥ 1, t(0.95, 12) · 2 / √13 = 0.988 < 1.
        assert_eq!(
            pairs_to_show(1.0, 2.0, Confidence::default(), 1000),
            Some(13)
        );
        assert_eq!(
            pairs_to_show(1.0, 0.0, Confidence::default(), 1000),
            Some(2)
        );
        assert_eq!(pairs_to_show(0.01, 2.0, Confidence::default(), 1000), None);
        assert_eq!(pairs_to_show(-1.0, 2.0, Confidence::default(), 1000), None);
    }

    #[test]
    fn identical_values_bound_at_their_mean() {
        let s = Samples::new(vec![0.25, 0.25, 0.25]).unwrap();
        assert_eq!(student_t_lower_bound(&s, Confidence::default()), Some(0.25));
    }
}
