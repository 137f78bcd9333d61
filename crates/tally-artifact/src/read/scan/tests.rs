//! Tests of the line scan: it reads what `serde_json` reads (fixed cases and generated lines),
//! leaves everything else to it, skips known contexts whole and finds plain references as
//! `wire::simple_ref` would.

use proptest::prelude::*;

use super::*;
use crate::read::wire::{self, Line};

/// What `serde_json` makes of a line, as comparable text (`None`: an error).
fn parsed(line: &str) -> Option<String> {
    match wire::parse_line(line) {
        Ok(Line::Object(w)) => Some(format!("{w:?}")),
        Ok(Line::NotObject) => Some("not an object".into()),
        Err(_) => None,
    }
}

fn scanned_ok(line: &str) -> Scanned<'_> {
    let mut out = Scanned::new(line);
    record(line, &mut out).unwrap_or_else(|| panic!("scanned: {line}"));
    out
}

fn scanned(line: &str) -> Option<String> {
    let mut out = Scanned::new(line);
    record(line, &mut out).map(|()| format!("{:?}", out.wire))
}

#[test]
fn the_scan_reads_what_serde_json_reads() {
    for line in [
        "{}",
        " {\t} \r",
        r#"{"event_id":"a","zz":1,"yy":2,"event_id":"b"}"#,
        r#"{"metadata": {"a": [1, -2.5e-3, {"b": null}], "c": "x\"\u00e9\\"}, "x": true}"#,
        r#"{"context":{"run_id":"r"},"context":{"k":[]},"start_ns":0,"end_ns":-0}"#,
        r#"{"a":"é✓😀","b":1E+9,"c":1e9,"d":0.5,"e":[[],{}],"f":"","g":"\/\b\f\n\r\t"}"#,
    ] {
        assert_eq!(scanned(line), parsed(line), "{line}");
        assert!(scanned(line).is_some(), "{line}");
    }
}

#[test]
fn the_scan_leaves_other_lines_to_serde_json() {
    let deep = format!("{{\"a\":{}1{}}}", "[".repeat(120), "]".repeat(120));
    for line in [
        "[1]",
        "1",
        "",
        "\u{feff}{}",
        "{} x",
        "{,}",
        r#"{"a":1,}"#,
        r#"{"a" 1}"#,
        r#"{"\u0061":1}"#,
        r#"{"a":NaN}"#,
        r#"{"a":01}"#,
        r#"{"a":1.}"#,
        r#"{"a":1e}"#,
        r#"{"a":-}"#,
        r#"{"a":"\x"}"#,
        r#"{"a":"\u12g4"}"#,
        "{\"a\":\"\u{1}\"}",
        r#"{"a":[1,]}"#,
        r#"{"a":{"b":1,}}"#,
        r#"{"a":{1:2}}"#,
        r#"{"a":tru}"#,
        r#"{"a":"unterminated}"#,
        &deep,
    ] {
        assert_eq!(scanned(line), None, "{line}");
    }
}

#[test]
fn a_known_context_is_skipped_whole() {
    const CTX: &str = r#"{"run_id":"r","session_id":"s","producer_id":"p","source":"x","clock_domain":"d","clock_kind":"wall","collection_mode":"active","provenance":"observed"}"#;
    let ctx = known::shared_context(CTX, false).unwrap();
    let line = format!(r#"{{"a":1, "context": {CTX} ,"b":2}}"#);
    let Scanned {
        wire: w,
        known_context: found,
        ..
    } = scanned_ok(&line);
    assert!(Arc::ptr_eq(&found.unwrap(), &ctx));
    assert_eq!(w.get(Key::Context), Some(CTX));
    assert_eq!(Some(format!("{w:?}")), parsed(&line));
    // The last occurrence decides; an unknown or non-object one is scanned.
    let line = format!(r#"{{"context":{CTX},"context":{{"run_id":"q"}}}}"#);
    assert!(scanned_ok(&line).known_context.is_none());
    let line = format!(r#"{{"context":{CTX},"context":5}}"#);
    assert!(scanned_ok(&line).known_context.is_none());
    let line = format!(r#"{{"context":{{"x":{CTX}}}}}"#);
    assert!(scanned_ok(&line).known_context.is_none());
    // A known text followed by more members of the same object is another object.
    let longer = format!("{},\"x\":1}}", &CTX[..CTX.len() - 1]);
    let line = format!(r#"{{"context":{longer}}}"#);
    let Scanned {
        wire: w,
        known_context: found,
        ..
    } = scanned_ok(&line);
    assert!(found.is_none());
    assert_eq!(w.get(Key::Context), Some(longer.as_str()));
}

#[test]
fn plain_references_are_found_as_simple_ref_finds_them() {
    let values = [
        r#"{"id": "I1", "producer_id": "eng"}"#,
        r#"{ "producer_id":"p" ,"id":"" }"#,
        r#"{"id":"é","producer_id":"✓"}"#,
        r#"{"id": "I1"}"#,
        r#"{"id": "I1", "id": "I2"}"#,
        r#"{"id": "I\"1", "producer_id": "eng"}"#,
        r#"{"id": 1, "producer_id": "eng"}"#,
        r#"{"id": "I1", "producer_id": "eng", "x": 1}"#,
        r#"{"\u0069d": "I1", "producer_id": "eng"}"#,
        r#"{"idx": "I1", "producer_id": "eng"}"#,
        "{}",
        "null",
        "[1]",
    ];
    for value in values {
        let line = format!(r#"{{"a": 1, "request_ref": {value}, "b": 2}}"#);
        let scanned = scanned_ok(&line);
        let raw = scanned.wire.get(Key::RequestRef).unwrap();
        let expected = raw
            .starts_with('{')
            .then(|| wire::simple_ref(raw))
            .flatten();
        assert_eq!(scanned.plain_refs.get(0, &line), expected, "{line}");
        assert_eq!(Some(format!("{:?}", scanned.wire)), parsed(&line), "{line}");
    }
    // The last occurrence of a key decides.
    let line = r#"{"iteration_ref": {"id": "a", "producer_id": "p"}, "iteration_ref": null}"#;
    assert_eq!(scanned_ok(line).plain_refs.get(3, line), None);
    let line = r#"{"iteration_ref": 5, "iteration_ref": {"producer_id": "p", "id": "b"}}"#;
    assert_eq!(scanned_ok(line).plain_refs.get(3, line), Some(("p", "b")));
}

/// Lines built from record keys, unknown keys and values both valid and broken.
fn line() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        prop::sample::select(vec![
            "schema_version",
            "event_type",
            "context",
            "event_id",
            "metadata",
            "start_ns",
            "zz",
            "",
        ])
        .prop_map(|k| format!("\"{k}\"")),
        Just(r#""\u0065vent_id""#.to_string()),
    ];
    let value = prop::sample::select(vec![
        "1",
        "-0",
        "0.5",
        "1e5",
        "-1E-2",
        "01",
        "1.",
        "-",
        "true",
        "nul",
        "null",
        "\"s\"",
        r#""a\"b""#,
        r#""\u00e9""#,
        r#""\q""#,
        "\"é\"",
        "[]",
        "[1, [2]]",
        "[1,]",
        "{}",
        r#"{"a": {"b": [null]}}"#,
        r#"{"a" 1}"#,
        "NaN",
        "\"\t\"",
        "",
    ]);
    let member = (key, " ?", value).prop_map(|(k, sp, v)| format!("{k}{sp}:{sp}{v}"));
    (
        prop::collection::vec(member, 0..6),
        " ?",
        prop::sample::select(vec!["", ",", " x"]),
    )
        .prop_map(|(members, sp, tail)| format!("{sp}{{{}}}{tail}", members.join(",")))
}

proptest! {
    #[test]
    fn the_scan_never_disagrees_with_serde_json(line in line()) {
        if let Some(scanned) = scanned(&line) {
            prop_assert_eq!(Some(scanned), parsed(&line), "{}", line);
        }
    }
}

#[test]
fn valid_generated_lines_are_scanned_unless_a_key_has_an_escape() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let mut valid = 0;
    for _ in 0..2000 {
        let line = line().new_tree(&mut runner).unwrap().current();
        if parsed(&line).is_some() && !line.contains(r#""\u0065"#) {
            valid += 1;
            assert!(scanned(&line).is_some(), "{line}");
        }
    }
    assert!(valid > 100, "{valid}");
}
