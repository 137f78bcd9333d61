//! Compatibility with the reference itself (stormlog 0.4.3), not remembered: when
//! `TALLY_REFERENCE_PYTHON` names a Python with stormlog installed (`.ci/run` sets one up), the
//! reference accounts tally's generated traces and tally's converted artifacts, and must print
//! exactly what `tally trace account --json` prints. Without it these tests say so and pass, so a
//! bare machine without network still runs the rest of the suite.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::support::{stderr, stdout, tally};

/// The reference's Python, or `None` (and a note on stderr) when it is not installed here.
#[allow(clippy::print_stderr)]
fn reference_python() -> Option<PathBuf> {
    let Some(python) = std::env::var_os("TALLY_REFERENCE_PYTHON") else {
        eprintln!("TALLY_REFERENCE_PYTHON not set: reference compatibility not checked here");
        return None;
    };
    Some(PathBuf::from(python))
}

fn reference_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../bench/evidence/reference.py")
}

fn reference_json(python: &Path, files: &[&Path]) -> Value {
    let out = Command::new(python)
        .arg(reference_script())
        .args(files)
        .output()
        .expect("the reference runs");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "reference output is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn tally_json(files: &[&Path]) -> Value {
    let mut args = vec!["trace", "account", "--json"];
    args.extend(files.iter().map(|p| p.to_str().unwrap()));
    let out = tally(&args);
    if out.status.code() != Some(0) {
        let err = stderr(&out);
        // The reference's error objects carry the message without `error: FILE: `.
        return serde_json::json!({"error": err.trim_end().to_string()});
    }
    serde_json::from_str(&stdout(&out)).unwrap()
}

fn synth(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let path = dir.join(name);
    let mut all = vec!["trace", "synth", "-o", path.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = tally(&all);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    path
}

#[test]
fn the_reference_accounts_generated_traces_exactly_as_tally_does() {
    let Some(python) = reference_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        synth(
            dir.path(),
            "v2.jsonl",
            &["--requests", "300", "--seed", "3"],
        ),
        synth(
            dir.path(),
            "v4-dup-shuffle.jsonl",
            &[
                "--requests",
                "300",
                "--seed",
                "4",
                "--form",
                "v4",
                "--duplicates",
                "0.05",
                "--shuffle",
            ],
        ),
        synth(
            dir.path(),
            "legacy.jsonl",
            &[
                "--requests",
                "200",
                "--seed",
                "5",
                "--legacy",
                "50",
                "--duplicates",
                "0.02",
            ],
        ),
    ];
    for case in &cases {
        let ours = tally_json(&[case]);
        assert!(ours.get("error").is_none(), "{}: {ours}", case.display());
        assert_eq!(ours, reference_json(&python, &[case]), "{}", case.display());
    }
}

#[test]
fn the_reference_reads_what_tally_writes() {
    let Some(python) = reference_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let input = synth(
        dir.path(),
        "in.jsonl",
        &["--requests", "200", "--seed", "9", "--shuffle"],
    );
    let expected = tally_json(&[&input]);
    for form in ["v2", "v4"] {
        let out_path = dir.path().join(format!("out-{form}.jsonl"));
        let out = tally(&[
            "trace",
            "convert",
            input.to_str().unwrap(),
            "--to",
            form,
            "-o",
            out_path.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(reference_json(&python, &[&out_path]), expected, "{form}");
    }
    // Several files resolve as one artifact in both tools.
    let text = std::fs::read_to_string(&input).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let (a, b) = lines.split_at(lines.len() / 2);
    let pa = dir.path().join("a.jsonl");
    let pb = dir.path().join("b.jsonl");
    std::fs::write(&pa, a.join("\n")).unwrap();
    std::fs::write(&pb, b.join("\n")).unwrap();
    assert_eq!(reference_json(&python, &[&pa, &pb]), expected);
}

/// Which error a broken artifact gets: the reference reads every file before it resolves, so a
/// line that cannot be read beats an earlier conflict, in the same file or in a later one.
#[test]
fn the_reference_and_tally_report_the_same_first_error() {
    let Some(python) = reference_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let input = synth(
        dir.path(),
        "in.jsonl",
        &["--requests", "200", "--seed", "11"],
    );
    let text = std::fs::read_to_string(&input).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let iteration = lines
        .iter()
        .position(|l| l.contains("\"infer.iteration\""))
        .expect("an iteration record");
    let conflicting = lines[iteration].replacen("\"num_members\": ", "\"num_members\": 9", 1);
    lines.insert(iteration + 1, conflicting);
    let write = |name: &str, lines: &[String]| {
        let path = dir.path().join(name);
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        path
    };
    let conflict = write("conflict.jsonl", &lines);
    let mut with_bad_line = lines.clone();
    with_bad_line.insert(lines.len() / 2, "{\"schema_version\": 2}".to_owned());
    let bad_later = write("bad-later.jsonl", &with_bad_line);
    // A record the reader refuses (JSON syntax errors are worded by each host's parser).
    let bad = write("bad.jsonl", &["{\"schema_version\": 2}".to_owned()]);
    for files in [
        vec![conflict.as_path()],
        vec![bad_later.as_path()],
        vec![conflict.as_path(), bad.as_path()],
        vec![bad.as_path(), conflict.as_path()],
    ] {
        let ours = tally_json(&files);
        let theirs = reference_json(&python, &files);
        let (Some(ours), Some(theirs)) = (ours["error"].as_str(), theirs["error"].as_str()) else {
            panic!("both refuse {files:?}: {ours} / {theirs}");
        };
        // tally names the file too: `error: FILE: line N: message`.
        assert!(
            ours.ends_with(&format!(": {theirs}")),
            "{files:?}: tally `{ours}`, reference `{theirs}`"
        );
    }
}
