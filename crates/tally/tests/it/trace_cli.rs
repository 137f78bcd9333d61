//! The `tally trace` command-line contract (`docs/cli.md`): several files, standard input, gzip,
//! conversion round trips, alignment, shares, exit codes and error lines.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::{stderr, stdout, tally, testdata_dir};

fn case(name: &str) -> PathBuf {
    testdata_dir().join(format!("conformance/evidence/{name}.jsonl"))
}

fn account_json(files: &[&Path]) -> Value {
    let mut args = vec!["trace", "account", "--json"];
    let names: Vec<&str> = files.iter().map(|p| p.to_str().unwrap()).collect();
    args.extend(names);
    let out = tally(&args);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap()
}

fn ctx(producer: &str, uuid: Option<&str>) -> Value {
    json!({"run_id": "r", "session_id": "s", "producer_id": producer, "source": producer,
           "clock_domain": "w/mono", "clock_kind": "monotonic", "collection_mode": "passive",
           "provenance": "observed", "device_uuid": uuid})
}

fn write_lines(dir: &Path, name: &str, lines: &[Value]) -> PathBuf {
    let path = dir.join(name);
    let mut f = std::fs::File::create(&path).unwrap();
    for line in lines {
        writeln!(f, "{line}").unwrap();
    }
    path
}

#[test]
fn records_split_over_several_files_resolve_as_one_artifact() {
    let dir = tempfile::tempdir().unwrap();
    let whole = case("20-generated-v2");
    let text = std::fs::read_to_string(&whole).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let third = lines.len() / 3;
    let parts: Vec<PathBuf> = [
        &lines[..third],
        &lines[third..2 * third],
        &lines[2 * third..],
    ]
    .iter()
    .enumerate()
    .map(|(i, chunk)| {
        let p = dir.path().join(format!("part{i}.jsonl"));
        std::fs::write(&p, chunk.join("\n")).unwrap();
        p
    })
    .collect();
    let split: Vec<&Path> = parts.iter().map(PathBuf::as_path).collect();
    assert_eq!(account_json(&split), account_json(&[&whole]));
    // Order of the files does not matter either.
    let reversed: Vec<&Path> = split.iter().rev().copied().collect();
    assert_eq!(
        account_json(&reversed)["device_totals"],
        account_json(&[&whole])["device_totals"]
    );
}

#[test]
fn conversion_between_v2_and_v4_keeps_the_accounting() {
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "20-generated-v2",
        "21-generated-v4-dup-shuffle",
        "22-generated-legacy-dup",
    ] {
        let input = case(name);
        let expected = account_json(&[&input]);
        let v4 = dir.path().join(format!("{name}.v4.jsonl"));
        let v2 = dir.path().join(format!("{name}.v2.jsonl"));
        for (from, to, form) in [(&input, &v4, "v4"), (&v4, &v2, "v2")] {
            let out = tally(&[
                "trace",
                "convert",
                from.to_str().unwrap(),
                "--to",
                form,
                "-o",
                to.to_str().unwrap(),
            ]);
            assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
        }
        assert_eq!(account_json(&[&v4]), expected, "{name} as v4");
        assert_eq!(account_json(&[&v2]), expected, "{name} as v2");
        // Writing is deterministic: converting again gives the same bytes.
        let again = dir.path().join("again.jsonl");
        tally(&[
            "trace",
            "convert",
            v2.to_str().unwrap(),
            "--to",
            "v4",
            "-o",
            again.to_str().unwrap(),
        ]);
        let v4_again = dir.path().join("again4.jsonl");
        tally(&[
            "trace",
            "convert",
            v2.to_str().unwrap(),
            "--to",
            "v4",
            "-o",
            v4_again.to_str().unwrap(),
        ]);
        assert_eq!(
            std::fs::read(&again).unwrap(),
            std::fs::read(&v4_again).unwrap()
        );
    }
}

#[test]
fn standard_input_and_gzip_read_like_plain_files() {
    let dir = tempfile::tempdir().unwrap();
    let input = case("21-generated-v4-dup-shuffle");
    let expected = account_json(&[&input]);
    let gz = dir.path().join("trace.jsonl.gz");
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::fast(),
    );
    enc.write_all(&std::fs::read(&input).unwrap()).unwrap();
    enc.finish().unwrap();
    assert_eq!(account_json(&[&gz]), expected);

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tally"))
        .args(["trace", "account", "--json", "-"])
        .stdin(std::fs::File::open(&input).unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        serde_json::from_str::<Value>(&stdout(&out)).unwrap(),
        expected
    );
}

#[test]
fn errors_name_the_file_and_its_own_line() {
    let dir = tempfile::tempdir().unwrap();
    let good = case("01-overlap");
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "\n{\"schema_version\": 2}\n").unwrap();
    let out = tally(&[
        "trace",
        "account",
        good.to_str().unwrap(),
        bad.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert_eq!(
        stderr(&out).trim_end(),
        format!(
            "error: {}: line 2: event_type must name an inference event",
            bad.display()
        )
    );

    let missing = dir.path().join("missing.jsonl");
    let out = tally(&["trace", "account", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.starts_with(&format!("error: {}: ", missing.display())),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1);
}

/// The reference reads every file before it resolves any record: a line that cannot be read,
/// in any file, comes before a conflict, even one in an earlier file.
#[test]
fn a_line_that_cannot_be_read_comes_before_a_conflict() {
    let dir = tempfile::tempdir().unwrap();
    let conflict = case("03a-conflicting-event");
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "\n{\"schema_version\": 2}\n").unwrap();
    let account = |files: &[&Path]| {
        let mut args = vec!["trace", "account"];
        args.extend(files.iter().map(|p| p.to_str().unwrap()));
        let out = tally(&args);
        assert_eq!(out.status.code(), Some(1));
        stderr(&out).trim_end().to_owned()
    };
    let unreadable = format!(
        "error: {}: line 2: event_type must name an inference event",
        bad.display()
    );
    assert_eq!(account(&[&conflict, &bad]), unreadable);
    assert_eq!(account(&[&bad, &conflict]), unreadable);
    assert_eq!(
        account(&[&conflict, &case("01-overlap")]),
        format!("error: {}: conflicting event identity", conflict.display())
    );
}

#[test]
fn files_of_two_runs_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut other = ctx("eng", None);
    other["run_id"] = json!("other-run");
    let a = write_lines(
        dir.path(),
        "a.jsonl",
        &[json!({"schema_version": 2,
        "event_type": "infer.iteration", "context": ctx("eng", None), "event_id": "i1",
        "iteration_ref": {"producer_id": "eng", "id": "I1"}})],
    );
    let b = write_lines(
        dir.path(),
        "b.jsonl",
        &[json!({"schema_version": 2,
        "event_type": "infer.iteration", "context": other, "event_id": "i2",
        "iteration_ref": {"producer_id": "eng", "id": "I2"}})],
    );
    let out = tally(&["trace", "account", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out).trim_end(),
        format!(
            "error: {}: correlation artifact contains multiple run_id values",
            b.display()
        )
    );
}

#[test]
fn usage_errors_exit_2_and_help_exits_0() {
    assert_eq!(tally(&["trace", "account"]).status.code(), Some(2));
    assert_eq!(
        tally(&["trace", "account", "--bogus", "x"]).status.code(),
        Some(2)
    );
    assert_eq!(tally(&["trace", "nope"]).status.code(), Some(2));
    assert_eq!(tally(&["--help"]).status.code(), Some(0));
    assert_eq!(
        tally(&["trace", "account", "--help"]).status.code(),
        Some(0)
    );
}

#[test]
fn the_human_report_shows_busy_summed_and_span() {
    let out = tally(&["trace", "account", case("01-overlap").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("run r: 0 requests · 2 iterations"), "{text}");
    let device_line = text
        .lines()
        .find(|l| l.contains("GPU-A"))
        .expect("a device row");
    for figure in ["15.000 ms", "21.000 ms", "1.40×", "25.000 ms", "60.0%"] {
        assert!(
            device_line.contains(figure),
            "{figure} missing in {device_line}"
        );
    }
    assert!(text.contains("eng/I1"), "{text}");
    assert!(text.contains("Unresolved references: 0"), "{text}");

    let out = tally(&[
        "trace",
        "account",
        case("04-measurability").to_str().unwrap(),
    ]);
    let text = stdout(&out);
    assert!(text.contains("Unmeasured GPU activities: 3"), "{text}");
    assert!(
        text.contains("1 without a device_uuid: tr/K-nouuid"),
        "{text}"
    );
    assert!(text.contains("1 on a wall clock: tr/K-wall"), "{text}");
    assert!(
        text.contains("1 without start_ns and end_ns: tr/K-noend"),
        "{text}"
    );
}

fn alignment(producer: &str, offset: i64, uncertainty: i64, from: i64, to: i64) -> Value {
    json!({"schema_version": 2, "event_type": "infer.clock_alignment",
           "context": ctx(producer, None), "event_id": "a1",
           "from_clock_domain": "worker-b/monotonic", "to_clock_domain": "worker-a/monotonic",
           "offset_ns": offset, "uncertainty_ns": uncertainty,
           "valid_from_ns": from, "valid_to_ns": to})
}

#[test]
fn align_moves_a_timestamp_or_says_why_not() {
    let dir = tempfile::tempdir().unwrap();
    let one = write_lines(
        dir.path(),
        "one.jsonl",
        &[alignment("p1", -50, 4, 100, 200)],
    );
    let run = |ts: &str, file: &Path| {
        tally(&[
            "trace",
            "align",
            "--from",
            "worker-b/monotonic",
            "--to",
            "worker-a/monotonic",
            ts,
            file.to_str().unwrap(),
            "--json",
        ])
    };
    let out = run("150", &one);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        serde_json::from_str::<Value>(&stdout(&out)).unwrap(),
        json!({"value_ns": 100, "uncertainty_ns": 4, "clock_domain": "worker-a/monotonic"})
    );
    assert_eq!(
        stdout(&run("100", &one)).trim(),
        r#"{"clock_domain":"worker-a/monotonic","uncertainty_ns":4,"value_ns":50}"#
    );

    let out = run("200", &one);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out)
            .contains("no alignment from worker-b/monotonic to worker-a/monotonic covers 200"),
        "{}",
        stderr(&out)
    );

    let two = write_lines(
        dir.path(),
        "two.jsonl",
        &[
            alignment("p1", -50, 4, 100, 200),
            alignment("p2", -50, 4, 100, 200),
        ],
    );
    let out = run("150", &two);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.starts_with(
            "error: no valid clock alignment or multiple ambiguous alignments: 2 alignments"
        ),
        "{err}"
    );

    let out = run("-5", &one);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out).trim_end(),
        "error: timestamp_ns must be non-negative"
    );
}

fn shares_fixture(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(case("01-overlap")).unwrap();
    let mut lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let cli = |id: &str| json!({"producer_id": "cli", "id": id});
    for (i, name) in ["A", "B"].iter().enumerate() {
        lines.push(json!({"schema_version": 2, "event_type": "infer.request",
            "context": ctx("cli", None), "event_id": format!("req-{name}"), "request_ref": cli(name)}));
        lines.push(
            json!({"schema_version": 2, "event_type": "infer.membership",
            "context": ctx("eng", None), "event_id": format!("m-{name}"), "request_ref": cli(name),
            "iteration_ref": {"producer_id": "eng", "id": "I1"},
            "role": if i == 0 { "prefill" } else { "decode" }}),
        );
    }
    write_lines(dir, "shares.jsonl", &lines)
}

#[test]
fn shares_are_validated_against_the_measured_budget() {
    let dir = tempfile::tempdir().unwrap();
    let artifact = shares_fixture(dir.path());
    let share = |id: &str, ns: i64| {
        json!({"request_ref": {"producer_id": "cli", "id": id},
        "attempt_ref": null, "duration_ns": ns, "model": "token-weighted-v1"})
    };
    let run = |shares: Value, unattributed: &str| {
        let file = dir.path().join("s.json");
        std::fs::write(&file, shares.to_string()).unwrap();
        tally(&[
            "trace",
            "shares",
            artifact.to_str().unwrap(),
            "--iteration",
            "eng",
            "I1",
            "--device",
            "GPU-A",
            "--clock-domain",
            "w/mono",
            "--shares",
            file.to_str().unwrap(),
            "--unattributed",
            unattributed,
            "--json",
        ])
    };
    let out = run(
        json!([share("A", 6_000_000), share("B", 3_000_000)]),
        "1000000",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["budget_ns"], 10_000_000);
    assert_eq!(v["unattributed_ns"], 1_000_000);
    assert_eq!(v["shares"].as_array().unwrap().len(), 2);

    let out = run(json!([share("A", 6_000_000), share("B", 3_000_000)]), "0");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out).trim_end(),
        "error: estimated shares and remainder must equal the measured budget"
    );

    let out = run(json!([share("C", 10_000_000)]), "0");
    assert_eq!(
        stderr(&out).trim_end(),
        "error: estimated request is not a member of the iteration"
    );

    let mut other = share("B", 3_000_000);
    other["model"] = json!("other");
    let out = run(json!([share("A", 6_000_000), other]), "1000000");
    assert_eq!(
        stderr(&out).trim_end(),
        "error: request shares must use one estimation model"
    );

    let out = run(json!("not a list"), "0");
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("s.json: line 1:"), "{}", stderr(&out));
}

#[test]
fn the_evidence_commands_do_not_offer_the_campaign_options() {
    // `--database` and `-C` locate a campaign; `tally trace` reads only the files it is given, so
    // it refuses them (a usage error) instead of ignoring them, and its help does not list them.
    let file = case("01-overlap");
    for flag in [["--database", "x.db"], ["-C", "/tmp"]] {
        let out = tally(&["trace", "account", flag[0], flag[1], file.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{flag:?}");
        assert!(
            stderr(&out).contains(&format!("unexpected argument '{}'", flag[0])),
            "{}",
            stderr(&out)
        );
    }
    let help = stdout(&tally(&["trace", "account", "--help"]));
    assert!(
        !help.contains("--database") && !help.contains("--repo"),
        "{help}"
    );
    let help = stdout(&tally(&["status", "--help"]));
    assert!(
        help.contains("--database") && help.contains("--repo"),
        "{help}"
    );
}

#[test]
fn a_missing_file_is_said_once() {
    let out = tally(&["trace", "account", "/nonexistent/input.jsonl"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: /nonexistent/input.jsonl: "),
        "{err}"
    );
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
    // A directory, and a truncated gzip stream: one cause each, said once.
    let dir = tempfile::tempdir().unwrap();
    let out = tally(&["trace", "account", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out).matches("Is a directory").count(),
        1,
        "{}",
        stderr(&out)
    );
    let gz = dir.path().join("cut.jsonl.gz");
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder
        .write_all(&std::fs::read(case("01-overlap")).unwrap())
        .unwrap();
    let bytes = encoder.finish().unwrap();
    std::fs::write(&gz, &bytes[..bytes.len() / 2]).unwrap();
    let out = tally(&["trace", "account", gz.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    let words: Vec<&str> = err.split(": ").collect();
    for (i, w) in words.iter().enumerate() {
        assert!(!words[i + 1..].contains(w), "{w:?} repeated in {err}");
    }
}

/// A GPU activity of producer `tr` on `device`, linked to `eng/I1` or unresolved.
fn kernel(id: &str, device: &str, metadata: Value, span_ms: (f64, f64), linked: bool) -> Value {
    let ns = |ms: f64| (ms * 1e6).round() as i64;
    let mut record = json!({"schema_version": 2, "event_type": "infer.activity_ref",
        "context": ctx("tr", Some(device)), "event_id": id,
        "activity_ref": {"producer_id": "tr", "id": id}, "activity_kind": "gpu_kernel",
        "activity_domain": "gpu", "attribution_status": if linked { "linked" } else { "unresolved" },
        "start_ns": ns(span_ms.0), "end_ns": ns(span_ms.1), "metadata": metadata});
    if linked {
        record["iteration_ref"] = json!({"producer_id": "eng", "id": "I1"});
    }
    if record["metadata"].get("intervals").is_some() {
        record["schema_version"] = json!(3);
    }
    record
}

#[test]
fn the_report_names_the_kernels_that_took_the_time() {
    let dir = tempfile::tempdir().unwrap();
    let gemm = "void gemm<float>(float*, int)";
    let iteration = json!({"schema_version": 2, "event_type": "infer.iteration",
        "context": ctx("eng", None), "event_id": "i1",
        "iteration_ref": {"producer_id": "eng", "id": "I1"}, "start_ns": 0, "end_ns": 10_000_000});
    let mut wall = kernel("k5", "GPU-A", json!({"first_name": gemm}), (0.0, 1.0), true);
    wall["context"]["clock_kind"] = json!("wall");
    let records = [
        iteration,
        // GPU-A: summed 8 + 8 + 5 + 3 + 1 + 0.5 = 25.5 ms over six measured activities.
        kernel("k1", "GPU-A", json!({"first_name": gemm}), (0.0, 8.0), true),
        kernel(
            "k2",
            "GPU-A",
            json!({"first_name": gemm, "name": "x"}),
            (2.0, 10.0),
            true,
        ),
        kernel(
            "c1",
            "GPU-A",
            json!({"first_name": "Memcpy HtoD (Pinned -> Device)"}),
            (20.0, 25.0),
            false,
        ),
        // A launch record: its busy sub-intervals (1 + 2 ms), not its 10 ms span, count.
        kernel(
            "g1",
            "GPU-A",
            json!({"first_name": "graph_kernel",
            "intervals": [[0, 1_000_000], [5_000_000, 2_000_000]]}),
            (30.0, 40.0),
            false,
        ),
        kernel("k4", "GPU-A", json!({}), (50.0, 51.0), false),
        kernel("r1", "GPU-A", json!({"name": "relu"}), (60.0, 60.5), true),
        // Not measured (a wall clock): in no table.
        wall,
        kernel("k6", "GPU-B", json!({"first_name": gemm}), (0.0, 4.0), true),
    ];
    let file = write_lines(dir.path(), "kernels.jsonl", &records);
    let out = tally(&["trace", "account", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let rows = |device: &str| -> Vec<Vec<String>> {
        let start = text
            .lines()
            .position(|l| l.starts_with(&format!("{device}|w/mono|monotonic: ")))
            .unwrap_or_else(|| panic!("{device} kernels in {text}"));
        text.lines()
            .skip(start + 2)
            .take_while(|l| l.starts_with(' ') && !l.starts_with("  ..."))
            .map(|l| {
                // Columns are separated by two or more spaces.
                l.split("  ")
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .map(String::from)
                    .collect()
            })
            .collect()
    };
    let row = |cells: &[&str]| cells.iter().map(|c| c.to_string()).collect::<Vec<_>>();
    assert!(
        text.contains("GPU-A|w/mono|monotonic: 5 of 5 names, 25.500 ms summed"),
        "{text}"
    );
    assert_eq!(
        rows("GPU-A"),
        vec![
            row(&["gemm<float>", "2", "16.000 ms", "8.000 ms", "62.7%"]),
            row(&[
                "Memcpy HtoD (Pinned -> Device)",
                "1",
                "5.000 ms",
                "5.000 ms",
                "19.6%"
            ]),
            row(&["graph_kernel", "1", "3.000 ms", "3.000 ms", "11.8%"]),
            row(&["(unnamed gpu_kernel)", "1", "1.000 ms", "1.000 ms", "3.9%"]),
            row(&["relu", "1", "500.000 µs", "500.000 µs", "2.0%"]),
        ],
        "{text}"
    );
    assert_eq!(
        rows("GPU-B"),
        vec![row(&["gemm<float>", "1", "4.000 ms", "4.000 ms", "100.0%"])]
    );
    // Unattributed activities by name, with their GPU time; the unnamed one by reference.
    let unattributed = text
        .split("Unattributed activities: 3 ")
        .nth(1)
        .expect("the unattributed section");
    assert!(
        unattributed.starts_with(
            "(not linked to an iteration; GPU ones still count in device totals)\n  \
             1× Memcpy HtoD (Pinned -> Device), 5.000 ms\n  1× graph_kernel, 3.000 ms\n  \
             without a name: 1\n  tr/k4\n"
        ),
        "{unattributed}"
    );

    // `--top 2` keeps two names per device clock and sums the rest.
    let out = tally(&["trace", "account", "--top", "2", file.to_str().unwrap()]);
    let text = stdout(&out);
    assert!(
        text.contains(
            "GPU-A|w/mono|monotonic: 2 of 5 names, 25.500 ms summed\n kernel \
             "
        ),
        "{text}"
    );
    assert!(
        text.contains("  ... and 3 more names: 3 launches, 4.500 ms (17.6%)\n"),
        "{text}"
    );
    // The JSON contract is untouched: no names, the same seven keys.
    let json = account_json(&[&file]);
    let mut keys: Vec<&str> = json
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "counts",
            "device_totals",
            "iterations",
            "run_id",
            "unattributed_activity_refs",
            "unmeasured_gpu_activity_refs",
            "unresolved",
        ]
    );
    assert!(!json.to_string().contains("gemm"));
}
