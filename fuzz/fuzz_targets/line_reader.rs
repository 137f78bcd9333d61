//! Arbitrary bytes through the whole JSONL reader: line splitting, batching (a batch size and a
//! thread count taken from the first bytes), parallel decode, v4 resolution, and the line-by-line
//! decoder on each line. It must never panic; every failure must be an `Err`.
#![no_main]

use std::num::NonZeroUsize;

use libfuzzer_sys::fuzz_target;
use tally_evidence::read::{CorrelationRecordDecoder, ReadOptions, for_each_record_in_bytes};

fuzz_target!(|data: &[u8]| {
    let (batch_bytes, threads, body) = match data {
        [a, b, rest @ ..] => (usize::from(*a) * 7 + 1, usize::from(*b % 3) + 1, rest),
        _ => (64, 1, data),
    };
    let options = ReadOptions {
        batch_bytes,
        threads: NonZeroUsize::new(threads),
    };
    let mut count = 0usize;
    let whole = for_each_record_in_bytes(
        "fuzz",
        body,
        &options,
        &mut CorrelationRecordDecoder::new(),
        |_, _| {
            count += 1;
            Ok(())
        },
    );
    // The line-by-line decoder agrees with the batch reader on what succeeds.
    if let Ok(text) = std::str::from_utf8(body) {
        let mut decoder = CorrelationRecordDecoder::new();
        let mut lines = 0usize;
        let mut failed = false;
        for line in text.split(['\n', '\r']) {
            match decoder.decode(line) {
                Ok(Some(_)) => lines += 1,
                Ok(None) => {}
                Err(_) => {
                    failed = true;
                    break;
                }
            }
        }
        assert_eq!(whole.is_ok(), !failed);
        if !failed {
            assert_eq!(lines, count);
        }
    }
    let _ = tally_evidence::read::parse_inference_record(&String::from_utf8_lossy(body));
});
