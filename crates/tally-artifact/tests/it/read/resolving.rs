//! `read::resolve_input` resolves exactly what pushing every record of `for_each_record` into a
//! resolver does: the same graph and accounting, or the same first error, on the conformance
//! files, generated traces (duplicates and shuffled delivery included) and broken variants —
//! except that a line that cannot be read wins over an earlier conflict, as in the reference,
//! which reads the whole file first; and `read::parse_json_lines`, the measurement floor, counts
//! JSON lines and names the first bad one.

use std::path::Path;

use tally_artifact::read::{
    Input, ReadOptions, for_each_record, resolve_input, resolve_input_with,
};
use tally_artifact::write::ArtifactForm;
use tally_evidence::{CorrelationGraph, Resolver, account_gpu_time};
use tally_synth::{Delivery, Scenario, write_artifact};

use super::conformance_dir;

/// What a resolution gives, as comparable text.
fn outcome(result: tally_evidence::Result<CorrelationGraph>) -> String {
    match result {
        Err(e) => format!("error: {e}"),
        Ok(graph) => {
            let memberships: Vec<&str> = graph
                .memberships()
                .iter()
                .map(|m| &**m.event_id())
                .collect();
            let kept: Vec<&str> = graph.requests().iter().map(|r| &**r.event_id()).collect();
            format!(
                "run {:?}\ncounts {:?}\nunresolved {:?}\nmemberships {memberships:?}\n\
                 requests {kept:?}\naccounting {:?}",
                graph.run_id(),
                graph.counts(),
                graph.unresolved(),
                account_gpu_time(&graph),
            )
        }
    }
}

fn pushed(path: &Path) -> String {
    let mut resolver = Resolver::new();
    let read = for_each_record(&Input::Path(path.to_path_buf()), |origin, record| {
        resolver.push(record, origin)
    });
    outcome(read.map(|()| resolver.finish()))
}

fn resolved(path: &Path) -> String {
    let mut resolver = Resolver::new();
    let read = resolve_input(&Input::Path(path.to_path_buf()), &mut resolver);
    outcome(read.map(|()| resolver.finish()))
}

#[test]
fn conformance_files_resolve_as_when_pushed() {
    let mut files: Vec<_> = std::fs::read_dir(conformance_dir())
        .expect("the conformance folder")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    assert!(files.len() >= 18, "{files:?}");
    for file in files {
        assert_eq!(resolved(&file), pushed(&file), "{}", file.display());
    }
}

/// `scenario` written in `dir` twice, as `v2.jsonl` in order and as `v4.jsonl` with `duplicates`
/// redelivered and delivery shuffled within `shuffle_window` records: `(name, path)`.
fn generated_traces(
    dir: &Path,
    scenario: &Scenario,
    duplicates: f64,
    shuffle_window: usize,
) -> Vec<(&'static str, std::path::PathBuf)> {
    let shuffled = Delivery {
        duplicates,
        shuffle: true,
        shuffle_window,
        ..Delivery::default()
    };
    [
        ("v2.jsonl", Delivery::default(), ArtifactForm::V2),
        ("v4.jsonl", shuffled, ArtifactForm::V4),
    ]
    .into_iter()
    .map(|(name, delivery, form)| {
        let path = dir.join(name);
        write_artifact(scenario, &delivery, form, &path).expect("the trace is written");
        (name, path)
    })
    .collect()
}

/// An iteration record under the same identity with other content (its member count prefixed
/// with a 9): a conflicting redelivery.
fn conflicting_copy(iteration_line: &str) -> String {
    let conflicting = iteration_line.replacen("\"num_members\": ", "\"num_members\": 9", 1);
    assert_ne!(
        conflicting, iteration_line,
        "an iteration record with a member count"
    );
    conflicting
}

#[test]
fn generated_traces_resolve_as_when_pushed() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    for (name, path) in generated_traces(dir.path(), &Scenario::new(3, 300), 0.05, 512) {
        let expected = pushed(&path);
        assert!(expected.starts_with("run Some"), "{expected}");
        assert_eq!(resolved(&path), expected, "{name}");

        // A conflicting redelivery half-way: the conflict, either way.
        let text = std::fs::read_to_string(&path).expect("the trace");
        let lines: Vec<&str> = text.lines().collect();
        let event = lines
            .iter()
            .find(|l| l.contains("\"infer.iteration\""))
            .expect("an iteration record");
        let conflicting = conflicting_copy(event);
        let mut broken = lines.clone();
        broken.insert(lines.len() / 2, &conflicting);
        let broken_path = dir.path().join(format!("conflict-{name}"));
        std::fs::write(&broken_path, broken.join("\n")).expect("written");
        let expected = pushed(&broken_path);
        assert!(
            expected.contains("conflicting event identity"),
            "{expected}"
        );
        assert_eq!(resolved(&broken_path), expected, "conflict {name}");

        // Then a line that cannot be read, further on: pushing stops at the conflict; resolving
        // the input reads on and reports the line, as the reference does.
        broken.insert(lines.len() / 2 + 5, "{not json");
        std::fs::write(&broken_path, broken.join("\n")).expect("written");
        assert!(pushed(&broken_path).contains("conflicting event identity"));
        let line = lines.len() / 2 + 6;
        let read_first = resolved(&broken_path);
        assert!(
            read_first.contains(&format!("line {line}: ")) && !read_first.contains("conflicting"),
            "{read_first}"
        );
    }
}

/// Read errors come first however the file is cut into batches: in the conflict's own batch,
/// in a later one, or in the last line of the file.
#[test]
fn a_line_that_cannot_be_read_wins_over_an_earlier_conflict_in_any_batch() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let (_, path) = generated_traces(dir.path(), &Scenario::new(6, 300), 0.0, 1)
        .into_iter()
        .next()
        .expect("the v2 trace");
    let text = std::fs::read_to_string(&path).expect("the trace");
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let event = lines
        .iter()
        .position(|l| l.contains("\"infer.iteration\""))
        .expect("an iteration record");
    let conflicting = conflicting_copy(&lines[event]);
    lines.insert(event + 1, conflicting);
    let total = lines.len();
    for bad_line in [event + 3, total / 2, total + 1] {
        let mut broken = lines.clone();
        broken.insert(bad_line - 1, "{\"event_type\": 3}".to_owned());
        let broken_path = dir.path().join(format!("broken-{bad_line}.jsonl"));
        std::fs::write(&broken_path, broken.join("\n")).expect("written");
        for batch_bytes in [1 << 10, 64 << 10, 16 << 20] {
            let options = ReadOptions {
                batch_bytes,
                ..ReadOptions::default()
            };
            let mut resolver = Resolver::new();
            let read =
                resolve_input_with(&Input::Path(broken_path.clone()), &options, &mut resolver);
            let e = read.expect_err("the file cannot be read");
            assert!(!e.is_resolution(), "{bad_line}, {batch_bytes}: {e}");
            assert_eq!(
                e.origin().and_then(|o| o.line),
                Some(bad_line as u64),
                "{bad_line}, {batch_bytes}: {e}"
            );
        }
    }
    // Without the bad line, the conflict (on the line after the original).
    std::fs::write(&path, lines.join("\n")).expect("written");
    let mut resolver = Resolver::new();
    let e = resolve_input(&Input::Path(path), &mut resolver).expect_err("a conflict");
    assert!(e.is_resolution(), "{e}");
    assert_eq!(e.origin().and_then(|o| o.line), Some(event as u64 + 2));
}

/// Many small batches of a trace with thousands of entries per table (so that tables span
/// several storage chunks): nothing changes.
#[test]
fn traces_read_in_small_batches_resolve_as_when_pushed() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let options = ReadOptions {
        batch_bytes: 96 << 10,
        ..ReadOptions::default()
    };
    for (name, path) in generated_traces(dir.path(), &Scenario::new(5, 1400), 0.03, 4096) {
        let expected = pushed(&path);
        let members: usize = expected
            .lines()
            .find_map(|l| l.split("memberships: ").nth(1))
            .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|n| n.parse().ok())
            .expect("a membership count");
        assert!(
            members > 2 * 4096,
            "several chunks of memberships: {members}"
        );
        let mut resolver = Resolver::new();
        let read = resolve_input_with(&Input::Path(path.clone()), &options, &mut resolver);
        assert_eq!(
            outcome(read.map(|()| resolver.finish())),
            expected,
            "{name}"
        );
    }
}

#[test]
fn json_lines_are_counted_and_the_first_bad_one_named() {
    use tally_artifact::read::parse_json_lines;
    let dir = conformance_dir();
    let input = |name: &str| Input::Path(dir.join(name));
    assert_eq!(parse_json_lines(&input("01-overlap.jsonl")).unwrap(), 5);
    let e = parse_json_lines(&input("10-line-numbers.jsonl")).unwrap_err();
    assert!(e.to_string().contains("line 4: "), "{e}");

    let tmp = tempfile::tempdir().expect("a temporary folder");
    let path = tmp.path().join("mixed.jsonl");
    // Blank lines do not count; `NaN` is read as the reference reads it; a non-object is JSON.
    std::fs::write(
        &path,
        "{\"a\": NaN}\n\n  \n[1, 2]\n{\"b\": {}}\n{\"c\": 1,}\n{]\n",
    )
    .unwrap();
    let e = parse_json_lines(&Input::Path(path.clone())).unwrap_err();
    assert!(e.to_string().contains("line 6: "), "{e}");
    std::fs::write(&path, "{\"a\": NaN}\n\n  \n[1, 2]\n{\"b\": {}}\n").unwrap();
    assert_eq!(parse_json_lines(&Input::Path(path)).unwrap(), 3);
}
