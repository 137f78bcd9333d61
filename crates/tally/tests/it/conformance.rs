//! Every case in `testdata/conformance/evidence/` through the real binary: the JSON output must
//! equal the reference's expected output as a JSON value; a refused input must exit 1 with nothing
//! on stdout and exactly one line `error: <FILE>: <message>` on stderr.

use serde_json::Value;

use crate::support::{stderr, stdout, tally, testdata_dir};

/// Cases whose error is a JSON syntax error: only the `line N: ` prefix must match.
const SYNTAX_CASES: &[&str] = &["10-line-numbers"];

#[test]
fn every_conformance_case_matches_the_reference() {
    let dir = testdata_dir().join("conformance/evidence");
    let mut cases: Vec<_> = std::fs::read_dir(&dir)
        .expect("conformance dir")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    cases.sort();
    assert!(
        cases.len() >= 18,
        "the whole suite must run, found {} cases",
        cases.len()
    );
    let mut failures = Vec::new();
    for case in &cases {
        let name = case.file_stem().unwrap().to_string_lossy().to_string();
        let expected: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join(format!("{name}.expected.json"))).unwrap(),
        )
        .unwrap();
        let file = case.to_str().unwrap();
        let out = tally(&["trace", "account", "--json", file]);
        if let Some(message) = expected.get("error").and_then(Value::as_str) {
            let err = stderr(&out);
            let want = if SYNTAX_CASES.contains(&name.as_str()) {
                let prefix_end = message.find(": ").unwrap() + 2;
                format!("error: {file}: {}", &message[..prefix_end])
            } else {
                format!("error: {file}: {message}")
            };
            let ok = out.status.code() == Some(1)
                && out.stdout.is_empty()
                && err.lines().count() == 1
                && if SYNTAX_CASES.contains(&name.as_str()) {
                    err.starts_with(&want)
                } else {
                    err.trim_end() == want
                };
            if !ok {
                failures.push(format!(
                    "{name}: want exit 1 and `{want}`, got exit {:?}, stdout {:?}, stderr {err:?}",
                    out.status.code(),
                    stdout(&out)
                ));
            }
        } else {
            if out.status.code() != Some(0) {
                failures.push(format!(
                    "{name}: exit {:?}: {}",
                    out.status.code(),
                    stderr(&out)
                ));
                continue;
            }
            let got: Value =
                serde_json::from_str(&stdout(&out)).expect("stdout is one JSON object");
            if got != expected {
                failures.push(format!(
                    "{name}: output differs\n got:  {got}\n want: {expected}"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
