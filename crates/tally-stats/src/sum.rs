//! Exactly rounded sums and means: [`fsum`] is the sum of the values rounded once, at the end
//! (Shewchuk's algorithm with the final half-even correction, as Python's `math.fsum`), and
//! [`fmean`] divides it by the count (Python's `statistics.fmean`). Tables that show means to a
//! fixed number of decimals use them so that the last digit does not depend on the order of the
//! additions.

/// The correctly rounded sum of finite `values` (Python's `math.fsum`).
pub fn fsum(values: impl IntoIterator<Item = f64>) -> f64 {
    // Non-overlapping partial sums, smallest magnitude first, whose exact sum is the sum so far.
    let mut partials: Vec<f64> = Vec::new();
    for value in values {
        let mut x = value;
        let mut kept = 0;
        for j in 0..partials.len() {
            let mut y = partials[j];
            if x.abs() < y.abs() {
                std::mem::swap(&mut x, &mut y);
            }
            let hi = x + y;
            let lo = y - (hi - x);
            if lo != 0.0 {
                partials[kept] = lo;
                kept += 1;
            }
            x = hi;
        }
        partials.truncate(kept);
        if x != 0.0 {
            partials.push(x);
        }
    }
    // Add the partials from the largest down until the sum becomes inexact.
    let Some(mut n) = partials.len().checked_sub(1) else {
        return 0.0;
    };
    let mut hi = partials[n];
    let mut lo = 0.0;
    while n > 0 {
        n -= 1;
        let x = hi;
        let y = partials[n];
        hi = x + y;
        lo = y - (hi - x);
        if lo != 0.0 {
            break;
        }
    }
    // Half-way between two doubles: the partials below decide which way to round.
    if n > 0 && ((lo < 0.0 && partials[n - 1] < 0.0) || (lo > 0.0 && partials[n - 1] > 0.0)) {
        let y = lo * 2.0;
        let x = hi + y;
        if y == x - hi {
            hi = x;
        }
    }
    hi
}

/// The mean of finite `values` with an exactly rounded sum (Python's `statistics.fmean`);
/// `None` when there are none.
pub fn fmean(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    Some(fsum(values.iter().copied()) / values.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::{fmean, fsum};

    #[test]
    fn the_sum_is_rounded_once() {
        assert_eq!(fsum([0.1; 10]), 1.0);
        assert_eq!([0.1; 10].iter().sum::<f64>(), 0.999_999_999_999_999_9);
        assert_eq!(fsum([1e100, 1.0, -1e100, 1e-100]), 1.0);
        assert_eq!(fsum([]), 0.0);
        // Half-even rounding decided by a partial below the top two (Python gives the same).
        assert_eq!(fsum([1.0, 1e-16, 1e-16]), 1.000_000_000_000_000_2);
        assert_eq!(fsum([1e16, 1.0, 1e-16]), 10_000_000_000_000_002.0);
    }

    #[test]
    fn means_match_python_statistics_fmean() {
        // Values and `'%.2f' % statistics.fmean(values)` from Python 3.11; a left-to-right sum
        // divided by the count shows the other neighbour for each.
        let cases: [(&[f64], &str); 3] = [
            (&[34.696, 42.074, 37.192, 30.938], "36.23"),
            (&[10.48, 21.423, 8.688, 2.032, 34.677, 17.11], "15.73"),
            (&[2.5, 42.054, 33.349, 24.277], "25.55"),
        ];
        for (values, python) in cases {
            assert_eq!(
                format!("{:.2}", fmean(values).unwrap()),
                python,
                "{values:?}"
            );
            let naive = values.iter().sum::<f64>() / values.len() as f64;
            assert_ne!(format!("{naive:.2}"), python, "{values:?}");
        }
        assert_eq!(fmean(&[0.1; 10]), Some(0.1));
        assert_eq!(fmean(&[]), None);
    }
}
