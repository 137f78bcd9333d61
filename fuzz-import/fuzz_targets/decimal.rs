//! Fuzzes the exact decimal parser: never a panic, and integers round-trip.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tally_import::decimal::{femtos_to_nanos, parse_integer_nanos, parse_micros};

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(f) = parse_micros(text) {
            let _ = femtos_to_nanos(f);
        }
        let _ = parse_integer_nanos(text);
        if let Ok(v) = text.parse::<i64>() {
            assert_eq!(parse_micros(text).map(femtos_to_nanos), Ok(i128::from(v) * 1000));
        }
    }
});
