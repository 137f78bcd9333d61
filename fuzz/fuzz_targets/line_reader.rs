//! Arbitrary bytes through the whole JSONL reader: line splitting, batching (a batch size taken
//! from the first byte), parallel decode on rayon's global pool, v4 resolution, and the
//! line-by-line decoder on each line. It must never panic; every failure must be an `Err`.
//! (A pool per input would make LeakSanitizer report the pool's exiting threads; thread-count
//! independence is a property test of the crate instead.)
#![no_main]

use libfuzzer_sys::fuzz_target;
use tally_artifact::read::{CorrelationRecordDecoder, ReadOptions, for_each_record_in_bytes};

fuzz_target!(|data: &[u8]| {
    let (batch_bytes, body) = match data {
        [a, rest @ ..] => (usize::from(*a) * 7 + 1, rest),
        _ => (64, data),
    };
    let options = ReadOptions {
        batch_bytes,
        threads: None,
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
    let _ = tally_artifact::read::parse_inference_record(&String::from_utf8_lossy(body));
});
