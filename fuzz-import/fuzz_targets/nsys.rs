//! Fuzzes the Nsight Systems importer: arbitrary bytes as an `.sqlite` export. Most inputs are
//! not databases (SQLite rejects them); the seed corpus holds small valid exports so mutations
//! reach the schema probing and row reading. Never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tally_import::{ImportOptions, TraceFormat, import_to_vec};

fuzz_target!(|data: &[u8]| {
    let path = std::env::temp_dir().join(format!("tally-fuzz-nsys-{}.sqlite", std::process::id()));
    std::fs::write(&path, data).expect("temp file");
    let options = ImportOptions {
        emit_runtime: true,
        ..ImportOptions::default()
    };
    let _ = import_to_vec(TraceFormat::Nsys, std::slice::from_ref(&path), &options);
});
