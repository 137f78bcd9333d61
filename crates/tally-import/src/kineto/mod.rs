//! The Kineto (PyTorch profiler) importer: two streaming passes over one Chrome trace file.
//!
//! Pass 1 (scan) keeps only what linking needs: the header, the iteration ranges and the launch
//! calls (`cuda_runtime`/`cuda_driver`, 2021 `Runtime`) keyed by correlation id. Pass 2 (emit)
//! reads the file again and turns each GPU event (`kernel`/`gpu_memcpy`/`gpu_memset`, 2021
//! `Kernel`/`Memcpy`/`Memset`) into a record the moment it is read, so GPU events are never
//! buffered however they are ordered relative to their launches. Memory is O(launch calls +
//! iteration ranges + disjoint busy intervals), independent of the number of GPU events at kernel
//! detail. The event grammar is in [`parse`]; records are built by [`crate::emit`].

pub mod parse;
pub mod split;

use std::cell::Cell;
use std::collections::BTreeMap;
use std::path::Path;

use regex::Regex;
use serde_json::value::RawValue;
use tally_evidence::{Nanos, Text};

use crate::decimal::{Femtos, femtos_to_nanos, parse_integer_nanos, parse_micros};
use crate::emit::{Emitter, RunIdentity, Sink};
use crate::error::{Error, Result};
use crate::linking::{ENGINE_RANGE_PREFIX, LaunchCall, RangeSpan, find_iterations};
use crate::options::{ImportOptions, Phase};
use crate::source;
use crate::summary::InputSummary;
use crate::trace::{
    GpuEvent, GpuKind, LaunchTable, TraceFacts, TraceFormat, clock_domain, main_pid,
};
use parse::{Header, ParseFailure, RawArgs, RawEvent, raw_cow, raw_int, raw_label, raw_str};

/// What a complete (`ph: "X"`) event is to the importer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Gpu(GpuKind),
    Launch,
    Range,
    Other,
}

fn role(category: &str) -> Role {
    match category {
        "kernel" | "Kernel" => Role::Gpu(GpuKind::Kernel),
        "gpu_memcpy" | "Memcpy" => Role::Gpu(GpuKind::Memcpy),
        "gpu_memset" | "Memset" => Role::Gpu(GpuKind::Memset),
        "cuda_runtime" | "cuda_driver" | "Runtime" | "Driver" => Role::Launch,
        "user_annotation" | "Operator" | "cpu_op" | "python_function" => Role::Range,
        _ => Role::Other,
    }
}

/// An event's role, or `None` when it is not a complete event.
fn event_role(event: &RawEvent) -> Option<Role> {
    if raw_cow(event.ph).as_deref() != Some("X") {
        return None;
    }
    Some(raw_cow(event.cat).map_or(Role::Other, |c| role(&c)))
}

/// `ts` and `ts + dur` in exact femtoseconds relative to `baseTimeNanoseconds`.
fn times(event: &RawEvent) -> std::result::Result<(Femtos, Femtos), String> {
    let ts = event.ts.ok_or("missing ts")?;
    let start = parse_micros(ts.get()).map_err(|e| format!("ts: {e}"))?;
    let dur = match event.dur {
        None => 0,
        Some(d) if d.get() == "null" => 0,
        Some(d) => parse_micros(d.get()).map_err(|e| format!("dur: {e}"))?,
    };
    if dur < 0 {
        return Err(format!(
            "negative dur {}",
            event.dur.map_or("", |d| d.get())
        ));
    }
    Ok((start, start + dur))
}

fn to_nanos(base: i128, femtos: Femtos) -> std::result::Result<Nanos, String> {
    Nanos::try_from(base + femtos_to_nanos(femtos))
        .map_err(|_| "timestamp does not fit in 64-bit nanoseconds".to_owned())
}

fn args_of<'a>(event: &RawEvent<'a>) -> RawArgs<'a> {
    event
        .args
        .and_then(|a| serde_json::from_str::<RawArgs<'a>>(a.get()).ok())
        .unwrap_or_default()
}

fn positive(raw: Option<&RawValue>) -> Option<u64> {
    raw_int(raw)
        .and_then(|v| u64::try_from(v).ok())
        .filter(|&v| v != 0)
}

struct Scan {
    header: Header,
    ranges: Vec<RangeSpan>,
    launches: LaunchTable,
    earliest: Option<Nanos>,
    duplicate_correlations: u64,
    non_numeric_pids: u64,
}

/// Imports one Kineto file: scan, iterations, emit. `on_scanned` runs between the passes.
pub(crate) fn import_one(
    path: &Path,
    trace_key: Text,
    run: &RunIdentity,
    options: &ImportOptions,
    sink: &mut Sink<'_>,
    progress: &mut dyn FnMut(Phase, u64, u64),
    on_scanned: &mut dyn FnMut(&TraceFacts, &mut Sink<'_>) -> Result<()>,
) -> Result<InputSummary> {
    let scan = scan(path, options.iterations.as_ref(), progress)?;
    let facts = facts(path, trace_key, &scan)?;
    on_scanned(&facts, sink)?;
    let iterations = find_iterations(
        scan.ranges,
        options.iterations.as_ref(),
        facts.format.producer(),
        &facts.trace_key,
    );
    let base = base_ns(path, &scan.header)?;
    let mut emitter = Emitter::start(&facts, run, options, scan.launches, iterations, sink)?;
    read_pass(path, Phase::Emit, progress, &mut |index, event| {
        let Some(role) = event_role(&event) else {
            return Ok(());
        };
        let malformed = |message: String| Error::Malformed {
            path: path.to_path_buf(),
            location: format!("traceEvents[{index}]"),
            message,
        };
        match role {
            Role::Gpu(kind) => {
                let (start, end) = times(&event).map_err(malformed)?;
                let args = args_of(&event);
                let device = raw_int(args.device)
                    .or_else(|| raw_int(event.pid))
                    .and_then(|d| u32::try_from(d).ok());
                let gpu = GpuEvent {
                    start: to_nanos(base, start).map_err(malformed)?,
                    end: to_nanos(base, end).map_err(malformed)?,
                    kind,
                    name: raw_str(event.name).unwrap_or_default(),
                    device,
                    stream: raw_int(args.stream).and_then(|s| u64::try_from(s).ok()),
                    correlation: positive(args.correlation),
                    graph_id: positive(args.graph_id),
                    pid: None,
                };
                emitter.gpu_event(gpu, sink)
            }
            Role::Launch if options.emit_runtime => {
                match launch_call(&event, base).map_err(malformed)? {
                    Some((correlation, call)) => emitter.runtime_call(correlation, &call, sink),
                    None => Ok(()),
                }
            }
            _ => Ok(()),
        }
    })?;
    emitter.finish(sink)
}

/// A launch call with its correlation id; `None` when it has no correlation or no numeric pid.
fn launch_call(
    event: &RawEvent,
    base: i128,
) -> std::result::Result<Option<(u64, LaunchCall)>, String> {
    let args = args_of(event);
    let Some(correlation) = positive(args.correlation) else {
        return Ok(None);
    };
    let Some(pid) = raw_int(event.pid) else {
        return Ok(None);
    };
    let (start, end) = times(event)?;
    Ok(Some((
        correlation,
        LaunchCall {
            pid,
            tid: raw_label(event.tid).unwrap_or_default().into(),
            start: to_nanos(base, start)?,
            end: to_nanos(base, end)?,
            name: raw_str(event.name).unwrap_or_default().into(),
        },
    )))
}

fn is_candidate_range(name: &str, extra: Option<&Regex>) -> bool {
    name.starts_with("ProfilerStep#")
        || name.starts_with(ENGINE_RANGE_PREFIX)
        || extra.is_some_and(|re| re.is_match(name))
}

fn scan(
    path: &Path,
    extra: Option<&Regex>,
    progress: &mut dyn FnMut(Phase, u64, u64),
) -> Result<Scan> {
    let mut ranges = Vec::new();
    let mut launches = LaunchTable::default();
    let mut earliest: Option<Femtos> = None;
    let mut duplicate_correlations = 0;
    let mut non_numeric_pids = 0;
    let header = read_pass(path, Phase::Scan, progress, &mut |index, event| {
        let Some(role) = event_role(&event) else {
            return Ok(());
        };
        let malformed = |message: String| Error::Malformed {
            path: path.to_path_buf(),
            location: format!("traceEvents[{index}]"),
            message,
        };
        let mut seen = |t: Femtos| earliest = Some(earliest.map_or(t, |e| e.min(t)));
        match role {
            Role::Gpu(_) => {
                let (start, _) = times(&event).map_err(malformed)?;
                seen(start);
            }
            Role::Launch => match launch_call(&event, 0).map_err(malformed)? {
                Some((correlation, call)) => {
                    seen(Femtos::from(call.start) * 1_000_000);
                    launches.insert(None, correlation, &call);
                }
                None => {
                    if positive(args_of(&event).correlation).is_some() {
                        non_numeric_pids += 1;
                    }
                }
            },
            Role::Range => {
                let name = raw_cow(event.name).unwrap_or_default();
                if is_candidate_range(&name, extra) {
                    let name = name.into_owned();
                    let (start, end) = times(&event).map_err(malformed)?;
                    let Some(pid) = raw_int(event.pid) else {
                        non_numeric_pids += 1;
                        return Ok(());
                    };
                    seen(start);
                    ranges.push(RangeSpan {
                        pid,
                        tid: raw_label(event.tid).unwrap_or_default().into(),
                        start: to_nanos(0, start).map_err(malformed)?,
                        end: to_nanos(0, end).map_err(malformed)?,
                        name,
                    });
                }
            }
            Role::Other => {}
        }
        Ok(())
    })?;
    if !header.has_events {
        return Err(Error::format(
            path,
            "not a Kineto trace: missing traceEvents (expected a PyTorch profiler JSON trace)",
        ));
    }
    // Ranges and launches were read relative to the base, which may follow the events.
    let base = base_ns(path, &header)?;
    let shift = |t: Nanos| -> Result<Nanos> {
        Nanos::try_from(i128::from(t) + base)
            .map_err(|_| Error::format(path, "baseTimeNanoseconds + ts does not fit in 64-bit ns"))
    };
    for range in &mut ranges {
        range.start = shift(range.start)?;
        range.end = shift(range.end)?;
    }
    launches.seal();
    duplicate_correlations += launches.duplicates();
    launches
        .shift(base)
        .ok_or_else(|| Error::format(path, "baseTimeNanoseconds + ts does not fit in 64-bit ns"))?;
    let earliest = match earliest {
        Some(e) => Some(to_nanos(base, e).map_err(|m| Error::format(path, m))?),
        None => None,
    };
    Ok(Scan {
        header,
        ranges,
        launches,
        earliest,
        duplicate_correlations,
        non_numeric_pids,
    })
}

fn base_ns(path: &Path, header: &Header) -> Result<i128> {
    match header.base_time_ns.as_deref() {
        None => Ok(0),
        Some(raw) if raw.get() == "null" => Ok(0),
        Some(raw) => parse_integer_nanos(raw.get())
            .map_err(|e| Error::format(path, format!("baseTimeNanoseconds: {e}"))),
    }
}

fn facts(path: &Path, trace_key: Text, scan: &Scan) -> Result<TraceFacts> {
    let header = &scan.header;
    let text = |v: &Option<serde_json::Value>| -> Option<Text> {
        match v {
            Some(serde_json::Value::String(s)) if !s.is_empty() => Some(s.as_str().into()),
            Some(serde_json::Value::Number(n)) => Some(n.to_string().into()),
            _ => None,
        }
    };
    let info = header.distributed_info.as_ref();
    let field = |key: &str| {
        info.and_then(|i| i.get(key)).and_then(|v| {
            v.as_u64()
                .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        })
    };
    let mut device_names = BTreeMap::new();
    if let Some(serde_json::Value::Array(items)) = &header.device_properties {
        for item in items {
            let id = item.get("id").and_then(serde_json::Value::as_u64);
            let name = item.get("name").and_then(serde_json::Value::as_str);
            if let (Some(id), Some(name)) = (id.and_then(|i| u32::try_from(i).ok()), name) {
                device_names.insert(id, Text::from(name));
            }
        }
    }
    let host = text(&header.host_name);
    let rank = field("rank");
    let pid = main_pid(&scan.launches);
    let hip = scan
        .launches
        .calls()
        .any(|(_, name, _)| name.starts_with("hip"));
    let mut notes = Vec::new();
    if scan.duplicate_correlations > 0 {
        notes.push(format!(
            "{} launch calls reuse a correlation id; the last one read is used",
            scan.duplicate_correlations
        ));
    }
    if scan.non_numeric_pids > 0 {
        notes.push(format!(
            "{} launch calls or ranges have no numeric pid and were skipped",
            scan.non_numeric_pids
        ));
    }
    Ok(TraceFacts {
        format: TraceFormat::Kineto,
        path: path.to_path_buf(),
        trace_key,
        clock_domain: clock_domain(TraceFormat::Kineto, host.as_deref(), rank, pid),
        host,
        rank,
        world_size: field("world_size"),
        backend: Some(if hip { "roctracer" } else { "cupti" }.into()),
        backend_version: text(&header.cupti_version),
        engine: header.vllm_version.as_ref().map(|_| "vllm".into()),
        engine_version: text(&header.vllm_version),
        device_names,
        trace_uuids: BTreeMap::new(),
        main_pid: pid,
        earliest_ns: scan.earliest,
        notes,
        not_imported: BTreeMap::new(),
    })
}

/// Reads the whole file once, mapping decoder failures to positioned errors.
fn read_pass(
    path: &Path,
    phase: Phase,
    progress: &mut dyn FnMut(Phase, u64, u64),
    on_event: &mut dyn FnMut(usize, RawEvent) -> Result<()>,
) -> Result<Header> {
    let opened = source::open(path)?;
    let counter = opened.file_bytes.clone();
    let total = opened.file_size;
    progress(phase, 0, total);
    let index = Cell::new(0usize);
    let mut calls = 0u64;
    let mut last_report = 0u64;
    let mut callback = |i: usize, event: RawEvent| -> Result<()> {
        calls += 1;
        if calls.is_multiple_of(4096) && counter.get() >= last_report + (4 << 20) {
            last_report = counter.get();
            progress(phase, last_report, total);
        }
        on_event(i, event)
    };
    let result = match opened.reader {
        source::Stream::Plain(reader) => parse::read_document(reader, &mut callback, &index),
        source::Stream::Gzip(reader) => parse::read_document(*reader, &mut callback, &index),
    };
    match result {
        Ok(header) => {
            progress(phase, total, total);
            Ok(header)
        }
        Err(ParseFailure::Stopped {
            error,
            line,
            column,
        }) => Err(match error {
            Error::Malformed {
                path,
                location,
                message,
            } => Error::Malformed {
                path,
                location: format!(
                    "{location} at line {line} column {column}{}",
                    if opened.gzip {
                        " of the decompressed JSON"
                    } else {
                        ""
                    }
                ),
                message,
            },
            other => other,
        }),
        Err(failure) => Err(decode_error(
            path,
            failure,
            index.get(),
            opened.file_bytes.get(),
            opened.gzip,
        )),
    }
}

fn decode_error(
    path: &Path,
    failure: ParseFailure,
    index: usize,
    file_bytes: u64,
    gzip: bool,
) -> Error {
    let text = if gzip {
        " of the decompressed JSON"
    } else {
        ""
    };
    match failure {
        ParseFailure::Io(e) => Error::Corrupt {
            path: path.to_path_buf(),
            position: format!("byte {file_bytes} of the file (traceEvents[{index}])"),
            message: e.to_string(),
        },
        ParseFailure::Syntax {
            line,
            column,
            message,
        } => Error::Corrupt {
            path: path.to_path_buf(),
            position: format!("line {line} column {column}{text} (traceEvents[{index}])"),
            message,
        },
        ParseFailure::NotATrace {
            line,
            column,
            message,
        } => Error::Format {
            path: path.to_path_buf(),
            message: format!("not a Kineto trace at line {line} column {column}{text}: {message}"),
        },
        ParseFailure::Stopped { error, .. } => error,
    }
}
