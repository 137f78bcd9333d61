//! The Perfetto export read back and checked against the trace-event format's rules.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use serde_json::value::RawValue;
use tally_evidence::{ActivityDomain, EventBody, InferenceRecord};
use tally_import::{ImportOptions, TraceFormat, export_perfetto, import_to_vec};

use crate::corpus::{micros_text_to_ns, trace};
use crate::records::{activity, context, iteration, membership, request};

struct Parsed {
    events: Vec<(Value, String, Option<String>)>,
}

fn export(records: &[InferenceRecord]) -> (Parsed, tally_import::PerfettoSummary) {
    let mut out = Vec::new();
    let summary = export_perfetto(records, &mut out).unwrap();
    #[derive(serde::Deserialize)]
    #[allow(non_snake_case)]
    struct Doc {
        traceEvents: Vec<Box<RawValue>>,
    }
    #[derive(serde::Deserialize)]
    struct Times {
        ts: Box<RawValue>,
        dur: Option<Box<RawValue>>,
    }
    let doc: Doc = serde_json::from_slice(&out).unwrap();
    let events = doc
        .traceEvents
        .iter()
        .map(|raw| {
            let value: Value = serde_json::from_str(raw.get()).unwrap();
            let times: Times = serde_json::from_str(raw.get()).expect("every event has ts");
            (
                value,
                times.ts.get().to_owned(),
                times.dur.map(|d| d.get().to_owned()),
            )
        })
        .collect();
    (Parsed { events }, summary)
}

fn three_decimals(text: &str) -> bool {
    let (int, frac) = text
        .trim_start_matches('-')
        .split_once('.')
        .unwrap_or(("", "x"));
    !int.is_empty()
        && int.bytes().all(|b| b.is_ascii_digit())
        && frac.len() == 3
        && frac.bytes().all(|b| b.is_ascii_digit())
}

/// The format's rules, checked on any export.
fn check_format(parsed: &Parsed) {
    let mut named_processes = BTreeSet::new();
    let mut named_threads = BTreeSet::new();
    let mut slices: BTreeMap<(u64, u64), Vec<(i128, i128)>> = BTreeMap::new();
    for (event, ts, dur) in &parsed.events {
        for key in ["ph", "pid", "tid", "ts"] {
            assert!(event.get(key).is_some(), "{key} missing: {event}");
        }
        assert!(three_decimals(ts), "ts {ts}");
        let (pid, tid) = (
            event["pid"].as_u64().unwrap(),
            event["tid"].as_u64().unwrap(),
        );
        match event["ph"].as_str().unwrap() {
            "M" if event["name"] == "process_name" => {
                named_processes.insert(pid);
            }
            "M" if event["name"] == "thread_name" => {
                named_threads.insert((pid, tid));
            }
            "X" => {
                let dur = dur.as_deref().expect("complete events have dur");
                assert!(three_decimals(dur) && !dur.starts_with('-'), "dur {dur}");
                let start = micros_text_to_ns(ts);
                slices
                    .entry((pid, tid))
                    .or_default()
                    .push((start, start + micros_text_to_ns(dur)));
            }
            _ => {}
        }
    }
    for (&(pid, tid), list) in &mut slices {
        assert!(named_processes.contains(&pid), "process {pid} unnamed");
        assert!(
            named_threads.contains(&(pid, tid)),
            "thread {pid}/{tid} unnamed"
        );
        // Slices on one thread nest.
        list.sort_by_key(|&(s, e)| (s, std::cmp::Reverse(e)));
        let mut stack: Vec<i128> = Vec::new();
        for &(s, e) in list.iter() {
            while stack.last().is_some_and(|&end| end <= s) {
                stack.pop();
            }
            assert!(
                stack.last().is_none_or(|&end| e <= end),
                "overlap on {pid}/{tid} at {s}"
            );
            stack.push(e);
        }
    }
    // Async begin/end pairs share cat and id; flow start/finish pairs share id and bind to an
    // enclosing slice on their thread.
    let mut asyncs: BTreeMap<(String, u64), Vec<(String, i128)>> = BTreeMap::new();
    let mut flows: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for (event, ts, _) in &parsed.events {
        let ph = event["ph"].as_str().unwrap();
        let at = micros_text_to_ns(ts);
        match ph {
            "b" | "e" => asyncs
                .entry((
                    event["cat"].as_str().unwrap().to_owned(),
                    event["id"].as_u64().unwrap(),
                ))
                .or_default()
                .push((ph.to_owned(), at)),
            "s" | "f" => {
                let key = (
                    event["pid"].as_u64().unwrap(),
                    event["tid"].as_u64().unwrap(),
                );
                let encloses = slices[&key].iter().any(|&(s, e)| s <= at && at <= e);
                assert!(encloses, "flow {ph} at {at} binds to no slice on {key:?}");
                if ph == "f" {
                    assert_eq!(event["bp"], "e");
                }
                flows
                    .entry(event["id"].as_u64().unwrap())
                    .or_default()
                    .push(ph.to_owned());
            }
            _ => {}
        }
    }
    for (key, pair) in asyncs {
        assert_eq!(pair.len(), 2, "{key:?}");
        assert_eq!((pair[0].0.as_str(), pair[1].0.as_str()), ("b", "e"));
        assert!(pair[0].1 <= pair[1].1);
    }
    for (id, pair) in flows {
        assert_eq!(pair, ["s", "f"], "flow {id}");
    }
}

#[test]
fn a_real_import_exports_every_activity_with_exact_times_and_flows() {
    let options = ImportOptions {
        emit_runtime: true,
        ..ImportOptions::default()
    };
    let (records, _) = import_to_vec(
        TraceFormat::Kineto,
        &[trace("hta_ns_resolution_rank0.pt.trace.json.gz")],
        &options,
    )
    .unwrap();
    let (parsed, summary) = export(&records);
    check_format(&parsed);
    let mut expected = BTreeMap::new();
    let mut gpu = 0;
    for record in &records {
        let InferenceRecord::Event(e) = record else {
            continue;
        };
        if let EventBody::Activity(a) = e.body() {
            expected.insert(
                a.activity_ref.to_string(),
                (a.start_ns.unwrap(), a.end_ns.unwrap()),
            );
            gpu += u64::from(a.activity_domain == ActivityDomain::Gpu);
        }
    }
    let mut found = BTreeMap::new();
    for (event, ts, dur) in &parsed.events {
        if let Some(id) = event["args"]["activity_ref"].as_str() {
            let start = micros_text_to_ns(ts) as i64;
            found.insert(
                id.to_owned(),
                (
                    start,
                    start + micros_text_to_ns(dur.as_deref().unwrap()) as i64,
                ),
            );
        }
    }
    assert_eq!(found, expected, "every activity, times exact to the ns");
    assert_eq!(gpu, 6095);
    assert_eq!(
        summary.flows, 6095,
        "every GPU activity has its launch arrow"
    );
    assert_eq!(summary.iterations, 5);
    // A 2^53-scale timestamp survives: 1712195495505583.2 µs.
    assert!(parsed.events.iter().any(|(_, ts, _)| ts.ends_with(".200")));
}

#[test]
fn requests_span_their_iterations_and_bad_activities_are_marked() {
    let eng = context("eng", Some("h"), Some(10), None);
    let gpu = context("tr", Some("h"), Some(10), Some("GPU-A"));
    let no_uuid = context("tr", Some("h"), Some(10), None);
    let records = vec![
        iteration(&eng, "I1", (1_000, 5_000)),
        iteration(&eng, "I2", (6_000, 9_000)),
        request(&eng, "A", None),
        request(&eng, "B", Some((500, 700))),
        membership(&eng, "m1", "A", "I1"),
        membership(&eng, "m2", "A", "I2"),
        activity(
            &gpu,
            "k1",
            ActivityDomain::Gpu,
            Some("I1"),
            Some(1),
            (1_500, 2_500),
        ),
        activity(
            &gpu,
            "k2",
            ActivityDomain::Gpu,
            Some("I1"),
            Some(2),
            (2_000, 3_000),
        ),
        activity(
            &gpu,
            "k3",
            ActivityDomain::Gpu,
            None,
            Some(3),
            (7_000, 7_001),
        ),
        activity(
            &no_uuid,
            "k4",
            ActivityDomain::Gpu,
            Some("I2"),
            None,
            (7_500, 8_000),
        ),
        activity(
            &eng,
            "l1",
            ActivityDomain::Runtime,
            Some("I1"),
            Some(1),
            (1_100, 1_200),
        ),
    ];
    let (parsed, summary) = export(&records);
    check_format(&parsed);
    assert_eq!(summary.requests, 2);
    assert_eq!(
        (summary.unattributed, summary.unmeasured, summary.flows),
        (1, 1, 1)
    );
    let spans: BTreeMap<String, (String, String)> = {
        let mut b = BTreeMap::new();
        for (event, ts, _) in &parsed.events {
            if event["cat"] == "request" {
                let entry = b
                    .entry(event["name"].as_str().unwrap().to_owned())
                    .or_insert((String::new(), String::new()));
                if event["ph"] == "b" {
                    entry.0 = ts.clone()
                } else {
                    entry.1 = ts.clone()
                }
            }
        }
        b
    };
    assert_eq!(spans["cli/A"], ("1.000".to_owned(), "9.000".to_owned()));
    assert_eq!(spans["cli/B"], ("0.500".to_owned(), "0.700".to_owned()));
    let names: Vec<&str> = parsed
        .events
        .iter()
        .filter_map(|(e, _, _)| e["name"].as_str())
        .collect();
    assert!(names.iter().any(|n| n.starts_with("[unattributed] ")));
    assert!(names.iter().any(|n| n.starts_with("[unmeasured] ")));
    // k1 and k2 overlap on stream 7: two lanes.
    let threads: Vec<&str> = parsed
        .events
        .iter()
        .filter(|(e, _, _)| e["name"] == "thread_name")
        .map(|(e, _, _)| e["args"]["name"].as_str().unwrap())
        .collect();
    assert!(
        threads.contains(&"stream 7") && threads.contains(&"stream 7 #2"),
        "{threads:?}"
    );
}
