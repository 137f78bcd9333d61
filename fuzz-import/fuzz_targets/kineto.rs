//! Fuzzes the Kineto importer end to end: arbitrary bytes as a trace file (plain, or gzip when
//! they start with the magic bytes). Any input must give records or an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tally_import::{Detail, ImportOptions, TraceFormat, import_to_vec};

fuzz_target!(|data: &[u8]| {
    let path = std::env::temp_dir().join(format!("tally-fuzz-kineto-{}.json", std::process::id()));
    std::fs::write(&path, data).expect("temp file");
    for detail in [Detail::Kernel, Detail::Launch] {
        let options = ImportOptions {
            detail,
            emit_runtime: true,
            ..ImportOptions::default()
        };
        if let Ok((records, _)) = import_to_vec(TraceFormat::Kineto, std::slice::from_ref(&path), &options) {
            let mut out = Vec::new();
            tally_import::export_perfetto(&records, &mut out).expect("export to memory");
        }
    }
});
