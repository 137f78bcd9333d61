//! A confidence level held as the exact decimal it was written as, so that the bootstrap's
//! percentile index `⌊(1 − confidence) · resamples⌋` is computed in integers.
//!
//! `0.9` as an `f64` is slightly less than nine tenths, and `(1.0 - 0.9) * 10000.0` is
//! `999.9999999999999`: a floating-point index is off by one (piloop's bug). Here the value is
//! read back through Rust's shortest round-trip spelling (`0.9` → digits `9`, scale `10¹`), which
//! is the decimal the user wrote in `tally.toml`, and the index is integer arithmetic on it.
//! This module does not parse TOML or know parameter names beyond `confidence`.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::StatsError;

/// A confidence level strictly between 0.5 and 1, exact as a decimal.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Confidence {
    value: f64,
    /// The fraction's digits: `value = digits / 10^scale`.
    digits: u64,
    /// Number of digits after the decimal point (at most 17 for an `f64` in (0.5, 1)).
    scale: u32,
}

impl Confidence {
    /// 0.95, the default of the `bootstrap` rule.
    pub const DEFAULT: f64 = 0.95;

    /// Validates `value` (finite, strictly between 0.5 and 1) and records its exact decimal.
    pub fn new(value: f64) -> Result<Self, StatsError> {
        if !(value > 0.5 && value < 1.0) {
            return Err(StatsError::Confidence(value));
        }
        // Rust prints an f64 with the shortest digits that read back to the same value, and
        // never with an exponent; in (0.5, 1) that is "0." followed by 1 to 17 digits.
        let spelled = value.to_string();
        let fraction = spelled
            .strip_prefix("0.")
            .ok_or(StatsError::Confidence(value))?;
        let digits = fraction
            .parse::<u64>()
            .map_err(|_| StatsError::Confidence(value))?;
        let scale = u32::try_from(fraction.len()).map_err(|_| StatsError::Confidence(value))?;
        if scale > 19 {
            return Err(StatsError::Confidence(value));
        }
        Ok(Self {
            value,
            digits,
            scale,
        })
    }

    /// The confidence as a number (0.95).
    pub fn value(self) -> f64 {
        self.value
    }

    /// `⌊(1 − confidence) · resamples⌋`, exactly: the index of the bound in the sorted
    /// resample sums. Always `< resamples` for `resamples ≥ 1`, since confidence > 0.5.
    pub fn tail_index(self, resamples: u32) -> usize {
        let denominator = 10u128.pow(self.scale);
        let tail = denominator - u128::from(self.digits);
        let index = tail * u128::from(resamples) / denominator;
        // index < resamples / 2 ≤ u32::MAX, so the conversion cannot fail.
        usize::try_from(index).unwrap_or(usize::MAX)
    }

    /// The confidence that spends `tenths` tenths of this one's error: `1 − (1 − c) · tenths / 10`,
    /// exactly as a decimal (0.95 spending 6 tenths is 0.97, spending 4 tenths 0.98). The looks
    /// of a sequential design split the error this way (`docs/verdicts.md`). `tenths` is clamped
    /// to 1..=10.
    pub fn spend(self, tenths: u32) -> Self {
        let tenths = u128::from(tenths.clamp(1, 10));
        // The new error is tail / 10^scale, one more decimal than this one's, then trimmed.
        let mut scale = self.scale + 1;
        let mut tail = (10u128.pow(self.scale) - u128::from(self.digits)) * tenths;
        while scale > 1 && tail.is_multiple_of(10) {
            tail /= 10;
            scale -= 1;
        }
        // An f64 in (0.5, 1) has at most 17 decimals, so the digits fit in u64.
        let digits = u64::try_from(10u128.pow(scale) - tail).unwrap_or(u64::MAX);
        let spelled = format!("0.{digits:0width$}", width = scale as usize);
        Self {
            value: spelled.parse().unwrap_or(self.value),
            digits,
            scale,
        }
    }

    /// The confidence as a percentage with no float noise: `95%`, `90%`, `97.5%`.
    pub fn percent(self) -> String {
        let mut fraction = format!("{:0width$}", self.digits, width = self.scale as usize);
        while fraction.len() < 2 {
            fraction.push('0');
        }
        let (whole, rest) = fraction.split_at(2);
        if rest.is_empty() {
            format!("{whole}%")
        } else {
            format!("{whole}.{rest}%")
        }
    }
}

impl Default for Confidence {
    fn default() -> Self {
        Self {
            value: Self::DEFAULT,
            digits: 95,
            scale: 2,
        }
    }
}

impl TryFrom<f64> for Confidence {
    type Error = StatsError;
    fn try_from(value: f64) -> Result<Self, StatsError> {
        Self::new(value)
    }
}

impl Serialize for Confidence {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(self.value)
    }
}

impl<'de> Deserialize<'de> for Confidence {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = f64::deserialize(deserializer)?;
        Self::new(value).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_the_decimal_0_95() {
        assert_eq!(Confidence::default(), Confidence::new(0.95).unwrap());
    }

    #[test]
    fn digits_and_scale_are_the_written_decimal() {
        let c = Confidence::new(0.975).unwrap();
        assert_eq!((c.digits, c.scale), (975, 3));
        let c = Confidence::new(0.9).unwrap();
        assert_eq!((c.digits, c.scale), (9, 1));
        let c = Confidence::new(0.501).unwrap();
        assert_eq!((c.digits, c.scale), (501, 3));
    }

    #[test]
    fn spending_tenths_of_the_error_is_exact() {
        let c = Confidence::default();
        assert_eq!(c.spend(6), Confidence::new(0.97).unwrap());
        assert_eq!(c.spend(4), Confidence::new(0.98).unwrap());
        assert_eq!(c.spend(10), c);
        assert_eq!(c.spend(5), Confidence::new(0.975).unwrap());
        assert_eq!(c.spend(6).percent(), "97%");
        assert_eq!(c.spend(6).tail_index(10_000), 300);
        let c = Confidence::new(0.9).unwrap();
        assert_eq!(c.spend(6), Confidence::new(0.94).unwrap());
        assert_eq!(c.spend(3).tail_index(10_000), 300);
        let c = Confidence::new(0.99).unwrap();
        assert_eq!(c.spend(6), Confidence::new(0.994).unwrap());
    }

    #[test]
    fn the_closest_value_below_one_still_has_an_exact_decimal() {
        let c = Confidence::new(1.0 - f64::EPSILON / 2.0).unwrap();
        assert_eq!((c.digits, c.scale), (9_999_999_999_999_999, 16));
        assert_eq!(c.tail_index(u32::MAX), 0);
    }
}
