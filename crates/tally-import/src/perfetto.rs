//! Perfetto / `chrome://tracing` export: evidence records as a Chrome trace-event JSON file.
//!
//! Layout: one process per GPU (device UUID and clock domain) with one thread per stream, one
//! process per host process with an `iterations` thread and one thread per launching thread
//! (runtime activities), one `unmeasured` process for GPU work without a device identity, and one
//! `requests` process whose async tracks span each request (its own span, else its iterations').
//! Flow arrows go from each runtime launch call to the GPU activities with its correlation id.
//! Slices on one thread must nest, so overlapping slices are spread over extra lanes (`stream 7
//! #2`). Unattributed activities are named `[unattributed] …` and coloured `terrible`; unmeasured ones
//! `[unmeasured] …`, coloured `grey`. Timestamps are microseconds written with exactly three
//! decimals from integer nanoseconds, so no nanosecond is lost. Activities without a start and
//! end cannot be drawn; they are counted in the summary. This module writes to the `Write` it is
//! given and reads nothing.

use std::collections::BTreeMap;
use std::io::Write;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tally_evidence::{
    ActivityDomain, AttributionStatus, ClockKind, CorrelationEvent, EventBody, InferenceRecord,
    Nanos,
};

use crate::error::{Error, Result};

/// What the export wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PerfettoSummary {
    /// Trace events written (all phases).
    pub events: u64,
    /// Activities drawn as slices.
    pub activities: u64,
    /// Iterations drawn.
    pub iterations: u64,
    /// Requests drawn as async tracks.
    pub requests: u64,
    /// Flow arrows (launch → GPU activity).
    pub flows: u64,
    /// Activities drawn as unattributed (not linked to an iteration).
    pub unattributed: u64,
    /// GPU activities drawn as unmeasured.
    pub unmeasured: u64,
    /// Records that could not be drawn (no start or end).
    pub undrawable: u64,
}

#[derive(Serialize)]
struct TraceEvent<'a> {
    ph: &'a str,
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    cat: Option<&'a str>,
    pid: u64,
    tid: u64,
    ts: Box<RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<Box<RawValue>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bp: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cname: Option<&'a str>,
    #[serde(skip_serializing_if = "Value::is_null")]
    args: Value,
}

/// Integer nanoseconds as microseconds with exactly three decimals.
pub fn micros_text(ns: Nanos) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let abs = ns.unsigned_abs();
    format!("{sign}{}.{:03}", abs / 1000, abs % 1000)
}

fn raw(text: String) -> Box<RawValue> {
    RawValue::from_string(text).expect("a decimal literal is valid JSON")
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum ProcessKey {
    Device {
        uuid: String,
        clock: String,
    },
    Unmeasured,
    Host {
        host: String,
        pid: Option<u64>,
        clock: String,
    },
    Requests,
}

impl ProcessKey {
    fn name(&self) -> String {
        match self {
            Self::Device { uuid, clock } => format!("GPU {uuid} ({clock})"),
            Self::Unmeasured => "unmeasured GPU activities (no device identity or clock)".into(),
            Self::Host { host, pid, .. } => match pid {
                Some(pid) => format!("host {host} pid {pid}"),
                None => format!("host {host}"),
            },
            Self::Requests => "requests".into(),
        }
    }
}

/// (host, pid, clock domain, correlation id): what joins a launch call to its GPU work.
type FlowKey = (String, Option<u64>, String, u64);

struct Slice {
    process: ProcessKey,
    track: String,
    start: Nanos,
    end: Nanos,
    name: String,
    cat: &'static str,
    cname: Option<&'static str>,
    args: Value,
    /// (host, pid, clock, correlation) for flows: launches are sources, GPU work targets.
    flow: Option<(bool, FlowKey)>,
}

fn host_of(event: &CorrelationEvent) -> ProcessKey {
    let c = event.context();
    ProcessKey::Host {
        host: c.host.as_deref().unwrap_or("unknown-host").to_owned(),
        pid: c.pid,
        clock: c.clock_domain.to_string(),
    }
}

fn metadata_str(event: &CorrelationEvent, key: &str) -> Option<String> {
    match event.metadata().to_map().get(key) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    }
}

/// Writes `records` as a Chrome trace-event JSON document to `out`.
pub fn export_perfetto(
    records: &[InferenceRecord],
    out: &mut dyn Write,
) -> Result<PerfettoSummary> {
    let events: Vec<&CorrelationEvent> = records
        .iter()
        .filter_map(|r| match r {
            InferenceRecord::Event(e) => Some(e),
            InferenceRecord::Legacy(_) => None,
        })
        .collect();
    let mut summary = PerfettoSummary::default();
    let mut slices = Vec::new();
    let mut iteration_spans: BTreeMap<_, (Nanos, Nanos)> = BTreeMap::new();
    for event in &events {
        match event.body() {
            EventBody::Iteration(it) => {
                let (Some(start), Some(end)) = (it.start_ns, it.end_ns) else {
                    summary.undrawable += 1;
                    continue;
                };
                iteration_spans.insert(it.iteration_ref.clone(), (start, end));
                summary.iterations += 1;
                let name =
                    metadata_str(event, "name").unwrap_or_else(|| it.iteration_ref.id.to_string());
                slices.push(Slice {
                    process: host_of(event),
                    track: "iterations".into(),
                    start,
                    end,
                    name,
                    cat: "iteration",
                    cname: None,
                    args: json!({"iteration_ref": it.iteration_ref.to_string()}),
                    flow: None,
                });
            }
            EventBody::Activity(a) => {
                let (Some(start), Some(end)) = (a.start_ns, a.end_ns) else {
                    summary.undrawable += 1;
                    continue;
                };
                summary.activities += 1;
                let c = event.context();
                let gpu = a.activity_domain == ActivityDomain::Gpu;
                let measured = c.device_uuid.is_some() && c.clock_kind != ClockKind::Wall;
                let label = metadata_str(event, "first_name")
                    .or_else(|| metadata_str(event, "name"))
                    .unwrap_or_else(|| a.activity_kind.to_string());
                let mut name = label;
                let mut cname = None;
                if gpu && !measured {
                    name = format!("[unmeasured] {name}");
                    cname = Some("grey");
                    summary.unmeasured += 1;
                }
                if a.attribution_status == AttributionStatus::Unresolved {
                    name = format!("[unattributed] {name}");
                    cname = Some("terrible");
                    summary.unattributed += 1;
                }
                let (process, track) = if gpu {
                    let process = match (&c.device_uuid, measured) {
                        (Some(uuid), true) => ProcessKey::Device {
                            uuid: uuid.to_string(),
                            clock: c.clock_domain.to_string(),
                        },
                        _ => ProcessKey::Unmeasured,
                    };
                    let track = a
                        .stream_id
                        .map(|s| format!("stream {s}"))
                        .unwrap_or_else(|| "stream ?".into());
                    (process, track)
                } else {
                    let tid = metadata_str(event, "tid").unwrap_or_else(|| "?".into());
                    (host_of(event), format!("thread {tid}"))
                };
                let flow = a.cuda_correlation_id.map(|id| {
                    let launch = a.activity_domain == ActivityDomain::Runtime;
                    (
                        launch,
                        (
                            c.host.as_deref().unwrap_or("").to_owned(),
                            c.pid,
                            c.clock_domain.to_string(),
                            id,
                        ),
                    )
                });
                let mut args = json!({
                    "activity_ref": a.activity_ref.to_string(),
                    "kind": &*a.activity_kind,
                    "status": a.attribution_status.as_str(),
                });
                if let Some(it) = &a.iteration_ref {
                    args["iteration_ref"] = json!(it.to_string());
                }
                if let Some(id) = a.cuda_correlation_id {
                    args["correlation"] = json!(id);
                }
                if let Some(reason) = metadata_str(event, "unresolved_reason") {
                    args["unresolved_reason"] = json!(reason);
                }
                slices.push(Slice {
                    process,
                    track,
                    start,
                    end,
                    name,
                    cat: if gpu {
                        "gpu"
                    } else {
                        a.activity_domain.as_str()
                    },
                    cname,
                    args,
                    flow: flow.filter(|_| a.activity_domain != ActivityDomain::Cpu),
                });
            }
            _ => {}
        }
    }
    let requests = request_spans(&events, &iteration_spans);
    write_document(slices, requests, out, &mut summary)?;
    Ok(summary)
}

/// Each request's span: its own start/end, else the union hull of its member iterations.
fn request_spans(
    events: &[&CorrelationEvent],
    iterations: &BTreeMap<tally_evidence::EntityRef, (Nanos, Nanos)>,
) -> Vec<(String, Nanos, Nanos)> {
    let mut own: BTreeMap<String, Option<(Nanos, Nanos)>> = BTreeMap::new();
    let mut hull: BTreeMap<String, (Nanos, Nanos)> = BTreeMap::new();
    for event in events {
        match event.body() {
            EventBody::Request(r) => {
                let key = r.request_ref.to_string();
                let span = r.start_ns.zip(r.end_ns);
                let entry = own.entry(key).or_insert(None);
                if entry.is_none() {
                    *entry = span;
                }
            }
            EventBody::Membership(m) => {
                if let Some(&(s, e)) = iterations.get(&m.iteration_ref) {
                    let h = hull.entry(m.request_ref.to_string()).or_insert((s, e));
                    *h = (h.0.min(s), h.1.max(e));
                }
            }
            _ => {}
        }
    }
    for key in hull.keys() {
        own.entry(key.clone()).or_insert(None);
    }
    own.into_iter()
        .filter_map(|(key, span)| {
            span.or_else(|| hull.get(&key).copied())
                .map(|(s, e)| (key, s, e))
        })
        .collect()
}

/// Places slices on lanes so that slices on one thread nest, then writes everything.
fn write_document(
    mut slices: Vec<Slice>,
    requests: Vec<(String, Nanos, Nanos)>,
    out: &mut dyn Write,
    summary: &mut PerfettoSummary,
) -> Result<()> {
    slices.sort_by(|a, b| {
        (
            &a.process,
            &a.track,
            a.start,
            std::cmp::Reverse(a.end),
            &a.name,
        )
            .cmp(&(
                &b.process,
                &b.track,
                b.start,
                std::cmp::Reverse(b.end),
                &b.name,
            ))
    });
    let mut processes: BTreeMap<ProcessKey, u64> = BTreeMap::new();
    for slice in &slices {
        let next = processes.len() as u64 + 1;
        processes.entry(slice.process.clone()).or_insert(next);
    }
    if !requests.is_empty() {
        let next = processes.len() as u64 + 1;
        processes.entry(ProcessKey::Requests).or_insert(next);
    }
    // Lanes: per (process, track) a list of stacks of open slice ends.
    let mut lanes: BTreeMap<(u64, String), Vec<Vec<Nanos>>> = BTreeMap::new();
    let mut threads: BTreeMap<(u64, String, usize), u64> = BTreeMap::new();
    let mut placed = Vec::with_capacity(slices.len());
    for slice in slices {
        let pid = processes[&slice.process];
        let stacks = lanes.entry((pid, slice.track.clone())).or_default();
        let mut lane = None;
        for (i, stack) in stacks.iter_mut().enumerate() {
            while stack.last().is_some_and(|&end| end <= slice.start) {
                stack.pop();
            }
            if stack.last().is_none_or(|&end| slice.end <= end) {
                stack.push(slice.end);
                lane = Some(i);
                break;
            }
        }
        let lane = lane.unwrap_or_else(|| {
            stacks.push(vec![slice.end]);
            stacks.len() - 1
        });
        let next = threads.len() as u64 + 1;
        let tid = *threads
            .entry((pid, slice.track.clone(), lane))
            .or_insert(next);
        placed.push((pid, tid, slice));
    }
    let mut written: Vec<TraceEvent<'_>> = Vec::new();
    let zero = || raw("0.000".into());
    for (key, &pid) in &processes {
        written.push(TraceEvent {
            ph: "M",
            name: "process_name".into(),
            cat: None,
            pid,
            tid: 0,
            ts: zero(),
            dur: None,
            id: None,
            bp: None,
            cname: None,
            args: json!({"name": key.name()}),
        });
    }
    for ((pid, track, lane), &tid) in &threads {
        let name = if *lane == 0 {
            track.clone()
        } else {
            format!("{track} #{}", lane + 1)
        };
        written.push(TraceEvent {
            ph: "M",
            name: "thread_name".into(),
            cat: None,
            pid: *pid,
            tid,
            ts: zero(),
            dur: None,
            id: None,
            bp: None,
            cname: None,
            args: json!({"name": name}),
        });
    }
    let mut launches: BTreeMap<FlowKey, (u64, u64, Nanos)> = BTreeMap::new();
    for (pid, tid, slice) in &placed {
        if let Some((true, key)) = &slice.flow {
            launches
                .entry(key.clone())
                .or_insert((*pid, *tid, slice.start));
        }
    }
    let mut flows = Vec::new();
    for (pid, tid, slice) in placed {
        if let Some((false, key)) = &slice.flow
            && let Some(&(lpid, ltid, lstart)) = launches.get(key)
        {
            flows.push(((lpid, ltid, lstart), (pid, tid, slice.start)));
        }
        written.push(TraceEvent {
            ph: "X",
            name: slice.name,
            cat: Some(slice.cat),
            pid,
            tid,
            ts: raw(micros_text(slice.start)),
            dur: Some(raw(micros_text(slice.end - slice.start))),
            id: None,
            bp: None,
            cname: slice.cname,
            args: slice.args,
        });
    }
    for (n, ((lpid, ltid, lstart), (pid, tid, start))) in flows.into_iter().enumerate() {
        let id = Some(n as u64 + 1);
        let flow = |ph, pid, tid, ts, bp| TraceEvent {
            ph,
            name: "launch".into(),
            cat: Some("launch"),
            pid,
            tid,
            ts: raw(micros_text(ts)),
            dur: None,
            id,
            bp,
            cname: None,
            args: Value::Null,
        };
        written.push(flow("s", lpid, ltid, lstart, None));
        written.push(flow("f", pid, tid, start, Some("e")));
        summary.flows += 1;
    }
    if let Some(&pid) = processes.get(&ProcessKey::Requests) {
        for (n, (name, start, end)) in requests.into_iter().enumerate() {
            summary.requests += 1;
            for (ph, ts) in [("b", start), ("e", end)] {
                written.push(TraceEvent {
                    ph,
                    name: name.clone(),
                    cat: Some("request"),
                    pid,
                    tid: 0,
                    ts: raw(micros_text(ts)),
                    dur: None,
                    id: Some(n as u64 + 1),
                    bp: None,
                    cname: None,
                    args: if ph == "b" {
                        json!({"request_ref": name})
                    } else {
                        Value::Null
                    },
                });
            }
        }
    }
    summary.events = written.len() as u64;
    let io = |e: std::io::Error| Error::Write {
        name: "perfetto output".into(),
        source: e,
    };
    out.write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n")
        .map_err(io)?;
    for (i, event) in written.iter().enumerate() {
        if i > 0 {
            out.write_all(b",\n").map_err(io)?;
        }
        serde_json::to_writer(&mut *out, event).map_err(|e| io(e.into()))?;
    }
    out.write_all(b"\n]}\n").map_err(io)?;
    Ok(())
}
