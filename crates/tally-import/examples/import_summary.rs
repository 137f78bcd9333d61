//! Imports trace files and prints the summary (for measuring; the `tally` binary is the real
//! interface). Usage: `cargo run -p tally-import --example import_summary -- kineto|nsys FILE...`
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::PathBuf;
use std::time::Instant;

use tally_import::{ImportOptions, import_kineto, import_nsys};

fn main() {
    let mut args = std::env::args().skip(1);
    let format = args.next().expect("kineto or nsys");
    let paths: Vec<PathBuf> = args.map(PathBuf::from).collect();
    let started = Instant::now();
    let mut records = 0u64;
    let mut sink = |_r| {
        records += 1;
        Ok(())
    };
    let options = ImportOptions::default();
    let summary = match format.as_str() {
        "kineto" => import_kineto(&paths, &options, &mut sink, &mut |_| {}),
        "nsys" => import_nsys(&paths, &options, &mut sink, &mut |_| {}),
        other => panic!("unknown format {other}"),
    };
    match summary {
        Ok(summary) => {
            for input in &summary.inputs {
                for d in &input.devices {
                    println!(
                        "{}\tdevice {:?}\tbusy {}\tsummed {}\tcount {}\tkernels {} / {}\tuuid {:?} ({})",
                        input.path.display(),
                        d.device_index,
                        d.busy_ns,
                        d.summed_ns,
                        d.count,
                        d.kernel_busy_ns,
                        d.kernel_count,
                        d.device_uuid,
                        d.uuid_source.as_str()
                    );
                }
                println!(
                    "\tlinked {} unresolved {:?} iterations {} launches {}",
                    input.linked_gpu_events,
                    input.unresolved_gpu_events,
                    input.iterations,
                    input.launch_calls
                );
            }
            println!("records {records} in {:.2?}", started.elapsed());
        }
        Err(e) => eprintln!("error: {e}"),
    }
}
