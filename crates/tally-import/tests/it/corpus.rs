//! The real-trace corpus (`testdata/traces/real/`), the README's figures hard-coded, and the test's
//! own independent tools: exact decimal parsing, interval union, and reading emitted records.

use std::collections::BTreeMap;
use std::path::PathBuf;

use tally_evidence::{ActivityDomain, EventBody, InferenceRecord, Nanos};

/// The repository's `testdata/` directory (`testdata/README.md`).
pub fn testdata_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

/// A corpus file's path.
pub fn trace(name: &str) -> PathBuf {
    let path = testdata_dir().join("traces/real").join(name);
    assert!(path.exists(), "missing corpus file {}", path.display());
    path
}

/// One row of the README's "Figures to check against" table.
pub struct Figures {
    pub file: &'static str,
    pub device: u32,
    pub busy: Nanos,
    pub summed: Nanos,
    pub count: u64,
    pub kernel_busy: Nanos,
    pub kernel_count: u64,
}

/// The README's table, copied by hand.
pub const README: [Figures; 9] = [
    Figures {
        file: "hta_amd_mi250_rocm.json.gz",
        device: 2,
        busy: 149042,
        summed: 149042,
        count: 16,
        kernel_busy: 110881,
        kernel_count: 14,
    },
    Figures {
        file: "hta_multistream_rank0.json.gz",
        device: 0,
        busy: 438424000,
        summed: 449763000,
        count: 7747,
        kernel_busy: 396315000,
        kernel_count: 6080,
    },
    Figures {
        file: "hta_nccl_rank0.json.gz",
        device: 0,
        busy: 157500014,
        summed: 165185838,
        count: 3774,
        kernel_busy: 155215315,
        kernel_count: 2700,
    },
    Figures {
        file: "hta_ns_resolution_rank0.pt.trace.json.gz",
        device: 0,
        busy: 472454441,
        summed: 472454441,
        count: 6095,
        kernel_busy: 468153602,
        kernel_count: 4350,
    },
    Figures {
        file: "hta_sampled_2rank_rank0.json.gz",
        device: 0,
        busy: 547656000,
        summed: 607844000,
        count: 1204,
        kernel_busy: 547303000,
        kernel_count: 1154,
    },
    Figures {
        file: "hta_sampled_2rank_rank1.json.gz",
        device: 1,
        busy: 580050000,
        summed: 667530000,
        count: 1154,
        kernel_busy: 575496000,
        kernel_count: 1104,
    },
    Figures {
        file: "kineto_resnet50_legacy.pt.trace.json.gz",
        device: 0,
        busy: 603558000,
        summed: 603558000,
        count: 9096,
        kernel_busy: 591532000,
        kernel_count: 8772,
    },
    Figures {
        file: "pipit_cloverleaf_nsys.sqlite.gz",
        device: 0,
        busy: 303795463,
        summed: 303795463,
        count: 1591,
        kernel_busy: 294404540,
        kernel_count: 1312,
    },
    Figures {
        file: "pipit_saxpy_mpi_nsys.sqlite.gz",
        device: 0,
        busy: 373273080,
        summed: 373273080,
        count: 20,
        kernel_busy: 88573480,
        kernel_count: 5,
    },
];

/// The README's per-step table: (file, step, busy, summed, count).
pub const README_STEPS: [(&str, u64, Nanos, Nanos, u64); 7] = [
    (
        "hta_ns_resolution_rank0.pt.trace.json.gz",
        101,
        94569795,
        94569795,
        1219,
    ),
    (
        "hta_ns_resolution_rank0.pt.trace.json.gz",
        102,
        94591138,
        94591138,
        1219,
    ),
    (
        "hta_ns_resolution_rank0.pt.trace.json.gz",
        103,
        94459362,
        94459362,
        1219,
    ),
    (
        "hta_ns_resolution_rank0.pt.trace.json.gz",
        104,
        94561467,
        94561467,
        1219,
    ),
    (
        "hta_ns_resolution_rank0.pt.trace.json.gz",
        105,
        94272679,
        94272679,
        1219,
    ),
    (
        "hta_sampled_2rank_rank0.json.gz",
        551,
        278680000,
        302241000,
        602,
    ),
    (
        "hta_sampled_2rank_rank0.json.gz",
        552,
        268976000,
        305603000,
        602,
    ),
];

/// Every file of the corpus directory (so a new file cannot be silently skipped).
pub fn corpus_files() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(testdata_dir().join("traces/real"))
        .expect("corpus directory")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".gz"))
        .collect();
    names.sort();
    names
}

/// Length of the union of half-open intervals (the test's own sweep).
pub fn union(mut intervals: Vec<(Nanos, Nanos)>) -> Nanos {
    intervals.sort_unstable();
    let mut total = 0;
    let mut current: Option<(Nanos, Nanos)> = None;
    for (s, e) in intervals {
        current = match current {
            Some((cs, ce)) if s <= ce => Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total += ce - cs;
                Some((s, e))
            }
            None => Some((s, e)),
        };
    }
    total + current.map_or(0, |(s, e)| e - s)
}

/// Exact decimal microseconds (at most three fractional digits) to nanoseconds, by string
/// surgery, independent of the crate's parser.
pub fn micros_text_to_ns(text: &str) -> i128 {
    let text = text.trim().trim_matches('"');
    let (negative, text) = match text.strip_prefix('-') {
        Some(t) => (true, t),
        None => (false, text),
    };
    let (int, frac) = text.split_once('.').unwrap_or((text, ""));
    assert!(
        frac.len() <= 3,
        "corpus values have at most 3 decimals: {text}"
    );
    let padded = format!("{frac:0<3}");
    let value = int.parse::<i128>().unwrap() * 1000 + padded.parse::<i128>().unwrap();
    if negative { -value } else { value }
}

/// A GPU activity's busy intervals as accounting sees them.
pub fn busy_intervals(a: &tally_evidence::ActivityReferenceEvent) -> Vec<(Nanos, Nanos)> {
    let (s, e) = (a.start_ns.unwrap(), a.end_ns.unwrap());
    match &a.intervals {
        tally_evidence::BusyIntervals::List(list) => {
            list.iter().map(|&(o, d)| (s + o, s + o + d)).collect()
        }
        _ => vec![(s, e)],
    }
}

/// (busy, summed, count) per device UUID over the GPU activity records.
pub fn per_device(records: &[InferenceRecord]) -> BTreeMap<String, (Nanos, Nanos, u64)> {
    let mut groups: BTreeMap<String, (Vec<(Nanos, Nanos)>, u64)> = BTreeMap::new();
    for record in records {
        let InferenceRecord::Event(event) = record else {
            continue;
        };
        let EventBody::Activity(a) = event.body() else {
            continue;
        };
        if a.activity_domain != ActivityDomain::Gpu {
            continue;
        }
        let key = event
            .context()
            .device_uuid
            .as_deref()
            .unwrap_or("-")
            .to_owned();
        let entry = groups.entry(key).or_default();
        entry.0.extend(busy_intervals(a));
        entry.1 += 1;
    }
    groups
        .into_iter()
        .map(|(k, (iv, n))| {
            let summed = iv.iter().map(|(s, e)| e - s).sum();
            (k, (union(iv), summed, n))
        })
        .collect()
}

/// (busy, summed, count) per iteration *name* (iteration metadata `name`) over GPU activities.
pub fn per_iteration(records: &[InferenceRecord]) -> BTreeMap<String, (Nanos, Nanos, u64)> {
    let mut names = BTreeMap::new();
    for record in records {
        let InferenceRecord::Event(event) = record else {
            continue;
        };
        if let EventBody::Iteration(it) = event.body() {
            let meta = event.metadata().to_map();
            let name = meta["name"].as_str().unwrap().to_owned();
            names.insert(it.iteration_ref.clone(), name);
        }
    }
    let mut groups: BTreeMap<String, (Vec<(Nanos, Nanos)>, u64)> = BTreeMap::new();
    for record in records {
        let InferenceRecord::Event(event) = record else {
            continue;
        };
        let EventBody::Activity(a) = event.body() else {
            continue;
        };
        if a.activity_domain != ActivityDomain::Gpu {
            continue;
        }
        if let Some(r) = &a.iteration_ref {
            let entry = groups.entry(names[r].clone()).or_default();
            entry.0.extend(busy_intervals(a));
            entry.1 += 1;
        }
    }
    groups
        .into_iter()
        .map(|(k, (iv, n))| {
            let summed = iv.iter().map(|(s, e)| e - s).sum();
            (k, (union(iv), summed, n))
        })
        .collect()
}
