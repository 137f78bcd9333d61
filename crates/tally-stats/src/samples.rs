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
    fn identical_values_bound_at_their_mean() {
        let s = Samples::new(vec![0.25, 0.25, 0.25]).unwrap();
        assert_eq!(student_t_lower_bound(&s, Confidence::default()), Some(0.25));
    }
}
