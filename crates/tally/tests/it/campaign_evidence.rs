//! The two halves meet on a real campaign: a benchmark that writes an evidence artifact at
//! `TALLY_EVIDENCE_FILE` gets the GPU busy time the artifact accounts for (the reference's own
//! number for it, from the conformance case) recorded with every measurement, in
//! `tally status --json` and in the status text; an artifact that cannot be read fails the
//! sample with the file and the line. A benchmark that imports a profiler trace recorded on a
//! real GPU hands over what `tally trace account` finds in it; a report added by hand may name
//! its evidence too.

use serde_json::Value;

use crate::campaign_repo::{CampaignRepo, candidate, text, verdicts};
use crate::support::testdata_dir;

const CONFIG: &str = r#"
name = "evidence"
evaluate = ["./evaluate.sh"]

[[metrics]]
name = "tok_s"
direction = "higher"
role = "primary"
repeats = 3
"#;

/// The artifact of a conformance case and the reference's Σ `busy_ns` over its devices.
fn conformance_case(name: &str) -> (String, u64) {
    let dir = testdata_dir().join("conformance/evidence");
    let artifact = std::fs::read_to_string(dir.join(format!("{name}.jsonl"))).unwrap();
    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join(format!("{name}.expected.json"))).unwrap(),
    )
    .unwrap();
    let busy = expected["device_totals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["busy_ns"].as_u64().unwrap())
        .sum();
    (artifact, busy)
}

fn measurements(status: &Value, id: u64) -> &Vec<Value> {
    candidate(status, id)["measurements"].as_array().unwrap()
}

#[test]
fn every_measurement_records_the_gpu_busy_time_of_the_evidence_it_handed_over() {
    let (overlap, overlap_busy) = conformance_case("01-overlap");
    let (generated, generated_busy) = conformance_case("20-generated-v2");
    let repo = CampaignRepo::new();
    repo.write("overlap.jsonl", &overlap);
    repo.write("generated.jsonl", &generated);
    let first_line = overlap.lines().next().unwrap();
    repo.write("broken.jsonl", &format!("{first_line}\n{{broken\n"));
    repo.start_campaign(CONFIG, "tok_s=1000\nevidence=overlap.jsonl\n");
    repo.propose(&[
        "tok_s=1100\nevidence=generated.jsonl\nunits=1\n",
        "tok_s=1200\nevidence=broken.jsonl\n",
        "tok_s=900\n",
    ]);
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    let status = repo.status_json();
    assert_eq!(verdicts(&status), ["keep", "keep", "crash", "discard"]);
    let busy = |id: u64| -> Vec<Value> {
        measurements(&status, id)
            .iter()
            .map(|m| m["gpu_busy_seconds"].clone())
            .collect()
    };
    let seconds = |ns: u64| Value::from(ns as f64 / 1e9);
    // Every sample of the baseline (its own and as the bar of candidate 1), and of candidate 1
    // (its own and as the bar of candidates 2 and 3).
    assert_eq!(busy(0), vec![seconds(overlap_busy); busy(0).len()]);
    assert_eq!(busy(1), vec![seconds(generated_busy); busy(1).len()]);
    assert!(busy(0).len() >= 6 && busy(1).len() >= 6);
    assert!(
        busy(3).iter().all(Value::is_null),
        "no evidence handed over"
    );

    // The broken artifact: kept next to the logs, named with its line in the failure.
    let broken = &measurements(&status, 2)[0];
    let artifact = broken["evidence"].as_str().expect("the artifact is kept");
    assert!(artifact.ends_with(".evidence.jsonl"), "{artifact}");
    assert!(std::path::Path::new(artifact).is_file(), "{artifact}");
    assert_eq!(broken["gpu_busy_seconds"], Value::Null);
    let error = broken["error"].as_str().unwrap();
    assert!(
        error.starts_with(&format!("bad evidence file: {artifact}: line 2: ")),
        "{error}"
    );

    let out = repo.tally(&["status"]);
    let shown = text(&out.stdout);
    assert!(shown.contains("GPU busy"), "{shown}");

    // `candidate show` lists each sample's evidence and units.
    let out = repo.tally(&["candidate", "show", "1"]);
    let shown = text(&out.stdout);
    let evidence = format!(
        ".evidence.jsonl (GPU busy {:.3} s)\n",
        generated_busy as f64 / 1e9
    );
    assert!(
        shown.contains("      evidence: ") && shown.contains(&evidence),
        "{shown}"
    );
    let units = regex::Regex::new(r"(?m)^      units of tok_s: a=(\S+), b=(\S+)$").unwrap();
    let caps = units.captures(&shown).unwrap_or_else(|| panic!("{shown}"));
    assert_eq!(caps[1], caps[2], "split evenly: {shown}");
    let out = repo.tally(&["candidate", "show", "1", "--json"]);
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let own = json["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["side"] == "candidate")
        .unwrap();
    assert_eq!(
        own["units"]["tok_s"].as_object().unwrap().len(),
        2,
        "{own:#}"
    );
}

#[test]
fn a_report_added_by_hand_may_name_its_evidence_and_a_bad_one_is_refused() {
    let (overlap, overlap_busy) = conformance_case("01-overlap");
    let repo = CampaignRepo::new();
    repo.start_campaign(CONFIG, "tok_s=1000\n");
    repo.propose(&["tok_s=1100\n"]);
    let reports = repo.signals();
    std::fs::create_dir_all(reports.join("traces")).unwrap();
    std::fs::write(reports.join("traces/run.jsonl"), &overlap).unwrap();
    std::fs::write(
        reports.join("traces/bad.jsonl"),
        "{\"schema_version\": 2}\n",
    )
    .unwrap();
    let add = |evidence: &str| {
        let report = reports.join("report.json");
        std::fs::write(
            &report,
            format!(r#"{{"metrics": {{"tok_s": 1100}}, "seconds": 2, "evidence": "{evidence}"}}"#),
        )
        .unwrap();
        repo.tally(&[
            "measurement",
            "add",
            "1",
            "--report",
            report.to_str().unwrap(),
        ])
    };

    // Refused, and nothing recorded.
    let out = add("traces/bad.jsonl");
    assert_eq!(out.status.code(), Some(1));
    let error = text(&out.stderr);
    let bad = std::fs::canonicalize(reports.join("traces/bad.jsonl")).unwrap();
    assert!(
        error.starts_with(&format!(
            "error: {}: evidence: {}: line 1: ",
            reports.join("report.json").display(),
            bad.display()
        )),
        "{error}"
    );
    let out = add("traces/missing.jsonl");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("relative to the report's directory"),
        "{}",
        text(&out.stderr)
    );
    assert!(measurements(&repo.status_json(), 1).is_empty());

    // Relative to the report's directory, recorded with its absolute path and busy time.
    let out = add("traces/run.jsonl");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let status = repo.status_json();
    let added = &measurements(&status, 1)[0];
    let run = std::fs::canonicalize(reports.join("traces/run.jsonl")).unwrap();
    assert_eq!(added["evidence"], Value::from(run.to_str().unwrap()));
    assert_eq!(
        added["gpu_busy_seconds"],
        Value::from(overlap_busy as f64 / 1e9)
    );
}

#[test]
fn a_benchmark_that_imports_a_real_profiler_trace_records_its_gpu_busy_time() {
    // Recorded on an A100 (`testdata/traces/real/README.md`).
    let trace = testdata_dir().join("traces/real/hta_multistream_rank0.json.gz");
    let repo = CampaignRepo::new();
    // What `tally trace account` says of the same import, by hand.
    let artifact = repo.signals().join("by-hand.jsonl");
    let mut import = repo.bare_command(&[
        "trace",
        "import",
        "kineto",
        "-o",
        artifact.to_str().unwrap(),
        trace.to_str().unwrap(),
    ]);
    assert!(import.output().unwrap().status.success());
    let account = repo
        .bare_command(&["trace", "account", "--json", artifact.to_str().unwrap()])
        .output()
        .unwrap();
    let accounted: Value = serde_json::from_slice(&account.stdout).unwrap();
    let devices = accounted["device_totals"].as_array().unwrap();
    let busy_ns: u64 = devices.iter().map(|d| d["busy_ns"].as_u64().unwrap()).sum();
    assert_eq!(devices.len(), 1);
    assert!(busy_ns > 400_000_000, "{busy_ns}");

    repo.start_campaign(CONFIG, &format!("tok_s=1000\nkineto={}\n", trace.display()));
    let status = repo.status_json();
    let baseline = measurements(&status, 0);
    assert_eq!(baseline.len(), 3);
    for m in baseline {
        assert_eq!(m["error"], Value::Null);
        assert_eq!(m["gpu_busy_seconds"], Value::from(busy_ns as f64 / 1e9));
    }

    // The brief says where the head's GPU time went: the figures `tally trace account` prints
    // for the same import (busy 438.424 ms; top kernel 80 launches, 190.345 ms, 42.3 %).
    let out = repo.tally(&["brief"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let brief = text(&out.stdout);
    let section = &brief[brief
        .find("## Where the head's GPU time went")
        .expect("a GPU time section")..];
    assert!(
        section.contains("GPU busy 0.438 s of the sample's "),
        "{section}"
    );
    assert!(section.contains("over 1 device clock(s)"), "{section}");
    assert!(
        section.contains(
            "| kernel | launches | summed ms | share |\n|---|---|---|---|\n\
             | ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t | 80 | 190.345 | 42.3 % |\n\
             | cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_tn_al… | 6 | 46.599 | 10.4 % |\n"
        ),
        "{section}"
    );
    assert!(
        section.contains("86 more kernel name(s): 23.6 % of the summed kernel time."),
        "{section}"
    );
}

#[test]
fn without_evidence_the_brief_says_so_in_one_line() {
    let repo = CampaignRepo::new();
    repo.start_campaign(CONFIG, "tok_s=1000\n");
    let out = repo.tally(&["brief"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains(
            "## Where the head's GPU time went\n\nNo GPU evidence for the head (candidate#0): its \
             samples handed over no evidence file (`TALLY_EVIDENCE_FILE`, docs/evaluate-protocol.md).\n"
        ),
        "{}",
        text(&out.stdout)
    );
}
