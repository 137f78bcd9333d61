//! Brute-force figures straight from the raw files, written independently of the importer: the
//! whole document parsed at once, times by string surgery, launches and steps in plain maps.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use tally_evidence::Nanos;

use crate::corpus::{micros_text_to_ns, union};

#[derive(Deserialize)]
#[allow(non_snake_case)]
struct Doc {
    traceEvents: Vec<Box<RawValue>>,
    baseTimeNanoseconds: Option<Box<RawValue>>,
}

#[derive(Deserialize)]
struct Times {
    ts: Box<RawValue>,
    dur: Option<Box<RawValue>>,
}

type Spans = Vec<(Nanos, Nanos)>;

/// (busy, summed, count, kernel busy, kernel count) per device, and per step name
/// (busy, summed, count).
#[derive(Debug, Default)]
pub struct RawFigures {
    pub devices: BTreeMap<u32, (Nanos, Nanos, u64, Nanos, u64)>,
    pub steps: BTreeMap<String, (Nanos, Nanos, u64)>,
}

fn gunzip(path: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_end(&mut out)
        .unwrap();
    out
}

fn as_int(v: &Value) -> Option<i64> {
    v.as_i64()
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
}

/// The Kineto figures, computed from the raw JSON.
pub fn kineto(path: &Path) -> RawFigures {
    let bytes = gunzip(path);
    // Each event is kept as its own text so that ts/dur keep their decimal digits.
    let doc: Doc = serde_json::from_slice(&bytes).unwrap();
    let base: i128 = doc
        .baseTimeNanoseconds
        .map(|b| b.get().parse().unwrap())
        .unwrap_or(0);
    let events: Vec<(Value, Option<(i128, i128)>)> = doc
        .traceEvents
        .iter()
        .map(|text| {
            let value: Value = serde_json::from_str(text.get()).unwrap();
            let times = serde_json::from_str::<Times>(text.get()).ok().map(|t| {
                let start = micros_text_to_ns(t.ts.get());
                let dur = t.dur.map_or(0, |d| micros_text_to_ns(d.get()));
                (base + start, base + start + dur)
            });
            (value, times)
        })
        .collect();
    let gpu_cats = [
        "kernel",
        "gpu_memcpy",
        "gpu_memset",
        "Kernel",
        "Memcpy",
        "Memset",
    ];
    let launch_cats = ["cuda_runtime", "cuda_driver", "Runtime"];
    let mut gpu = Vec::new();
    let mut launches: BTreeMap<i64, (i64, i128)> = BTreeMap::new();
    let mut steps = Vec::new();
    for (event, times) in &events {
        if event["ph"] != "X" {
            continue;
        }
        let cat = event["cat"].as_str().unwrap_or("");
        let (start, end) = times.expect("complete events have ts");
        if gpu_cats.contains(&cat) {
            let device = as_int(&event["args"]["device"]).unwrap() as u32;
            let corr = as_int(&event["args"]["correlation"]);
            gpu.push((
                device,
                cat.eq_ignore_ascii_case("kernel"),
                start as Nanos,
                end as Nanos,
                corr,
            ));
        } else if launch_cats.contains(&cat) {
            if let Some(corr) = as_int(&event["args"]["correlation"]).filter(|&c| c != 0) {
                launches.insert(corr, (as_int(&event["pid"]).unwrap(), start));
            }
        } else if cat != "gpu_user_annotation"
            && event["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("ProfilerStep#"))
        {
            let pid = as_int(&event["pid"]).unwrap();
            steps.push((event["name"].as_str().unwrap().to_owned(), pid, start, end));
        }
    }
    let mut figures = RawFigures::default();
    let mut by_device: BTreeMap<u32, (Spans, Spans)> = BTreeMap::new();
    let mut by_step: BTreeMap<String, Vec<(Nanos, Nanos)>> = BTreeMap::new();
    for &(device, kernel, start, end, corr) in &gpu {
        let entry = by_device.entry(device).or_default();
        entry.0.push((start, end));
        if kernel {
            entry.1.push((start, end));
        }
        let Some(&(pid, ts)) = corr.and_then(|c| launches.get(&c)) else {
            continue;
        };
        let containing: Vec<_> = steps
            .iter()
            .filter(|(_, p, s, e)| *p == pid && *s <= ts && ts < *e)
            .collect();
        if let [(name, ..)] = containing[..] {
            by_step.entry(name.clone()).or_default().push((start, end));
        }
    }
    for (device, (all, kernels)) in by_device {
        let summed = all.iter().map(|(s, e)| e - s).sum();
        figures.devices.insert(
            device,
            (
                union(all.clone()),
                summed,
                all.len() as u64,
                union(kernels.clone()),
                kernels.len() as u64,
            ),
        );
    }
    for (name, iv) in by_step {
        let summed = iv.iter().map(|(s, e)| e - s).sum();
        figures
            .steps
            .insert(name, (union(iv.clone()), summed, iv.len() as u64));
    }
    figures
}

/// The Nsight figures, computed from the raw SQLite tables.
pub fn nsys(path: &Path) -> RawFigures {
    let bytes = gunzip(path);
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), bytes).unwrap();
    let db = rusqlite::Connection::open(file.path()).unwrap();
    let mut by_device: BTreeMap<u32, (Spans, Spans)> = BTreeMap::new();
    for table in [
        "CUPTI_ACTIVITY_KIND_KERNEL",
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        "CUPTI_ACTIVITY_KIND_MEMSET",
    ] {
        let exists: i64 = db
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE name = ?1",
                [table],
                |r| r.get(0),
            )
            .unwrap();
        if exists == 0 {
            continue;
        }
        let mut statement = db
            .prepare(&format!("SELECT deviceId, start, \"end\" FROM {table}"))
            .unwrap();
        let rows = statement
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                ))
            })
            .unwrap();
        for row in rows {
            let (device, start, end) = row.unwrap();
            let entry = by_device.entry(device as u32).or_default();
            entry.0.push((start, end));
            if table.ends_with("KERNEL") {
                entry.1.push((start, end));
            }
        }
    }
    let mut figures = RawFigures::default();
    for (device, (all, kernels)) in by_device {
        let summed = all.iter().map(|(s, e)| e - s).sum();
        figures.devices.insert(
            device,
            (
                union(all.clone()),
                summed,
                all.len() as u64,
                union(kernels.clone()),
                kernels.len() as u64,
            ),
        );
    }
    figures
}
