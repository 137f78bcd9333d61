//! Reader throughput (measurement aid, not a test): builds a large artifact by repeating a
//! conformance trace (event ids made unique per copy), then times `for_each_record` on it with 1
//! and 2 parse threads, plus a gzip copy. Run in release:
//!
//! ```sh
//! cargo run --release -p tally-artifact --example reader_throughput -- \
//!     testdata/conformance/evidence/20-generated-v2.jsonl 1000 /tmp/big-v2.jsonl
//! ```
//!
//! Arguments: the trace to repeat, the target size in MB, where to write the big file (kept
//! between runs: it is rebuilt only when missing).
#![allow(clippy::print_stdout)]

use std::io::{BufWriter, Write};
use std::num::NonZeroUsize;
use std::path::Path;
use std::time::Instant;

use tally_artifact::read::{CorrelationRecordDecoder, Input, ReadOptions, for_each_record_with};

fn build(seed: &Path, target_mb: usize, out: &Path) {
    if out.exists() {
        return;
    }
    let text = std::fs::read_to_string(seed).expect("a readable trace");
    let mut w = BufWriter::new(std::fs::File::create(out).expect("writable output"));
    let mut written = 0usize;
    let mut copy = 0usize;
    while written < target_mb << 20 {
        for line in text.lines() {
            let line = line.replacen("\"event_id\": \"", &format!("\"event_id\": \"c{copy}-"), 1);
            w.write_all(line.as_bytes()).unwrap();
            w.write_all(b"\n").unwrap();
            written += line.len() + 1;
        }
        copy += 1;
    }
    w.flush().unwrap();
}

/// CPU seconds (user + system) this process has used so far, from `/proc/self/stat`.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks: f64 = fields
        .get(11..13)
        .map(|f| f.iter().filter_map(|v| v.parse::<f64>().ok()).sum())
        .unwrap_or(0.0);
    ticks / 100.0
}

fn time(input: &Input, threads: usize, bytes: u64) {
    let batch_bytes = std::env::var("BATCH_BYTES")
        .ok()
        .and_then(|b| b.parse().ok())
        .unwrap_or(ReadOptions::DEFAULT_BATCH_BYTES);
    let options = ReadOptions {
        threads: NonZeroUsize::new(threads),
        batch_bytes,
    };
    let start = Instant::now();
    let cpu = cpu_seconds();
    let mut records = 0u64;
    for_each_record_with(
        input,
        &options,
        &mut CorrelationRecordDecoder::new(),
        |_, _| {
            records += 1;
            Ok(())
        },
    )
    .expect("the artifact reads");
    let s = start.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu;
    println!(
        "{input} threads={threads}: {records} records in {s:.2} s wall = {:.0} MB/s, {:.0} k \
         records/s; {cpu:.2} CPU s = {:.0} MB per CPU second",
        bytes as f64 / 1e6 / s,
        records as f64 / 1e3 / s,
        bytes as f64 / 1e6 / cpu,
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (seed, mb, out) = (
        Path::new(&args[1]),
        args[2].parse().unwrap(),
        Path::new(&args[3]),
    );
    build(seed, mb, out);
    let bytes = std::fs::metadata(out).unwrap().len();
    let input = Input::Path(out.to_path_buf());
    let runs: Vec<usize> = std::env::var("THREADS")
        .ok()
        .map(|t| t.split(',').filter_map(|n| n.parse().ok()).collect())
        .unwrap_or_else(|| vec![1, 2, 1, 2]);
    for threads in runs {
        time(&input, threads, bytes);
    }
    if args.get(4).is_some_and(|a| a == "gz") {
        let gz_path = out.with_extension("jsonl.gz");
        if !gz_path.exists() {
            let mut gz = flate2::write::GzEncoder::new(
                std::fs::File::create(&gz_path).unwrap(),
                flate2::Compression::fast(),
            );
            std::io::copy(&mut std::fs::File::open(out).unwrap(), &mut gz).unwrap();
            gz.finish().unwrap();
        }
        time(&Input::Path(gz_path), 2, bytes);
    }
}
