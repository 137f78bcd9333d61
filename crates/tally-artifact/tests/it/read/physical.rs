//! The physical layer (line ends, blank lines, UTF-8, BOM) and the Python-isms decided in
//! `tally_artifact::read`'s module docs (NaN, duplicate keys, big integers, legacy records).

use tally_evidence::{BusyIntervals, CorrelationEvent, Error, EventBody, InferenceRecord};

use super::{ACTIVITY, CTX, ITERATION, error, read, read_with, record, v2};

fn one(text: &str) -> InferenceRecord {
    let mut records = read(text).unwrap();
    assert_eq!(records.len(), 1, "{text}");
    records.pop().unwrap().1
}

fn event(text: &str) -> CorrelationEvent {
    match one(text) {
        InferenceRecord::Event(e) => e,
        InferenceRecord::Legacy(_) => panic!("an event expected: {text}"),
    }
}

fn lines_of(text: &str) -> Vec<u64> {
    read(text)
        .unwrap()
        .into_iter()
        .map(|(line, _)| line)
        .collect()
}

#[test]
fn line_numbers_count_every_physical_line() {
    let it = v2("infer.iteration", ITERATION);
    let text = format!("\n{it}\r\n \t\u{a0}\u{3000}\x1c\r{it}\r\r\n{it}\n\n");
    assert_eq!(lines_of(&text), [2, 4, 6]);
    assert_eq!(
        error(&format!("{text}{{not json")),
        format!("t: line 8: key must be a string at line 1 column 2")
    );
    // A lone `\r` ends a line, so a record split by one is two bad lines.
    let split = it.replacen(',', ",\r", 1);
    assert!(error(&split).starts_with("t: line 1: "));
    // No terminator at the end is fine.
    assert_eq!(lines_of(&format!("{it}\n{it}")), [1, 2]);
    // Conformance case 10's shape, inline.
    assert!(error(&format!("\n{it}\n   \n{{not json\n")).starts_with("t: line 4: "));
}

#[test]
fn invalid_utf8_names_its_line_and_offset() {
    let it = v2("infer.iteration", ITERATION);
    let mut bytes = format!("{it}\n\n").into_bytes();
    let offset = bytes.len() + 3;
    bytes.extend_from_slice(b"{\"a\xff\":1}\n");
    let e = read_with(&bytes, &super::options(1 << 20, 1)).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "t: line 3: invalid UTF-8 at byte offset {offset}: the artifact must be UTF-8 text; \
             re-encode it as UTF-8"
        )
    );
    // The first failing line wins even if a later line has the UTF-8 problem.
    let mut bytes = b"[]\n".to_vec();
    bytes.extend_from_slice(b"\xc3\x28\n");
    assert_eq!(
        read_with(&bytes, &super::options(1, 2))
            .unwrap_err()
            .to_string(),
        "t: line 1: record must be an object"
    );
}

#[test]
fn a_byte_order_mark_is_a_json_error() {
    let it = v2("infer.iteration", ITERATION);
    assert_eq!(
        error(&format!("\u{feff}{it}")),
        "t: line 1: Unexpected UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)"
    );
    assert!(error(&format!("{it}\n\u{feff}")).starts_with("t: line 2: Unexpected UTF-8 BOM"));
}

#[test]
fn nan_and_infinity_are_floats_kept_in_metadata() {
    let meta = r#"{"x": NaN, "y": [Infinity, -Infinity], "s": "NaN"}"#;
    let line = v2(
        "infer.iteration",
        &format!("{ITERATION},\"metadata\":{meta}"),
    );
    let records = read(&line).unwrap();
    let InferenceRecord::Event(e) = &records[0].1 else {
        panic!()
    };
    assert_eq!(e.metadata().json_text(), meta);
    let map = e.metadata().to_map();
    assert_eq!(map.len(), 3);
    assert_eq!(map["s"], "NaN");
    // Equal metadata by value: the same line twice has one fingerprint.
    let again = read(&line).unwrap();
    assert_eq!(records, again);
    // In a typed field they are floats, refused with the field's message.
    let bad = v2(
        "infer.iteration",
        r#""iteration_ref":{"producer_id":"e","id":"I"},"start_ns":NaN"#,
    );
    assert_eq!(
        error(&bad),
        "t: line 1: start_ns must be a non-negative integer or null"
    );
    let bad = v2(
        "infer.iteration",
        r#""iteration_ref":{"producer_id":"e","id":"I"},"end_ns":-Infinity"#,
    );
    assert_eq!(
        error(&bad),
        "t: line 1: end_ns must be a non-negative integer or null"
    );
    assert_eq!(
        error(r#"{"schema_version":NaN,"event_type":"infer.iteration"}"#),
        "t: line 1: schema_version must be an integer"
    );
    // Legacy records keep them verbatim.
    let legacy = r#"{"event_type":"infer.summary","v":NaN}"#;
    let InferenceRecord::Legacy(l) = one(legacy) else {
        panic!()
    };
    assert_eq!(&*l.json, legacy);
    // A word that is not a literal stays a JSON error.
    assert!(error(r#"{"x": NaNa}"#).starts_with("t: line 1: "));
    // An invalid escape of a multi-byte character next to a literal is a JSON error, not a
    // panic (found by fuzzing).
    assert!(error("{\"x\": \"\\\u{e9}\", \"y\": NaN}").starts_with("t: line 1: "));
}

#[test]
fn duplicate_keys_keep_the_last_value() {
    let line = v2(
        "infer.iteration",
        &format!(r#"{ITERATION},"start_ns":-5,"start_ns":3,"metadata":null,"metadata":{{"k":1}}"#),
    );
    let e = event(&line);
    let EventBody::Iteration(it) = e.body() else {
        panic!()
    };
    assert_eq!((it.start_ns, it.end_ns), (Some(3), Some(10)));
    let line = v2(
        "infer.iteration",
        &format!(r#"{ITERATION},"start_ns":3,"start_ns":-5"#),
    );
    assert_eq!(
        error(&line),
        "t: line 1: start_ns must be a non-negative integer or null"
    );
}

#[test]
fn a_known_context_text_elsewhere_in_the_line_changes_nothing() {
    // Warm this thread's context cache, then put the same context text in metadata, before the
    // real one, and repeat the `context` key with another context (the last one wins).
    let plain = v2("infer.iteration", ITERATION);
    let other = CTX.replace(r#""run_id":"r""#, r#""run_id":"r2""#);
    let nested = plain.replacen(
        r#""schema_version":2"#,
        &format!(r#""metadata":{{"context":{CTX}}},"schema_version":2"#),
        1,
    );
    let repeated = format!("{},\"context\":{other}}}", &plain[..plain.len() - 1]);
    let text = format!("{plain}\n{nested}\n{repeated}\n");
    let records = read(&text).unwrap();
    let events: Vec<&CorrelationEvent> = records
        .iter()
        .map(|(_, r)| match r {
            InferenceRecord::Event(e) => e,
            InferenceRecord::Legacy(_) => panic!(),
        })
        .collect();
    assert_eq!(&*events[0].context().run_id, "r");
    assert_eq!(
        events[1].metadata().json_text(),
        format!(r#"{{"context":{CTX}}}"#)
    );
    assert_eq!(&*events[1].context().run_id, "r");
    assert_eq!(&*events[2].context().run_id, "r2");
}

#[test]
fn integers_beyond_the_model_are_out_of_range() {
    let it = |v: &str| {
        v2(
            "infer.iteration",
            &format!(r#""iteration_ref":{{"producer_id":"e","id":"I"}},"start_ns":{v}"#),
        )
    };
    for v in [
        "9223372036854775808",
        "1180591620717411303424",
        &"9".repeat(50),
    ] {
        let e = read(&it(v)).unwrap_err();
        let Error::OutOfRange { .. } = &e else {
            panic!("{e}")
        };
        assert_eq!(
            e.to_string(),
            format!(
                "t: line 1: start_ns {v} is out of range: tally holds it as signed 64-bit \
                 nanoseconds (at most 9223372036854775807); the reference accepts it, tally \
                 refuses rather than wrap: fix the value at its producer"
            )
        );
    }
    // The largest values that fit are read exactly.
    let e = event(&it("9223372036854775807"));
    let EventBody::Iteration(b) = e.body() else {
        panic!()
    };
    assert_eq!(b.start_ns, Some(i64::MAX));
    let ctx = CTX.replace('}', r#","pid":18446744073709551615}"#);
    let e = event(&record(2, "infer.iteration", &ctx, ITERATION));
    assert_eq!(e.context().pid, Some(u64::MAX));
    let ctx = CTX.replace('}', r#","pid":18446744073709551616}"#);
    let e = read(&record(2, "infer.iteration", &ctx, ITERATION)).unwrap_err();
    assert!(matches!(e, Error::OutOfRange { .. }), "{e}");
    assert!(e.to_string().starts_with("t: line 1: pid 18446744073709551616 is out of range: tally holds it as an unsigned 64-bit integer"));
    // A negative integer of any size gets the reference's message; offsets are signed.
    assert_eq!(
        error(&it(&format!("-{}", "9".repeat(40)))),
        "t: line 1: start_ns must be a non-negative integer or null"
    );
    let align = |v: &str| {
        v2(
            "infer.clock_alignment",
            &format!(
                r#""from_clock_domain":"a","to_clock_domain":"b","offset_ns":{v},"uncertainty_ns":0"#
            ),
        )
    };
    assert!(read(&align("-9223372036854775808")).is_ok());
    assert!(matches!(
        read(&align("-9223372036854775809")),
        Err(Error::OutOfRange { .. })
    ));
    // -0 is the integer 0; 1e3 and 1.0 are floats.
    let e = event(&it("-0"));
    let EventBody::Iteration(b) = e.body() else {
        panic!()
    };
    assert_eq!(b.start_ns, Some(0));
    assert_eq!(
        error(&it("1e3")),
        "t: line 1: start_ns must be a non-negative integer or null"
    );
    assert_eq!(
        error(&it("1.0")),
        "t: line 1: start_ns must be a non-negative integer or null"
    );
}

#[test]
fn legacy_records_are_kept_verbatim() {
    let text = concat!(
        "  {\"event_type\": \"infer.request\", \"schema_version\": 1, \"context\": 5, \"event_id\": []}  \n",
        "{\"event_type\":\"infer.summary\"}\n",
    );
    let records = read(text).unwrap();
    let jsons: Vec<&str> = records
        .iter()
        .map(|(_, r)| match r {
            InferenceRecord::Legacy(l) => &*l.json,
            InferenceRecord::Event(_) => panic!("legacy expected"),
        })
        .collect();
    assert_eq!(
        jsons,
        [
            "{\"event_type\": \"infer.request\", \"schema_version\": 1, \"context\": 5, \"event_id\": []}",
            "{\"event_type\":\"infer.summary\"}"
        ]
    );
}

#[test]
fn v3_intervals_are_parsed() {
    let line = record(
        3,
        "infer.activity_ref",
        CTX,
        &format!(r#"{ACTIVITY},"metadata":{{"intervals":[[0,30],[50,50]],"n":1}}"#),
    );
    let e = event(&line);
    let EventBody::Activity(a) = e.body() else {
        panic!()
    };
    assert_eq!(a.intervals, BusyIntervals::List(vec![(0, 30), (50, 50)]));
    assert_eq!(e.schema_version(), 3);
    let line = record(
        3,
        "infer.activity_ref",
        CTX,
        &format!(r#"{ACTIVITY},"metadata":{{"intervals":null}}"#),
    );
    let e = event(&line);
    let EventBody::Activity(a) = e.body() else {
        panic!()
    };
    assert_eq!(a.intervals, BusyIntervals::Null);
}

#[test]
fn lone_surrogates_compare_but_are_not_kept() {
    // In a legacy record (never validated) and in a type check they behave as in Python.
    assert!(read(r#"{"event_type":"infer.x\ud800","schema_version":1}"#).is_ok());
    assert_eq!(
        error(r#"{"event_type":"infer.x\ud800","schema_version":2}"#),
        "t: line 1: unsupported inference event_type: infer.x\u{fffd}"
    );
    // A kept text refuses them.
    let line =
        v2("infer.iteration", ITERATION).replace(r#""event_id":"e""#, r#""event_id":"a\udc00""#);
    assert_eq!(
        error(&line),
        "t: line 1: event_id contains the lone surrogate escape \\udc00, which tally cannot \
         represent: write the text as valid UTF-8"
    );
    // A valid pair is one character.
    let line = v2("infer.iteration", ITERATION)
        .replace(r#""event_id":"e""#, r#""event_id":"\ud83d\ude00""#);
    let e = event(&line);
    assert_eq!(e.event_id(), "\u{1f600}");
}
