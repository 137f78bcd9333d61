//! Comparing one metric between the candidate and the bar (`docs/campaign.md#bootstrap`), and the text of
//! that comparison: which path (per-unit, pairs, aggregate), the gain, its lower bound, and the
//! numbers to four significant figures.
//!
//! This module does not decide outcomes (that is `rule`); it answers "how much better, and how
//! sure are we" for one metric.

use tally_model::Direction;

use crate::{Bootstrap, Confidence, Criterion, Samples, Side, student_t_lower_bound};

/// The comparison of one metric between the candidate and the bar.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// Metric name.
    pub name: String,
    /// Which way it improves.
    pub direction: Direction,
    /// The candidate's value shown: its mean, or its paired mean over the pairs path.
    pub candidate: f64,
    /// The bar's value shown, likewise.
    pub bar: f64,
    /// `gain(candidate, bar)`: positive when the candidate is better.
    pub gain: f64,
    /// How the gain was bounded.
    pub evidence: Evidence,
}

/// How the gain of a [`Comparison`] was bounded.
#[derive(Clone, Debug, PartialEq)]
pub enum Evidence {
    /// Per-unit path: `bound = LB(d)` over the unit gains `d` (a bound on the total gain).
    Units {
        /// Number of units.
        units: usize,
        /// The bootstrap lower bound on the summed gain.
        bound: f64,
    },
    /// Pairs path: bounds on the mean paired gain; `None` for a single pair.
    Pairs {
        /// Number of complete pairs.
        pairs: usize,
        /// `LB(d) / n`: the percentile bootstrap alone.
        bootstrap: Option<f64>,
        /// The one-sided Student-t bound on the mean.
        student_t: Option<f64>,
        /// The sample standard deviation of the paired gains (`None` for a single pair): the
        /// spread a reason quotes when the bound is inconclusive.
        spread: Option<f64>,
    },
    /// Aggregate path: two means, no uncertainty.
    Aggregate {
        /// Whether the metric is marked deterministic (only then does the gain count as its own
        /// bound).
        deterministic: bool,
    },
}

impl Comparison {
    /// The lower bound on the gain, or `None` when there is none (a single pair, or the
    /// aggregate path of a noisy metric). Over pairs it is the smaller of the bootstrap and
    /// Student-t bounds.
    pub fn bound(&self) -> Option<f64> {
        let bound = match &self.evidence {
            Evidence::Units { bound, .. } => Some(*bound),
            Evidence::Pairs {
                bootstrap,
                student_t,
                ..
            } => match (bootstrap, student_t) {
                (Some(b), Some(t)) => Some(b.min(*t)),
                _ => None,
            },
            Evidence::Aggregate { deterministic } => deterministic.then_some(self.gain),
        };
        bound.filter(|b| b.is_finite())
    }

    /// The text of `docs/campaign.md#bootstrap`: `<name> <cand> vs <bar> (<±delta>; <conf%> worst case <±bound> over
    /// <N> units|pairs)`, or `(<±delta>; aggregate: <why>)`. Delta and bound are in the
    /// metric's own orientation (a faster latency shows as a negative delta).
    pub fn text(&self, confidence: Confidence) -> String {
        let delta = format_signed(self.candidate - self.bar);
        let detail = match (&self.evidence, self.bound()) {
            (Evidence::Aggregate { deterministic }, _) => {
                if *deterministic {
                    "aggregate: deterministic metric".to_owned()
                } else {
                    "aggregate: not significant: no repeats or per-unit results".to_owned()
                }
            }
            (Evidence::Pairs { pairs, .. }, None) => {
                format!("no bound from {}", count(*pairs, "pair"))
            }
            (Evidence::Units { units, .. }, None) => {
                format!("no bound over {}", count(*units, "unit"))
            }
            (evidence, Some(bound)) => {
                let over = match evidence {
                    Evidence::Units { units, .. } => count(*units, "unit"),
                    Evidence::Pairs { pairs, .. } => count(*pairs, "pair"),
                    Evidence::Aggregate { .. } => String::new(),
                };
                let oriented = match self.direction {
                    Direction::Higher => bound,
                    Direction::Lower => -bound,
                };
                format!(
                    "{} worst case {} over {over}",
                    confidence.percent(),
                    format_signed(oriented)
                )
            }
        };
        format!(
            "{} {} vs {} ({delta}; {detail})",
            self.name,
            format_sig4(self.candidate),
            format_sig4(self.bar)
        )
    }
}

/// `3 pairs`, `1 pair`.
fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// Compares `criterion` between `candidate` and `bar`; `None` when either side has no mean.
///
/// Paths, first that applies: per-unit (both sides have finite units for the metric with the
/// same unit ids), pairs (both sides have paired samples; the first `min(len)` pairs with both
/// values finite are used), aggregate (the two means).
pub fn compare_metric(
    bootstrap: &Bootstrap,
    criterion: &Criterion,
    candidate: &Side,
    bar: &Side,
) -> Option<Comparison> {
    compare_metric_over(bootstrap, criterion, candidate, bar, None)
}

/// [`compare_metric`] over some of the pairs only: `pairs` are positions in the sides' sample
/// lists (the pairs a sequential look kept); `None` is every pair. The other paths ignore it.
pub fn compare_metric_over(
    bootstrap: &Bootstrap,
    criterion: &Criterion,
    candidate: &Side,
    bar: &Side,
    pairs: Option<&[usize]>,
) -> Option<Comparison> {
    let name = criterion.name.as_str();
    let direction = criterion.direction;
    let (candidate_mean, bar_mean) = (candidate.mean(name)?, bar.mean(name)?);
    let comparison = |candidate: f64, bar: f64, evidence| Comparison {
        name: name.to_owned(),
        direction,
        candidate,
        bar,
        gain: direction.gain(candidate, bar),
        evidence,
    };
    if let Some(d) = unit_gains(direction, candidate, bar, name) {
        let evidence = Evidence::Units {
            units: d.len(),
            bound: bootstrap.lower_bound(&d),
        };
        return Some(comparison(candidate_mean, bar_mean, evidence));
    }
    if let Some((candidate_values, bar_values)) = paired_values(candidate, bar, name, pairs) {
        let gains: Vec<f64> = candidate_values
            .iter()
            .zip(&bar_values)
            .map(|(c, b)| direction.gain(*c, *b))
            .collect();
        let n = gains.len();
        let paired_mean = |values: &[f64]| values.iter().sum::<f64>() / n as f64;
        let (paired_candidate, paired_bar) =
            (paired_mean(&candidate_values), paired_mean(&bar_values));
        let evidence = match Samples::new(gains) {
            Ok(d) if n >= 2 => Evidence::Pairs {
                pairs: n,
                bootstrap: Some(bootstrap.lower_bound(&d) / n as f64),
                student_t: student_t_lower_bound(&d, bootstrap.confidence),
                spread: d.sd(),
            },
            _ => Evidence::Pairs {
                pairs: n,
                bootstrap: None,
                student_t: None,
                spread: None,
            },
        };
        return Some(comparison(paired_candidate, paired_bar, evidence));
    }
    let evidence = Evidence::Aggregate {
        deterministic: criterion.deterministic,
    };
    Some(comparison(candidate_mean, bar_mean, evidence))
}

/// The positions of the complete, finite pairs of `criterion` when its comparison takes the pairs
/// path (both means present, no per-unit path, at least one pair); `None` otherwise.
pub(crate) fn pair_positions(
    criterion: &Criterion,
    candidate: &Side,
    bar: &Side,
) -> Option<Vec<usize>> {
    let name = criterion.name.as_str();
    candidate.mean(name)?;
    bar.mean(name)?;
    if unit_gains(criterion.direction, candidate, bar, name).is_some() {
        return None;
    }
    let (c, b) = (candidate.samples.get(name)?, bar.samples.get(name)?);
    let positions: Vec<usize> = c
        .iter()
        .zip(b)
        .enumerate()
        .filter(|(_, (c, b))| c.is_finite() && b.is_finite())
        .map(|(i, _)| i)
        .collect();
    (!positions.is_empty()).then_some(positions)
}

/// `dᵤ = gain(candᵤ, barᵤ)` in unit-id order, when both sides have the same, finite units.
fn unit_gains(direction: Direction, candidate: &Side, bar: &Side, name: &str) -> Option<Samples> {
    let (c, b) = (candidate.units.get(name)?, bar.units.get(name)?);
    if c.len() != b.len() || c.keys().ne(b.keys()) {
        return None;
    }
    let gains = c
        .values()
        .zip(b.values())
        .map(|(c, b)| direction.gain(*c, *b))
        .collect();
    // Empty or non-finite units (or a gain that overflows) leave the per-unit path.
    Samples::new(gains).ok()
}

/// The complete, finite pairs of `name` (among positions `pairs`, when given): candidate values
/// and bar values, same length ≥ 1.
fn paired_values(
    candidate: &Side,
    bar: &Side,
    name: &str,
    pairs: Option<&[usize]>,
) -> Option<(Vec<f64>, Vec<f64>)> {
    let (c, b) = (candidate.samples.get(name)?, bar.samples.get(name)?);
    let (kept_c, kept_b): (Vec<f64>, Vec<f64>) = c
        .iter()
        .zip(b)
        .enumerate()
        .filter(|(i, _)| pairs.is_none_or(|p| p.contains(i)))
        .map(|(_, pair)| pair)
        .filter(|(c, b)| c.is_finite() && b.is_finite())
        .map(|(c, b)| (*c, *b))
        .unzip();
    (!kept_c.is_empty()).then_some((kept_c, kept_b))
}

/// `x` to four significant figures, without exponent: `10.07`, `0.4720`, `12350`, `0`.
pub fn format_sig4(x: f64) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    if x == 0.0 {
        return "0".to_owned();
    }
    let sign = if x < 0.0 { "-" } else { "" };
    // `{:.3e}` rounds the exact binary value correctly to four digits: "1.235e4".
    let scientific = format!("{:.3e}", x.abs());
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let body = if exponent >= 3 {
        format!("{digits}{}", "0".repeat((exponent - 3) as usize))
    } else if exponent >= 0 {
        let (whole, fraction) = digits.split_at(exponent as usize + 1);
        format!("{whole}.{fraction}")
    } else {
        format!("0.{}{digits}", "0".repeat((-exponent - 1) as usize))
    };
    format!("{sign}{body}")
}

/// [`format_sig4`] with an explicit `+` on positive numbers: `+0.6000`, `-1.500`, `0`.
pub fn format_signed(x: f64) -> String {
    let text = format_sig4(x);
    if x > 0.0 && x.is_finite() {
        format!("+{text}")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_significant_figures() {
        let cases = [
            (10.0666, "10.07"),
            (0.472, "0.4720"),
            (12345.6, "12350"),
            (1234.4, "1234"),
            (9.9996, "10.00"),
            (0.00099996, "0.001000"),
            (-2.5, "-2.500"),
            (100.0, "100.0"),
            (0.0, "0"),
            (-0.0, "0"),
            (1e-7, "0.0000001000"),
        ];
        for (x, text) in cases {
            assert_eq!(format_sig4(x), text, "{x}");
        }
        assert_eq!(format_signed(0.6), "+0.6000");
        assert_eq!(format_signed(-0.6667), "-0.6667");
        assert_eq!(format_signed(-0.0), "0");
    }

    #[test]
    fn count_is_singular_for_one() {
        assert_eq!(count(1, "pair"), "1 pair");
        assert_eq!(count(3, "unit"), "3 units");
    }
}
