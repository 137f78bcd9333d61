//! Human formatting of nanoseconds and ratios. Internal math stays in integer ns; only these
//! functions turn numbers into text.

/// `1234567` → `1.235 ms`; picks ns, µs, ms or s so the number has 1–3 integer digits.
pub fn duration(ns: u64) -> String {
    let n = ns as f64;
    if ns < 1_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{:.3} µs", n / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.3} ms", n / 1e6)
    } else {
        format!("{:.3} s", n / 1e9)
    }
}

/// `part / whole` as a percentage with one decimal, or `—` when `whole` is 0.
pub fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        "—".into()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

/// `a / b` with two decimals and a `×`, or `—` when `b` is 0.
pub fn ratio(a: u64, b: u64) -> String {
    if b == 0 {
        "—".into()
    } else {
        format!("{:.2}×", a as f64 / b as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_pick_a_readable_unit() {
        assert_eq!(duration(999), "999 ns");
        assert_eq!(duration(1_500), "1.500 µs");
        assert_eq!(duration(15_000_000), "15.000 ms");
        assert_eq!(duration(2_500_000_000), "2.500 s");
        assert_eq!(percent(1, 3), "33.3%");
        assert_eq!(percent(1, 0), "—");
        assert_eq!(ratio(21, 15), "1.40×");
    }
}
