//! `tally trace import kineto|nsys`, `export perfetto` and `link` through the real binary, on the
//! real GPU traces of `testdata/traces/real/`: per device, busy and summed GPU time and the activity
//! count equal the figures its README lists (computed there from the raw files), and the reference
//! reads the artifacts tally writes (when it is installed).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{stderr, stdout, tally, testdata_dir};

/// (file, importer, busy ns, summed ns, count): the README's "all GPU work" table.
const FIGURES: &[(&str, &str, u64, u64, u64)] = &[
    ("hta_amd_mi250_rocm.json.gz", "kineto", 149042, 149042, 16),
    (
        "hta_multistream_rank0.json.gz",
        "kineto",
        438424000,
        449763000,
        7747,
    ),
    (
        "hta_nccl_rank0.json.gz",
        "kineto",
        157500014,
        165185838,
        3774,
    ),
    (
        "hta_ns_resolution_rank0.pt.trace.json.gz",
        "kineto",
        472454441,
        472454441,
        6095,
    ),
    (
        "hta_sampled_2rank_rank0.json.gz",
        "kineto",
        547656000,
        607844000,
        1204,
    ),
    (
        "hta_sampled_2rank_rank1.json.gz",
        "kineto",
        580050000,
        667530000,
        1154,
    ),
    (
        "kineto_resnet50_legacy.pt.trace.json.gz",
        "kineto",
        603558000,
        603558000,
        9096,
    ),
    (
        "pipit_cloverleaf_nsys.sqlite.gz",
        "nsys",
        303795463,
        303795463,
        1591,
    ),
    (
        "pipit_saxpy_mpi_nsys.sqlite.gz",
        "nsys",
        373273080,
        373273080,
        20,
    ),
];

fn import(dir: &Path, file: &str, importer: &str, extra: &[&str]) -> PathBuf {
    let trace = testdata_dir().join("traces/real").join(file);
    let out = dir.join(format!("{file}.jsonl"));
    let mut args = vec![
        "trace",
        "import",
        importer,
        trace.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let run = tally(&args);
    assert_eq!(run.status.code(), Some(0), "{file}: {}", stderr(&run));
    out
}

fn account(artifact: &Path) -> Value {
    let out = tally(&["trace", "account", "--json", artifact.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap()
}

#[test]
fn imported_real_traces_account_to_the_readme_figures() {
    let dir = tempfile::tempdir().unwrap();
    for (file, importer, busy, summed, count) in FIGURES {
        let artifact = import(dir.path(), file, importer, &[]);
        let totals = account(&artifact)["device_totals"].clone();
        let totals = totals.as_array().unwrap();
        assert_eq!(totals.len(), 1, "{file}: one device: {totals:?}");
        assert_eq!(totals[0]["busy_ns"], *busy, "{file}");
        assert_eq!(totals[0]["summed_activity_ns"], *summed, "{file}");
        assert_eq!(totals[0]["activity_count"], *count, "{file}");
    }
}

#[test]
fn profiler_steps_become_iterations_with_the_work_they_launched() {
    let dir = tempfile::tempdir().unwrap();
    let artifact = import(dir.path(), "hta_sampled_2rank_rank0.json.gz", "kineto", &[]);
    let accounting = account(&artifact);
    let steps: Vec<(String, u64, u64, u64)> = accounting["iterations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|it| {
            let gpu = &it["gpu"][0];
            (
                it["iteration_ref"]["id"]
                    .as_str()
                    .unwrap()
                    .rsplit('/')
                    .next()
                    .unwrap()
                    .to_string(),
                gpu["busy_ns"].as_u64().unwrap(),
                gpu["summed_activity_ns"].as_u64().unwrap(),
                gpu["activity_count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        steps,
        vec![
            ("ProfilerStep#551".to_string(), 278680000, 302241000, 602),
            ("ProfilerStep#552".to_string(), 268976000, 305603000, 602),
        ]
    );
}

#[test]
fn imports_are_deterministic_and_perfetto_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let a = import(
        dir.path(),
        "hta_amd_mi250_rocm.json.gz",
        "kineto",
        &["--runtime"],
    );
    let bytes = std::fs::read(&a).unwrap();
    let b = import(
        dir.path(),
        "hta_amd_mi250_rocm.json.gz",
        "kineto",
        &["--runtime"],
    );
    assert_eq!(
        bytes,
        std::fs::read(&b).unwrap(),
        "same input, same artifact"
    );

    let out = dir.path().join("trace.json");
    let run = tally(&[
        "trace",
        "export",
        "perfetto",
        a.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let doc: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    let complete: Vec<&Value> = events.iter().filter(|e| e["ph"] == "X").collect();
    assert!(complete.len() >= 16, "every GPU activity is drawn");
    for e in events {
        for key in ["ph", "pid", "tid", "ts"] {
            assert!(e.get(key).is_some(), "{key} missing in {e}");
        }
    }
    for e in &complete {
        assert!(e["dur"].as_f64().unwrap() >= 0.0);
    }
    // What was written is said in a sentence, with the count of the file's events.
    let note = stderr(&run);
    assert_eq!(note.lines().count(), 1, "{note}");
    assert!(!note.contains('{') && !note.contains("Summary"), "{note}");
    assert!(
        note.contains(&format!("{} trace events: ", events.len())),
        "{note}"
    );
}

#[test]
fn the_reference_reads_imported_artifacts() {
    let Some(python) = std::env::var_os("TALLY_REFERENCE_PYTHON") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../bench/evidence/reference.py");
    for (file, importer, ..) in FIGURES.iter().take(3).chain(FIGURES.iter().skip(7)) {
        let artifact = import(dir.path(), file, importer, &[]);
        let reference = std::process::Command::new(&python)
            .arg(&script)
            .arg(&artifact)
            .output()
            .unwrap();
        let theirs: Value = serde_json::from_slice(&reference.stdout).unwrap_or_else(|e| {
            panic!(
                "{file}: {e}: {}",
                String::from_utf8_lossy(&reference.stderr)
            )
        });
        assert_eq!(theirs, account(&artifact), "{file}");
    }
}

#[test]
fn a_kineto_file_with_two_trace_event_arrays_is_refused() {
    // Concatenating the two arrays would count their GPU work twice; Python's json would keep
    // only the last. tally refuses the file and names the key.
    let dir = tempfile::tempdir().unwrap();
    let event = r#"{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 1}}"#;
    let trace = dir.path().join("twice.json");
    std::fs::write(
        &trace,
        format!("{{\"traceEvents\": [{event}],\n \"traceEvents\": [{event}]}}"),
    )
    .unwrap();
    let out = dir.path().join("out.jsonl");
    let run = tally(&[
        "trace",
        "import",
        "kineto",
        trace.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.status.code(), Some(1), "{}", stderr(&run));
    let err = stderr(&run);
    assert!(
        err.starts_with(&format!("error: {}", trace.display())),
        "{err}"
    );
    assert!(err.contains("line 2"), "{err}");
    assert!(err.contains("`traceEvents` appears twice"), "{err}");
    assert!(!out.exists(), "nothing written");
}

#[test]
fn one_word_for_gpu_work_no_iteration_owns() {
    // The 872 GPU events of the multistream trace whose correlation id has no launch call are
    // "unattributed" in import's summary, in the Perfetto export and in account's text alike.
    let dir = tempfile::tempdir().unwrap();
    let trace = testdata_dir().join("traces/real/hta_multistream_rank0.json.gz");
    let artifact = dir.path().join("multi.jsonl");
    let run = tally(&[
        "trace",
        "import",
        "kineto",
        trace.to_str().unwrap(),
        "-o",
        artifact.to_str().unwrap(),
    ]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let summary = stderr(&run);
    assert!(
        summary.contains("872 unattributed: no_launch_record"),
        "{summary}"
    );
    let perfetto = dir.path().join("multi.json");
    let run = tally(&[
        "trace",
        "export",
        "perfetto",
        artifact.to_str().unwrap(),
        "-o",
        perfetto.to_str().unwrap(),
    ]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    assert!(
        stderr(&run).contains("872 not attributed to an iteration"),
        "{}",
        stderr(&run)
    );
    let doc = std::fs::read_to_string(&perfetto).unwrap();
    assert_eq!(doc.matches("\"[unattributed] ").count(), 872);
    let account = tally(&["trace", "account", artifact.to_str().unwrap()]);
    let text = stdout(&account);
    for out in [&summary, &stderr(&run), &text] {
        assert!(
            !out.contains("unresolved GPU") && !out.contains(" unresolved:"),
            "{out}"
        );
    }
}

/// (name, launches, summed ns) per kernel name, largest summed first, then more launches, then
/// by name.
type KernelRows = Vec<(String, u64, u64)>;

/// A Kineto trace's GPU work per kernel name straight from the raw file — every complete event of
/// category `kernel`, `gpu_memcpy` or `gpu_memset` — all of it, and only the events whose
/// correlation id no runtime or driver call has (what the importer cannot attribute).
fn brute_force_kernels(file: &str) -> (KernelRows, KernelRows) {
    let raw = std::fs::File::open(testdata_dir().join("traces/real").join(file)).unwrap();
    let doc: Value = serde_json::from_reader(flate2::read::GzDecoder::new(raw)).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    let category = |e: &Value| e["cat"].as_str().unwrap_or("").to_string();
    let launched: std::collections::HashSet<u64> = events
        .iter()
        .filter(|e| ["cuda_runtime", "cuda_driver"].contains(&category(e).as_str()))
        .filter_map(|e| e["args"]["correlation"].as_u64())
        .collect();
    type ByName = std::collections::BTreeMap<String, (u64, u64)>;
    let (mut all, mut unattributed) = (ByName::new(), ByName::new());
    for event in events {
        let gpu = ["kernel", "gpu_memcpy", "gpu_memset"].contains(&category(event).as_str());
        if event["ph"] != "X" || !gpu {
            continue;
        }
        let name = event["name"].as_str().unwrap().to_string();
        // This trace's durations are whole microseconds.
        let ns = (event["dur"].as_f64().unwrap() * 1000.0).round() as u64;
        let correlation = event["args"]["correlation"].as_u64().unwrap_or(0);
        let mut maps = vec![&mut all];
        if !launched.contains(&correlation) {
            maps.push(&mut unattributed);
        }
        for map in maps {
            let entry = map.entry(name.clone()).or_default();
            entry.0 += 1;
            entry.1 += ns;
        }
    }
    let rows = |map: ByName| {
        let mut rows: KernelRows = map.into_iter().map(|(k, (n, ns))| (k, n, ns)).collect();
        rows.sort_by(|a, b| b.2.cmp(&a.2).then(b.1.cmp(&a.1)).then(a.0.cmp(&b.0)));
        rows
    };
    (rows(all), rows(unattributed))
}

#[test]
fn the_report_of_a_real_trace_names_its_top_kernels_and_shortens_step_names() {
    use tally_report::evidence::units::{duration, percent};
    let dir = tempfile::tempdir().unwrap();
    let file = "hta_multistream_rank0.json.gz";
    let artifact = import(dir.path(), file, "kineto", &[]);
    let (expected, unattributed_expected) = brute_force_kernels(file);
    let device_summed = account(&artifact)["device_totals"][0]["summed_activity_ns"]
        .as_u64()
        .unwrap();
    assert_eq!(device_summed, expected.iter().map(|r| r.2).sum::<u64>());

    let out = tally(&["trace", "account", "--top", "3", artifact.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    let heading = lines
        .iter()
        .position(|l| l.ends_with(&format!("3 of {} names, 449.763 ms summed", expected.len())))
        .unwrap_or_else(|| panic!("the kernel heading in {text}"));
    for (line, (name, launches, summed)) in lines[heading + 2..].iter().zip(&expected[..3]) {
        let cells: Vec<&str> = line
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        // The name is shortened: no return type, no parameters, at most 64 characters.
        let shown = cells[0].trim_end_matches('…');
        assert!(
            name.contains(shown) && !shown.contains('('),
            "{line} for {name}"
        );
        assert!(cells[0].chars().count() <= 64, "{line}");
        assert_eq!(
            cells[1..],
            [
                launches.to_string(),
                duration(*summed),
                duration(summed / launches),
                percent(*summed, device_summed)
            ],
            "{line}"
        );
    }
    let rest = &expected[3..];
    let more = format!(
        "  ... and {} more names: {} launches, {} ({})",
        rest.len(),
        rest.iter().map(|r| r.1).sum::<u64>(),
        duration(rest.iter().map(|r| r.2).sum()),
        percent(rest.iter().map(|r| r.2).sum(), device_summed)
    );
    assert_eq!(lines[heading + 5], more, "{text}");

    // Step names without the trace key every step shares; whole in the JSON.
    assert!(
        text.contains("references after tally.trace.kineto/kineto:hta_multistream_rank0"),
        "{text}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with(" ProfilerStep#553 ")),
        "{text}"
    );
    assert!(
        stdout(&tally(&[
            "trace",
            "account",
            "--json",
            artifact.to_str().unwrap()
        ]))
        .contains("/ProfilerStep#553\"")
    );
    // The 872 GPU events no launch call names are listed by kernel name, most time first, not
    // by reference.
    let count: u64 = unattributed_expected.iter().map(|r| r.1).sum();
    assert_eq!(count, 872);
    let unattributed = text.split("Unattributed activities: 872 ").nth(1).unwrap();
    let listed: Vec<&str> = unattributed.lines().skip(1).take(5).collect();
    assert_eq!(listed.len(), 5, "{unattributed}");
    for (line, (name, n, ns)) in listed.iter().zip(&unattributed_expected) {
        let (head, time) = line.rsplit_once(", ").unwrap();
        let (launches, shown) = head.trim().split_once("× ").unwrap();
        assert!(
            name.contains(shown.trim_end_matches('…')),
            "{line} for {name}"
        );
        assert_eq!(
            (launches, time),
            (n.to_string().as_str(), duration(*ns).as_str()),
            "{line}"
        );
    }
    assert!(!unattributed.contains(":4fa066a5b787/"), "{unattributed}");
}
