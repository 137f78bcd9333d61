//! Exact summary statistics of per-request values: quantiles by linear interpolation between
//! order statistics (numpy's default "linear" method, stormlog's `quantile`, vLLM's
//! `np.percentile`), failure-penalised quantiles (failures rank worst), mean, sample standard
//! deviation, and stormlog's sufficiency rule for a tail level.

/// Quantile `p` ∈ [0, 1] of `sorted` (ascending, no NaN): rank h = p·(n − 1), interpolated
/// linearly between the order statistics around it. `None` for an empty slice.
pub fn quantile_sorted(sorted: &[f64], p: f64) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let h = p.clamp(0.0, 1.0) * (n - 1) as f64;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(n - 1);
    let frac = h - lo as f64;
    Some(sorted[lo] + frac * (sorted[hi] - sorted[lo]))
}

/// The failure-penalised quantile: the `failed` requests rank above every value, so level `p`
/// of all `values.len() + failed` requests is level p·total/successes of the successful values.
/// `+∞` when that level exceeds 1 (the quantile falls in the failure mass) or nothing
/// succeeded; `None` when there is nothing at all.
pub fn penalized_quantile(sorted: &[f64], failed: usize, p: f64) -> Option<f64> {
    let total = sorted.len() + failed;
    if total == 0 {
        return None;
    }
    if sorted.is_empty() {
        return Some(f64::INFINITY);
    }
    let level = p * total as f64 / sorted.len() as f64;
    if level > 1.0 + 1e-12 {
        return Some(f64::INFINITY);
    }
    quantile_sorted(sorted, level.min(1.0))
}

/// Sorts values ascending (total order; NaN never occurs in measured durations).
pub fn sorted(mut values: Vec<f64>) -> Vec<f64> {
    values.sort_by(f64::total_cmp);
    values
}

/// Arithmetic mean; `None` when empty.
pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// Sample standard deviation (n − 1); `None` below two values.
pub fn sample_std(values: &[f64]) -> Option<f64> {
    let m = mean(values)?;
    (values.len() >= 2).then(|| {
        let ss: f64 = values.iter().map(|x| (x - m) * (x - m)).sum();
        (ss / (values.len() - 1) as f64).sqrt()
    })
}

/// stormlog's sufficiency rule: a symmetric 95 % order-statistic interval around level `p` must
/// exist with 5 ranks to spare, which needs n ≥ 20 for p50, 114 for p90, 230 for p95 and 1,164
/// for p99. Other levels use the same normal approximation.
pub fn sufficient(n: usize, p: f64) -> bool {
    let needed = match (p * 100.0).round() as u32 {
        50 => 20,
        90 => 114,
        95 => 230,
        99 => 1164,
        _ => {
            // Half-width of the rank interval 1.96·√(n p (1 − p)) plus 5 ranks must fit on the
            // smaller side: solve n·min(p, 1 − p) ≥ 1.96·√(n p (1 − p)) + 5 by search.
            let tail = p.min(1.0 - p);
            (1..1_000_000)
                .find(|&n| n as f64 * tail >= 1.96 * (n as f64 * p * (1.0 - p)).sqrt() + 5.0)
                .unwrap_or(usize::MAX)
        }
    };
    n >= needed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_numpy_linear() {
        // numpy.percentile([1, 2, 3, 4, 10], [0, 25, 50, 90, 99, 100]) =
        // [1, 2, 3, 7.6, 9.76, 10]
        let x = [1.0, 2.0, 3.0, 4.0, 10.0];
        let got: Vec<f64> = [0.0, 0.25, 0.5, 0.9, 0.99, 1.0]
            .iter()
            .map(|&p| quantile_sorted(&x, p).unwrap())
            .collect();
        let want = [1.0, 2.0, 3.0, 7.6, 9.76, 10.0];
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-12, "{got:?}");
        }
        assert_eq!(quantile_sorted(&[], 0.5), None);
        assert_eq!(quantile_sorted(&[4.0], 0.99), Some(4.0));
    }

    #[test]
    fn penalized_quantile_moves_up_and_hits_infinity() {
        let values: Vec<f64> = (1..=98).map(f64::from).collect();
        // 2 failures of 100: p50 is the successful values' quantile at 0.5/0.98.
        let want = quantile_sorted(&values, 0.5 / 0.98).unwrap();
        assert_eq!(penalized_quantile(&values, 2, 0.5), Some(want));
        assert_eq!(penalized_quantile(&values, 2, 0.99), Some(f64::INFINITY));
        assert_eq!(
            penalized_quantile(&values, 2, 0.98),
            quantile_sorted(&values, 1.0)
        );
        assert_eq!(
            penalized_quantile(&values, 0, 0.5),
            quantile_sorted(&values, 0.5)
        );
        assert_eq!(penalized_quantile(&[], 3, 0.5), Some(f64::INFINITY));
        assert_eq!(penalized_quantile(&[], 0, 0.5), None);
    }

    #[test]
    fn sufficiency_thresholds() {
        assert!(!sufficient(19, 0.5) && sufficient(20, 0.5));
        assert!(!sufficient(113, 0.9) && sufficient(114, 0.9));
        assert!(sufficient(230, 0.95) && !sufficient(1163, 0.99));
    }

    #[test]
    fn mean_and_std() {
        assert_eq!(mean(&[1.0, 2.0, 3.0]), Some(2.0));
        assert_eq!(sample_std(&[1.0, 2.0, 3.0]), Some(1.0));
        assert_eq!(sample_std(&[1.0]), None);
    }
}
