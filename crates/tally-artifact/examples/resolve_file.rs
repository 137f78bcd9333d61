//! Measures the resolver alone on a real artifact (measurement aid, not a test): loads every
//! record of FILE into memory first, then times `Resolver::push` of all of them, `finish` and
//! `account_gpu_time`, in thread CPU time (steadier than wall time on a shared machine).
//!
//! `cargo run --release -p tally-artifact --example resolve_file -- FILE [ROUNDS]`
//!
//! Each round reloads the file (outside the timed part); the minimum over rounds is printed too.
#![allow(clippy::print_stdout, missing_docs)]

use tally_artifact::read::{Input, load_inference_artifact};
use tally_evidence::{Origin, Resolver, account_gpu_time};

/// CPU time of this thread in seconds, from `/proc/thread-self/schedstat`.
fn cpu_s() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0.0, |ns| ns as f64 / 1e9)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).expect("usage: resolve_file FILE [ROUNDS]");
    let rounds: usize = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(3);
    let name: tally_evidence::Text = Input::from_arg(path).name();
    let mut best = [f64::MAX; 3];
    for round in 0..rounds {
        let records = load_inference_artifact(path).expect("the artifact reads");
        let n = records.len();
        let t0 = cpu_s();
        let mut resolver = Resolver::new();
        for (i, record) in records.into_iter().enumerate() {
            resolver
                .push(record, Origin::at(name.clone(), i as u64 + 1))
                .expect("the artifact resolves");
        }
        let t1 = cpu_s();
        let graph = resolver.finish();
        let t2 = cpu_s();
        let accounting = account_gpu_time(&graph).expect("the graph accounts");
        let t3 = cpu_s();
        std::hint::black_box(&accounting);
        let times = [t1 - t0, t2 - t1, t3 - t2];
        for (b, t) in best.iter_mut().zip(times) {
            *b = b.min(t);
        }
        println!(
            "round {round}: {n} records: push {:.3} s ({:.0} ns/record), finish {:.3} s, \
             account {:.3} s",
            times[0],
            times[0] * 1e9 / n as f64,
            times[1],
            times[2]
        );
        std::mem::forget(graph);
    }
    println!(
        "best: push {:.3} s, finish {:.3} s, account {:.3} s",
        best[0], best[1], best[2]
    );
}
