//! Measures resolution and accounting on ~1M synthetic in-memory records.
//!
//! `cargo run --release -p tally-evidence --example resolve_bench [ITERATIONS] [DUP_PERCENT]
//! [fresh|shared] [REPEAT]`
//!
//! The records mimic a continuous-batching server (the shape of the conformance traces): one
//! request record per request, and per engine iteration one iteration record, 8 memberships and
//! 10 GPU kernels on 4 streams of one of 4 devices, some with busy sub-intervals. Contexts are
//! shared per producer/device, as a v4 reader delivers them. With `fresh` (the default) every
//! string is a fresh allocation, as a reader without string interning makes it; with `shared`
//! the low-cardinality ones (producer ids, kinds, roles, attachment ids) are shared, as an
//! interning reader makes them, and only ids are fresh. Records are generated in chunks
//! outside the timed region; only `Resolver::push`, `finish` and `account_gpu_time` are timed.
//! Memory is the growth of the process's resident set (so allocator overhead is included). CPU
//! time (from `/proc/thread-self/schedstat`) is printed beside wall time because wall time is
//! meaningless on a shared machine; `REPEAT` > 1 reruns in the same process, where later rounds
//! reuse freed memory and so show the cost without first-touch page faults. With the environment
//! variable `HINT` set, the resolver is created with [`Resolver::with_capacity`].
#![allow(clippy::print_stdout, missing_docs)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use tally_evidence::{
    ActivityDomain, ActivityReferenceEvent, AttributionStatus, BusyIntervals, ClockKind,
    CollectionMode, CorrelationContext, CorrelationEvent, EntityRef, EventBody, InferenceRecord,
    IterationEvent, MembershipEvent, Metadata, Origin, Provenance, RequestEvent, Resolver, Text,
    account_gpu_time,
};

const MEMBERS: u64 = 8;
const KERNELS: u64 = 10;

fn context(producer: &str, device: Option<&str>) -> Arc<CorrelationContext> {
    Arc::new(CorrelationContext {
        run_id: "run-1".into(),
        session_id: "session-1".into(),
        producer_id: producer.into(),
        source: producer.into(),
        clock_domain: "host-0/mono".into(),
        clock_kind: ClockKind::Monotonic,
        collection_mode: CollectionMode::Passive,
        provenance: Provenance::Observed,
        source_version: Some("0.4.3".into()),
        engine: Some("vllm".into()),
        engine_version: None,
        backend: None,
        backend_version: None,
        host: Some("host-0".into()),
        device_uuid: device.map(Into::into),
        pid: Some(1234),
        rank: Some(0),
        local_rank: Some(0),
        world_size: Some(4),
    })
}

fn eref(producer: &Text, id: String) -> EntityRef {
    EntityRef {
        producer_id: producer.clone(),
        id: id.into(),
    }
}

fn event(
    ctx: &Arc<CorrelationContext>,
    id: String,
    metadata: Metadata,
    body: EventBody,
) -> InferenceRecord {
    InferenceRecord::Event(CorrelationEvent::new(
        ctx.clone(),
        id.into(),
        metadata,
        body,
    ))
}

struct Generator {
    engine: Arc<CorrelationContext>,
    client: Arc<CorrelationContext>,
    traces: Vec<Arc<CorrelationContext>>,
    shared: bool,
    common: std::collections::HashMap<&'static str, Text>,
}

impl Generator {
    /// A low-cardinality string: shared or fresh, depending on the mode.
    fn text(&self, s: &'static str) -> Text {
        if self.shared {
            self.common[s].clone()
        } else {
            Text::from(s)
        }
    }

    fn new(shared: bool) -> Self {
        let common = [
            "engine",
            "client",
            "kineto",
            "gpu_kernel",
            "prefill",
            "decode",
            "ok",
            "kineto:trace.json:0123456789ab",
        ]
        .into_iter()
        .map(|s| (s, Text::from(s)))
        .collect();
        Self {
            shared,
            common,
            engine: context("engine", None),
            client: context("client", None),
            traces: (0..4)
                .map(|d| context("kineto", Some(&format!("GPU-{d:08x}-0000"))))
                .collect(),
        }
    }

    /// The records of iteration `i` (plus the request records that start there).
    fn iteration(&self, i: u64, out: &mut Vec<InferenceRecord>) {
        let start = (i * 1_000_000) as i64;
        let iteration_ref = || eref(&self.text("engine"), format!("iter-{i}"));
        out.push(event(
            &self.engine,
            format!("it-{i}"),
            Metadata::empty(),
            EventBody::Iteration(IterationEvent {
                iteration_ref: iteration_ref(),
                batch_ref: None,
                start_ns: Some(start),
                end_ns: Some(start + 900_000),
            }),
        ));
        out.push(event(
            &self.client,
            format!("rq-{i}"),
            Metadata::empty(),
            EventBody::Request(RequestEvent {
                request_ref: eref(&self.text("client"), format!("req-{i}")),
                attempt_ref: None,
                backend_request_ref: None,
                start_ns: Some(start),
                end_ns: Some(start + 50_000_000),
                status: Some(self.text("ok")),
                input_tokens: Some(100),
                output_tokens: Some(50),
                kv_bytes: None,
            }),
        ));
        for m in 0..MEMBERS {
            let request = i.saturating_sub(m * 5);
            out.push(event(
                &self.engine,
                format!("mb-{i}-{m}"),
                Metadata::empty(),
                EventBody::Membership(MembershipEvent {
                    request_ref: eref(&self.text("client"), format!("req-{request}")),
                    iteration_ref: iteration_ref(),
                    role: self.text(if m == 0 { "prefill" } else { "decode" }),
                    attempt_ref: None,
                    input_tokens: Some(16),
                    output_tokens: Some(1),
                    kv_bytes: None,
                }),
            ));
        }
        let trace = &self.traces[(i % 4) as usize];
        for k in 0..KERNELS {
            let s = start + (k as i64) * 80_000 + ((i * 7 + k * 13) % 17) as i64 * 1_000;
            let e = s + 60_000 + ((i + k) % 5) as i64 * 10_000;
            let (intervals, metadata) = if k % 5 == 4 {
                (
                    BusyIntervals::List(vec![(0, 20_000), (30_000, 25_000)]),
                    Metadata::from_json_text(r#"{"intervals":[[0,20000],[30000,25000]]}"#),
                )
            } else {
                (BusyIntervals::Absent, Metadata::empty())
            };
            out.push(event(
                trace,
                format!("kineto:trace-{}/{}", i % 4, i * KERNELS + k),
                metadata,
                EventBody::Activity(ActivityReferenceEvent {
                    activity_ref: eref(
                        &self.text("kineto"),
                        format!("trace-{}/{}", i % 4, i * KERNELS + k),
                    ),
                    activity_kind: self.text("gpu_kernel"),
                    attribution_status: AttributionStatus::Linked,
                    activity_domain: ActivityDomain::Gpu,
                    iteration_ref: Some(iteration_ref()),
                    correlation_scope: None,
                    trace_attachment_id: Some(self.text("kineto:trace.json:0123456789ab")),
                    runtime_correlation_id: None,
                    cuda_correlation_id: Some(i * KERNELS + k),
                    stream_id: Some(7 + k % 4),
                    graph_id: None,
                    start_ns: Some(s),
                    end_ns: Some(e),
                    intervals,
                }),
            ));
        }
    }
}

/// CPU time of this (single) thread in seconds, from `/proc/thread-self/schedstat`: on a
/// shared machine this is steadier than wall time.
fn cpu_s() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0.0, |ns| ns as f64 / 1e9)
}

fn rss_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let iterations: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(50_000);
    let dup_percent: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(0);
    let shared = args.next().is_some_and(|a| a == "shared");
    let repeat: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1);
    println!(
        "sizes: CorrelationEvent {} B, InferenceRecord {} B, ResolvedEvent<Activity> {} B, <Membership> {} B",
        std::mem::size_of::<CorrelationEvent>(),
        std::mem::size_of::<InferenceRecord>(),
        std::mem::size_of::<tally_evidence::ResolvedEvent<ActivityReferenceEvent>>(),
        std::mem::size_of::<tally_evidence::ResolvedEvent<MembershipEvent>>(),
    );
    let generator = Generator::new(shared);
    for round in 0..repeat {
        if repeat > 1 {
            println!("round {round}");
        }
        run(&generator, iterations, dup_percent, shared);
    }
}

/// One measured resolution and accounting of the synthetic records.
fn run(generator: &Generator, iterations: u64, dup_percent: u64, shared: bool) {
    let rss_before = rss_kib("VmRSS:");
    let mut resolver = if std::env::var_os("HINT").is_some() {
        Resolver::with_capacity((iterations * (2 + MEMBERS + KERNELS)) as usize)
    } else {
        Resolver::new()
    };
    let mut chunk = Vec::new();
    let mut pushed = 0u64;
    let mut push_time = Duration::ZERO;
    let mut push_cpu = 0.0;
    let origin = Origin::default();
    const CHUNK: u64 = 2_000;
    for first in (0..iterations).step_by(CHUNK as usize) {
        for i in first..(first + CHUNK).min(iterations) {
            generator.iteration(i, &mut chunk);
        }
        if dup_percent > 0 {
            let n = chunk.len();
            for j in 0..n {
                if (j as u64 * 7919) % 100 < dup_percent {
                    chunk.push(chunk[j].clone());
                }
            }
            // Deliver the chunk in a scrambled order.
            let len = chunk.len();
            for j in (1..len).rev() {
                chunk.swap(j, (j * 2_654_435_761) % (j + 1));
            }
        }
        pushed += chunk.len() as u64;
        let (t, c) = (Instant::now(), cpu_s());
        for record in chunk.drain(..) {
            resolver
                .push(record, origin.clone())
                .expect("synthetic records resolve");
        }
        push_time += t.elapsed();
        push_cpu += cpu_s() - c;
    }
    let distinct = resolver.distinct_events() as u64;
    let (t, c) = (Instant::now(), cpu_s());
    let graph = resolver.finish();
    let finish_time = t.elapsed();
    let finish_cpu = cpu_s() - c;
    drop(chunk);
    let rss_graph = rss_kib("VmRSS:");
    let (t, c) = (Instant::now(), cpu_s());
    let accounting = account_gpu_time(&graph).expect("accounts");
    let account_time = t.elapsed();
    let account_cpu = cpu_s() - c;
    let counts = graph.counts();
    let resolve_s = (push_time + finish_time).as_secs_f64();
    println!(
        "strings {}, records pushed {pushed}, distinct {distinct}, counts {counts:?}",
        if shared { "shared" } else { "fresh" }
    );
    println!(
        "resolve: push {:.3} s + finish {:.3} s = {:.3} s ({:.2} M records/s)",
        push_time.as_secs_f64(),
        finish_time.as_secs_f64(),
        resolve_s,
        pushed as f64 / resolve_s / 1e6
    );
    println!(
        "cpu time: push {push_cpu:.3} s, finish {finish_cpu:.3} s, account {account_cpu:.3} s"
    );
    println!(
        "account: {:.3} s ({:.2} M records/s); devices {}, iterations {}",
        account_time.as_secs_f64(),
        pushed as f64 / account_time.as_secs_f64() / 1e6,
        accounting.device_totals.len(),
        accounting.iterations.len()
    );
    let graph_bytes = (rss_graph.saturating_sub(rss_before)) * 1024;
    println!(
        "graph resident growth {:.1} MiB = {} B per distinct record; peak RSS {:.1} MiB",
        graph_bytes as f64 / 1048576.0,
        graph_bytes / distinct.max(1),
        rss_kib("VmHWM:") as f64 / 1024.0
    );
    let total = accounting
        .device_totals
        .values()
        .map(|t| t.busy_ns)
        .sum::<u64>();
    println!("check: total busy {total} ns");
}
