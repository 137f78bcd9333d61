//! Hand-made traces that pin the importer's rules on cases the corpus does not isolate.

use std::io::Write;
use std::path::PathBuf;

use tally_evidence::{
    ActivityDomain, AttributionStatus, BusyIntervals, EventBody, InferenceRecord,
};
use tally_import::{Detail, ImportOptions, TraceFormat, import_to_vec};

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::File::create(&path)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    path
}

/// GPU events before their launches, a launch on another thread, the base after the events.
const TRACE: &str = r#"{"traceEvents": [
 {"ph":"X","cat":"kernel","name":"k1","pid":0,"tid":7,"ts":20.0005,"dur":1.0005,"args":{"device":0,"stream":7,"correlation":11}},
 {"ph":"X","cat":"kernel","name":"g1","pid":0,"tid":7,"ts":30,"dur":2,"args":{"device":0,"stream":7,"correlation":12,"graph id":5}},
 {"ph":"X","cat":"kernel","name":"g2","pid":0,"tid":8,"ts":31,"dur":2,"args":{"device":0,"stream":8,"correlation":12,"graph id":5}},
 {"ph":"X","cat":"kernel","name":"g3","pid":0,"tid":7,"ts":40,"dur":1,"args":{"device":0,"stream":7,"correlation":12,"graph id":5}},
 {"ph":"X","cat":"gpu_memset","name":"s","pid":0,"tid":7,"ts":50,"dur":1,"args":{"device":0,"stream":7,"correlation":99}},
 {"ph":"X","cat":"gpu_memcpy","name":"c","pid":0,"tid":7,"ts":60,"dur":1,"args":{"device":0,"stream":7,"correlation":13}},
 {"ph":"X","cat":"gpu_user_annotation","name":"ProfilerStep#1","pid":0,"tid":7,"ts":0,"dur":100},
 {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":42,"tid":43,"ts":15,"dur":1,"args":{"correlation":11}},
 {"ph":"X","cat":"cuda_runtime","name":"cudaGraphLaunch","pid":42,"tid":42,"ts":25,"dur":1,"args":{"correlation":12}},
 {"ph":"X","cat":"cuda_runtime","name":"cudaMemcpyAsync","pid":42,"tid":42,"ts":55,"dur":1,"args":{"correlation":13}},
 {"ph":"f","id":11,"pid":0,"tid":7,"ts":20,"cat":"ac2g","name":"ac2g","bp":"e"},
 "not an object",
 {"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":42,"tid":42,"ts":10,"dur":40},
 {"ph":"X","cat":"user_annotation","name":"ProfilerStep#2","pid":42,"tid":42,"ts":50,"dur":5}
], "baseTimeNanoseconds": 1000000000000}"#;

fn activities(
    records: &[InferenceRecord],
) -> Vec<(String, AttributionStatus, Option<String>, i64, i64)> {
    records
        .iter()
        .filter_map(|r| match r {
            InferenceRecord::Event(e) => match e.body() {
                EventBody::Activity(a) if a.activity_domain == ActivityDomain::Gpu => Some((
                    e.metadata().to_map()["first_name"]
                        .as_str()
                        .unwrap()
                        .to_owned(),
                    a.attribution_status,
                    a.iteration_ref
                        .as_ref()
                        .map(|i| i.id.rsplit('/').next().unwrap().to_owned()),
                    a.start_ns.unwrap(),
                    a.end_ns.unwrap(),
                )),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

#[test]
fn kernel_detail_links_by_launch_start_and_keeps_exact_times() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, "t.json", TRACE);
    let (records, summary) =
        import_to_vec(TraceFormat::Kineto, &[path], &ImportOptions::default()).unwrap();
    let base = 1_000_000_000_000;
    use AttributionStatus::*;
    let step1 = Some("ProfilerStep#1".to_owned());
    assert_eq!(
        activities(&records),
        [
            // 20.0005 µs = 20 000.5 ns → 20 000 (half to even); end 21.001 µs exactly.
            (
                "k1".to_owned(),
                Linked,
                step1.clone(),
                base + 20_000,
                base + 21_001
            ),
            (
                "g1".to_owned(),
                Linked,
                step1.clone(),
                base + 30_000,
                base + 32_000
            ),
            (
                "g2".to_owned(),
                Linked,
                step1.clone(),
                base + 31_000,
                base + 33_000
            ),
            (
                "g3".to_owned(),
                Linked,
                step1.clone(),
                base + 40_000,
                base + 41_000
            ),
            (
                "s".to_owned(),
                Unresolved,
                None,
                base + 50_000,
                base + 51_000
            ),
            // Launched at 55 µs: ProfilerStep#2 is [50, 55), so the launch is outside.
            (
                "c".to_owned(),
                Unresolved,
                None,
                base + 60_000,
                base + 61_000
            ),
        ]
    );
    let input = &summary.inputs[0];
    assert_eq!(input.unresolved_gpu_events["no_launch_record"], 1);
    assert_eq!(
        input.unresolved_gpu_events["launch_outside_iteration_range"],
        1
    );
    assert_eq!(input.graph_gpu_events, 3);
    assert_eq!(
        input.iterations, 2,
        "the GPU-side ProfilerStep annotation is not an iteration"
    );
    // Busy: [20000,21001) ∪ [30000,33000) ∪ [40000,41000) ∪ [50000,51000) ∪ [60000,61000).
    assert_eq!(input.devices[0].busy_ns, 1001 + 3000 + 1000 + 1000 + 1000);
    assert_eq!(
        input.devices[0].summed_ns,
        1001 + 2000 + 2000 + 1000 + 1000 + 1000
    );
}

#[test]
fn launch_detail_groups_a_graph_launch_with_its_busy_intervals() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, "t.json", TRACE);
    let options = ImportOptions {
        detail: Detail::Launch,
        emit_runtime: true,
        ..ImportOptions::default()
    };
    let (records, summary) = import_to_vec(TraceFormat::Kineto, &[path], &options).unwrap();
    assert_eq!(summary.inputs[0].activity_records, 4);
    assert_eq!(summary.inputs[0].runtime_records, 3);
    let graph = records
        .iter()
        .find_map(|r| match r {
            InferenceRecord::Event(e) => match e.body() {
                EventBody::Activity(a)
                    if a.cuda_correlation_id == Some(12)
                        && a.activity_domain == ActivityDomain::Gpu =>
                {
                    Some((a.clone(), e.metadata().to_map()))
                }
                _ => None,
            },
            _ => None,
        })
        .unwrap();
    let (activity, meta) = graph;
    assert_eq!(
        activity.intervals,
        BusyIntervals::List(vec![(0, 3000), (10_000, 1000)])
    );
    assert_eq!(activity.graph_id, Some(5));
    assert_eq!(activity.stream_id, None, "two streams");
    assert_eq!(meta["streams"], serde_json::json!([7, 8]));
    assert_eq!(meta["busy_ns"], 4000);
    assert_eq!(meta["event_count"], 3);
    assert_eq!(meta["launch_api"], "cudaGraphLaunch");
}

#[test]
fn a_trace_without_events_of_interest_imports_empty() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, "e.json", r#"{"traceEvents": []}"#);
    let (records, summary) =
        import_to_vec(TraceFormat::Kineto, &[path], &ImportOptions::default()).unwrap();
    assert_eq!(records.len(), 1, "only the artifact record");
    assert_eq!(summary.inputs[0].gpu_events, 0);
}
