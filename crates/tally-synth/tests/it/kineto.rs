//! The Kineto writer, read back by tally's own importer and accounted by `tally-evidence`: every
//! trace gives exactly the GPU time the neutral model says, per device and per `ProfilerStep`,
//! computed here from the happenings with a union of our own; the output is deterministic,
//! well-formed trace-event JSON, and sized by a byte target.

use std::collections::BTreeMap;
use std::path::PathBuf;

use tally_evidence::{account_gpu_time, resolve_inference_events};
use tally_import::{ImportOptions, TraceFormat, import_to_vec};
use tally_synth::happening::{GpuOp, Happening};
use tally_synth::{KinetoOptions, KinetoSummary, Scenario, write_kineto, write_kineto_to};

/// Busy (union), summed and count of half-open intervals.
fn figures(intervals: &[(i64, i64)]) -> (u64, u64, u64) {
    let mut sorted = intervals.to_vec();
    sorted.sort_unstable();
    let summed: i64 = sorted.iter().map(|(s, e)| e - s).sum();
    let mut busy = 0;
    let mut current: Option<(i64, i64)> = None;
    for (s, e) in sorted {
        current = match current {
            Some((cs, ce)) if s <= ce => Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                busy += ce - cs;
                Some((s, e))
            }
            None => Some((s, e)),
        };
    }
    if let Some((cs, ce)) = current {
        busy += ce - cs;
    }
    (busy as u64, summed as u64, intervals.len() as u64)
}

/// The GPU intervals of one operation as the profiler sees them (one per graph kernel).
fn intervals_of(op: &GpuOp) -> Vec<(i64, i64)> {
    match &op.graph {
        Some(graph) => graph.kernels.iter().map(|k| (k.start_t, k.end_t)).collect(),
        None => vec![(op.start_t, op.end_t)],
    }
}

/// One `ProfilerStep`'s linked GPU intervals, first start and last end.
type StepWork = (Vec<(i64, i64)>, i64, i64);

/// What the model says one trace must account.
#[derive(Debug, Default)]
struct Expected {
    device: Vec<(i64, i64)>,
    /// Per `ProfilerStep` number: the linked GPU intervals and the step's elapsed time.
    steps: BTreeMap<u64, StepWork>,
    lost: u64,
    outside: u64,
}

fn expected(scenario: &Scenario, host: u32, gpu: u32, last: u64, per_step: u64) -> Expected {
    let mut out = Expected::default();
    for happening in scenario.happenings() {
        let Happening::Step(step) = happening else {
            continue;
        };
        if step.host != host || step.index > last {
            continue;
        }
        let number = (step.index - 1) / per_step + 1;
        let entry = out
            .steps
            .entry(number)
            .or_insert((Vec::new(), step.start_t, step.end_t));
        entry.2 = step.end_t;
        for op in step.gpu_ops.iter().filter(|op| op.gpu == gpu) {
            let intervals = intervals_of(op);
            let n = intervals.len() as u64;
            out.device.extend(&intervals);
            match (&op.launch, op.outside_iteration) {
                (None, _) => out.lost += n,
                (Some(_), true) => out.outside += n,
                (Some(_), false) => entry.0.extend(intervals),
            }
        }
    }
    out
}

fn write_to_dir(
    scenario: &Scenario,
    options: &KinetoOptions,
) -> (tempfile::TempDir, KinetoSummary) {
    let dir = tempfile::tempdir().unwrap();
    let summary = write_kineto(scenario, options, &dir.path().join("traces")).unwrap();
    (dir, summary)
}

fn check_trace(
    scenario: &Scenario,
    options: &KinetoOptions,
    path: PathBuf,
    host: u32,
    gpu: u32,
    last: u64,
) {
    let per_step = u64::from(options.iterations_per_step);
    let want = expected(scenario, host, gpu, last, per_step);
    let (records, summary) = import_to_vec(
        TraceFormat::Kineto,
        std::slice::from_ref(&path),
        &ImportOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let input = &summary.inputs[0];
    let label = format!("host {host} gpu {gpu}");
    assert_eq!(
        input.host.as_deref(),
        Some(format!("worker-{host}").as_str()),
        "{label}"
    );
    assert_eq!(input.gpu_events, want.device.len() as u64, "{label}");
    assert_eq!(input.iterations, want.steps.len() as u64, "{label}");
    let unresolved = |reason: &str| {
        input
            .unresolved_gpu_events
            .get(reason)
            .copied()
            .unwrap_or(0)
    };
    assert_eq!(unresolved("no_launch_record"), want.lost, "{label}");
    assert_eq!(
        unresolved("launch_outside_iteration_range"),
        want.outside,
        "{label}"
    );
    assert!(
        want.lost > 0 && want.outside > 0,
        "{label}: the model plants both kinds"
    );

    let graph = resolve_inference_events(records).unwrap();
    let accounting = account_gpu_time(&graph).unwrap();
    assert_eq!(accounting.device_totals.len(), 1, "{label}");
    let total = accounting.device_totals.values().next().unwrap();
    assert_eq!(
        (
            total.busy_ns,
            total.summed_activity_ns,
            total.activity_count
        ),
        figures(&want.device),
        "{label}: device"
    );
    let mut got_steps = BTreeMap::new();
    for (iteration, timing) in &accounting.iterations {
        let number: u64 = iteration
            .id
            .rsplit_once("ProfilerStep#")
            .unwrap()
            .1
            .parse()
            .unwrap();
        let gpu_time = timing
            .gpu
            .values()
            .map(|t| (t.busy_ns, t.summed_activity_ns, t.activity_count))
            .next()
            .unwrap_or((0, 0, 0));
        got_steps.insert(number, (gpu_time, timing.elapsed_ns));
    }
    let want_steps: BTreeMap<u64, _> = want
        .steps
        .iter()
        .map(|(n, (intervals, start, end))| (*n, (figures(intervals), Some(end - start))))
        .collect();
    assert_eq!(got_steps, want_steps, "{label}: per step");
}

#[test]
fn every_trace_accounts_exactly_what_the_model_says() {
    let scenario = Scenario::new(31, 400);
    let options = KinetoOptions {
        iterations_per_step: 3,
        host_ops_per_iteration: 4,
        ..KinetoOptions::default()
    };
    let (dir, summary) = write_to_dir(&scenario, &options);
    // Four hosts: 1 + 2 + 1 + 2 GPUs.
    assert_eq!(summary.traces.len(), 6);
    for trace in &summary.traces {
        let path = dir.path().join("traces").join(&trace.trace.file_name);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), trace.bytes);
        check_trace(
            &scenario,
            &options,
            path,
            trace.trace.host,
            trace.trace.gpu,
            trace.last_iteration,
        );
    }
}

#[test]
fn base_time_and_one_step_per_iteration_account_the_same() {
    let scenario = Scenario {
        hosts: 2,
        ..Scenario::new(32, 200)
    };
    let options = KinetoOptions {
        base_time: true,
        host: Some(1),
        gpu: Some(1),
        ..KinetoOptions::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("one.json");
    let summary = write_kineto(&scenario, &options, &path).unwrap();
    assert_eq!(summary.traces.len(), 1);
    let trace = &summary.traces[0];
    assert_eq!(trace.profiler_steps, trace.iterations);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("\"baseTimeNanoseconds\": "));
    check_trace(&scenario, &options, path, 1, 1, trace.last_iteration);
}

#[test]
fn traces_are_deterministic_well_formed_kineto() {
    let scenario = Scenario {
        hosts: 2,
        ..Scenario::new(33, 60)
    };
    let options = KinetoOptions::default();
    let write = || {
        write_kineto_to(
            &scenario,
            &options,
            vec![Vec::new(), Vec::new(), Vec::new()],
        )
        .unwrap()
    };
    let (a, summary) = write();
    let (b, _) = write();
    assert_eq!(a, b);
    let (c, _) = write_kineto_to(
        &Scenario {
            seed: 34,
            ..scenario.clone()
        },
        &options,
        vec![Vec::new(), Vec::new(), Vec::new()],
    )
    .unwrap();
    assert_ne!(a, c);

    let doc: serde_json::Value = serde_json::from_slice(&a[1]).unwrap();
    assert_eq!(doc["host_name"], "worker-1");
    assert_eq!(doc["distributedInfo"]["rank"], 0);
    assert_eq!(doc["distributedInfo"]["world_size"], 2);
    assert_eq!(doc["deviceProperties"].as_array().unwrap().len(), 2);
    let events = doc["traceEvents"].as_array().unwrap();
    assert_eq!(events.len() as u64, summary.traces[1].entries);
    let count = |cat: &str| events.iter().filter(|e| e["cat"] == cat).count() as u64;
    assert_eq!(count("cuda_runtime"), summary.traces[1].launch_calls);
    assert_eq!(
        count("kernel") + count("gpu_memcpy") + count("gpu_memset"),
        summary.traces[1].gpu_events
    );
    assert!(count("gpu_memcpy") > 0 && count("cpu_op") > 0);
    let text = std::str::from_utf8(&a[1]).unwrap();
    // Every `ts` and `dur` has exactly three decimals.
    for line in text
        .lines()
        .filter(|l| l.trim_start().starts_with("\"ts\": "))
    {
        for field in line.trim().trim_end_matches(',').split(", ") {
            let value = field.split_once(": ").unwrap().1.trim_end_matches(',');
            let (_, decimals) = value.split_once('.').unwrap_or_else(|| panic!("{line}"));
            assert_eq!(decimals.len(), 3, "{line}");
        }
    }
    let mut threads = std::collections::BTreeSet::new();
    for event in events.iter().filter(|e| e["cat"] == "cuda_runtime") {
        assert!(event["args"]["correlation"].as_u64().unwrap() > 0);
        threads.insert(event["tid"].as_u64().unwrap());
    }
    assert_eq!(threads.len(), 2, "launch calls come from two threads");
    let steps: Vec<&str> = events
        .iter()
        .filter(|e| e["cat"] == "user_annotation")
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(steps.first(), Some(&"ProfilerStep#1"));
    assert_eq!(steps.len() as u64, summary.traces[1].profiler_steps);
    let apis: std::collections::BTreeSet<&str> = events
        .iter()
        .filter(|e| e["cat"] == "cuda_runtime")
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert!(
        apis.contains("cudaGraphLaunch")
            && apis.contains("cudaLaunchKernel")
            && apis.contains("cudaMemcpyAsync")
    );
}

#[test]
fn a_byte_target_stops_just_past_it() {
    let scenario = Scenario {
        hosts: 1,
        ..Scenario::new(35, 1)
    };
    let target = 3_000_000;
    let options = KinetoOptions {
        target_bytes: Some(target),
        ..KinetoOptions::default()
    };
    let (sinks, summary) = write_kineto_to(&scenario, &options, vec![Vec::new()]).unwrap();
    let bytes = summary.bytes();
    assert_eq!(bytes, sinks[0].len() as u64);
    // One engine step (plus the footer) is a few tens of kB.
    assert!(bytes >= target && bytes < target + 100_000, "{bytes}");
    // A single request could never fill it: the run was unbounded.
    assert!(summary.traces[0].iterations > 100);
    let (again, _) = write_kineto_to(&scenario, &options, vec![Vec::new()]).unwrap();
    assert_eq!(sinks, again);
}

#[test]
fn selections_are_checked() {
    let scenario = Scenario::new(36, 10);
    let bad_host = KinetoOptions {
        host: Some(4),
        ..KinetoOptions::default()
    };
    let message = write_kineto_to(&scenario, &bad_host, Vec::<Vec<u8>>::new())
        .unwrap_err()
        .to_string();
    assert!(message.contains("host 4 does not exist"), "{message}");
    let bad_gpu = KinetoOptions {
        host: Some(0),
        gpu: Some(1),
        ..KinetoOptions::default()
    };
    let message = write_kineto_to(&scenario, &bad_gpu, vec![Vec::new()])
        .unwrap_err()
        .to_string();
    assert!(message.contains("no selected host has GPU 1"), "{message}");
    let zero = KinetoOptions {
        iterations_per_step: 0,
        ..KinetoOptions::default()
    };
    assert!(write_kineto_to(&scenario, &zero, vec![Vec::new()]).is_err());
}
