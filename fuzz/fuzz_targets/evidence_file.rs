//! Arbitrary bytes as the evidence file an evaluate command hands over (`TALLY_EVIDENCE_FILE`),
//! taken as the binary's accountant takes it: a file opened by the hand-over rules, read from
//! that open file (plain, or gzip when the bytes start with its magic; `read::resolve_file`),
//! resolved, and its GPU time accounted. Any input must give an accounting or an error, never a
//! panic. (The reader's line splitting and batching are `line_reader`'s.)
#![no_main]

use std::io::Write;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use tally_artifact::read::resolve_file;
use tally_evidence::{Resolver, account_gpu_time};
use tally_runner::handover::open_regular;

/// One directory per fuzzing process, its file rewritten for each input (cheaper than a fresh
/// directory each time).
static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();

fn make_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

fuzz_target!(|data: &[u8]| {
    let path = DIR.get_or_init(make_dir).path().join("evidence.jsonl");
    std::fs::File::create(&path)
        .and_then(|mut f| f.write_all(data))
        .expect("the evidence file is written");
    let (file, _) = open_regular(&path)
        .expect("a regular file is accepted")
        .expect("the file is there");
    let mut resolver = Resolver::new();
    if resolve_file(file, "fuzz", &mut resolver).is_ok() {
        let graph = resolver.finish();
        if let Ok(accounting) = account_gpu_time(&graph) {
            for totals in accounting.device_totals.values() {
                // The union of intervals never exceeds their sum.
                assert!(totals.busy_ns <= totals.summed_activity_ns);
            }
        }
    }
});
