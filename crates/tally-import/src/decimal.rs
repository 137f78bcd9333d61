//! Exact decimal arithmetic for trace timestamps: microsecond text to integer nanoseconds.
//!
//! Kineto writes `ts` and `dur` as decimal microseconds (`1712195495505583.2`, `4.928`). At epoch
//! scale `ts × 1000` exceeds 2^53, so any conversion through `f64` moves timestamps by up to a few
//! hundred nanoseconds. This module never touches a float: it reads the decimal text into an exact
//! integer count of *femtoseconds* (10⁻⁹ µs, nine fractional digits of a microsecond), adds there,
//! and rounds to nanoseconds once, half to even, only when the text has more than three fractional
//! digits. It does no I/O and knows nothing of JSON beyond the number grammar (plus an optional
//! surrounding pair of quotes, because some producers quote numbers).

/// An exact time in femtoseconds (10⁻⁹ µs = 10⁻⁶ ns).
pub type Femtos = i128;

const FEMTOS_PER_NANO: i128 = 1_000_000;
/// Digits kept in the mantissa; more are refused (no real timestamp has them).
const MAX_DIGITS: usize = 36;

/// Parses decimal microseconds (`123`, `-1.5`, `4.928`, `1e3`, `"7.0"`) into exact femtoseconds.
///
/// Digits below a femtosecond are rounded half to even. Errors are short lowercase phrases for
/// the caller to place.
pub fn parse_micros(text: &str) -> Result<Femtos, String> {
    parse_scaled(text, 9)
}

/// Parses an integer count of nanoseconds written as decimal text (`1711964646000000000`).
/// A fractional or exponent form is accepted when its value is an exact integer.
pub fn parse_integer_nanos(text: &str) -> Result<i128, String> {
    let femtos = parse_scaled(text, 6)?;
    if femtos % FEMTOS_PER_NANO != 0 {
        return Err(format!(
            "{} is not a whole number of nanoseconds",
            text.trim()
        ));
    }
    Ok(femtos / FEMTOS_PER_NANO)
}

/// Rounds femtoseconds to nanoseconds, half to even.
pub fn femtos_to_nanos(value: Femtos) -> i128 {
    let quotient = value.div_euclid(FEMTOS_PER_NANO);
    let remainder = value.rem_euclid(FEMTOS_PER_NANO);
    let half = FEMTOS_PER_NANO / 2;
    if remainder > half || (remainder == half && quotient % 2 != 0) {
        quotient + 1
    } else {
        quotient
    }
}

/// Parses `text` and returns its value × 10^`scale` as an exact integer (rounded half to even
/// when digits remain below the unit).
fn parse_scaled(text: &str, scale: i64) -> Result<i128, String> {
    let trimmed = text.trim();
    let body = trimmed
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(trimmed)
        .trim();
    let shown = || format!("{body:?}");
    let (negative, rest) = match body.as_bytes().first() {
        Some(b'-') => (true, &body[1..]),
        Some(b'+') => (false, &body[1..]),
        _ => (false, body),
    };
    let (mantissa_text, exponent_text) = match rest.find(['e', 'E']) {
        Some(at) => (&rest[..at], Some(&rest[at + 1..])),
        None => (rest, None),
    };
    let (int_part, frac_part) = match mantissa_text.split_once('.') {
        Some((i, f)) => (i, f),
        None => (mantissa_text, ""),
    };
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (int_part.is_empty() && frac_part.is_empty())
        || !all_digits(int_part)
        || !all_digits(frac_part)
    {
        return Err(format!("{} is not a decimal number", shown()));
    }
    let exponent: i64 = match exponent_text {
        None => 0,
        Some(e) => {
            let digits = e.strip_prefix(['+', '-']).unwrap_or(e);
            if digits.is_empty() || !all_digits(digits) || digits.len() > 6 {
                return Err(format!("{} is not a decimal number", shown()));
            }
            e.parse::<i64>()
                .map_err(|_| format!("{} is not a decimal number", shown()))?
        }
    };
    let mut mantissa: i128 = 0;
    let mut significant = 0usize;
    for byte in int_part.bytes().chain(frac_part.bytes()) {
        if significant == 0 && byte == b'0' {
            continue;
        }
        significant += 1;
        if significant > MAX_DIGITS {
            return Err(format!("{} has too many digits", shown()));
        }
        mantissa = mantissa * 10 + i128::from(byte - b'0');
    }
    let shift = scale + exponent - frac_part.len() as i64;
    let magnitude = if mantissa == 0 {
        0
    } else if shift >= 0 {
        let factor = 10i128
            .checked_pow(u32::try_from(shift).map_err(|_| format!("{} is out of range", shown()))?)
            .ok_or_else(|| format!("{} is out of range", shown()))?;
        mantissa
            .checked_mul(factor)
            .ok_or_else(|| format!("{} is out of range", shown()))?
    } else {
        let down = u32::try_from(-shift).unwrap_or(u32::MAX);
        match 10i128.checked_pow(down) {
            None => 0,
            Some(divisor) => {
                let quotient = mantissa / divisor;
                let remainder = mantissa % divisor;
                let twice = remainder * 2;
                if twice > divisor || (twice == divisor && quotient % 2 != 0) {
                    quotient + 1
                } else {
                    quotient
                }
            }
        }
    };
    Ok(if negative { -magnitude } else { magnitude })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns(text: &str) -> i128 {
        femtos_to_nanos(parse_micros(text).unwrap())
    }

    #[test]
    fn epoch_scale_microseconds_convert_exactly() {
        assert_eq!(ns("1712195495505583.2"), 1_712_195_495_505_583_200);
        assert_eq!(ns("4458676983543.183"), 4_458_676_983_543_183);
        assert_eq!(ns("1682725898236567"), 1_682_725_898_236_567_000);
        assert_eq!(ns("10.0"), 10_000);
        assert_eq!(ns("\"25\""), 25_000);
        assert_eq!(ns("1e3"), 1_000_000);
        assert_eq!(ns("1.5E-3"), 2); // 1.5 ns, half to even
        assert_eq!(ns("0.0025"), 2); // 2.5 ns → 2
        assert_eq!(ns("0.0035"), 4); // 3.5 ns → 4
        assert_eq!(ns("-1.25"), -1250);
    }

    #[test]
    fn sums_are_exact_before_rounding() {
        let start = parse_micros("0.0004").unwrap();
        let dur = parse_micros("0.0004").unwrap();
        assert_eq!(femtos_to_nanos(start), 0);
        assert_eq!(femtos_to_nanos(start + dur), 1);
    }

    #[test]
    fn junk_is_refused() {
        for bad in [
            "",
            "-",
            ".",
            "1.2.3",
            "abc",
            "1e",
            "1e+",
            "0x10",
            "NaN",
            "1e9999999",
        ] {
            assert!(parse_micros(bad).is_err(), "{bad}");
        }
        assert!(parse_micros(&"9".repeat(40)).is_err());
        assert_eq!(
            parse_integer_nanos("1711964646000000000").unwrap(),
            1_711_964_646_000_000_000
        );
        assert!(parse_integer_nanos("1.5").is_err());
    }
}
