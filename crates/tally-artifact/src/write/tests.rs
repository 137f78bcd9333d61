//! Exact-byte tests of the writer. Every expected line below was written by hand from
//! `docs/evidence.md#wire-format` and `docs/evidence.md#reader-api` (sorted keys, `", "`/`": "`, `ensure_ascii`), and the context ids were
//! computed with the reference's own formula in Python.

use std::sync::Arc;

use super::python_json::{self, Separators};
use super::*;
use tally_evidence::model::*;

/// Engine context: producer `eng`, monotonic, passive, reported, host `h1`, pid 7.
const E: &str = r#"{"backend": null, "backend_version": null, "clock_domain": "w/mono", "clock_kind": "monotonic", "collection_mode": "passive", "device_uuid": null, "engine": null, "engine_version": null, "host": "h1", "local_rank": null, "pid": 7, "producer_id": "eng", "provenance": "reported", "rank": null, "run_id": "r", "session_id": "s", "source": "vllm", "source_version": null, "world_size": null}"#;
const E_ID: &str = "ctx-c87c218ffa8614e3";
/// Trace context: producer `tr`, device clock, GPU-A, rank 0 of 2.
const T: &str = r#"{"backend": null, "backend_version": null, "clock_domain": "w/mono", "clock_kind": "device", "collection_mode": "imported", "device_uuid": "GPU-A", "engine": null, "engine_version": null, "host": "h1", "local_rank": 0, "pid": null, "producer_id": "tr", "provenance": "observed", "rank": 0, "run_id": "r", "session_id": "s", "source": "kineto", "source_version": null, "world_size": 2}"#;
const T_ID: &str = "ctx-b6f473963d8b4092";

fn base_context(producer: &str) -> CorrelationContext {
    CorrelationContext {
        run_id: "r".into(),
        session_id: "s".into(),
        producer_id: producer.into(),
        source: "src".into(),
        clock_domain: "cd".into(),
        clock_kind: ClockKind::Monotonic,
        collection_mode: CollectionMode::Active,
        provenance: Provenance::Observed,
        source_version: None,
        engine: None,
        engine_version: None,
        backend: None,
        backend_version: None,
        host: None,
        device_uuid: None,
        pid: None,
        rank: None,
        local_rank: None,
        world_size: None,
    }
}

fn engine_context() -> Arc<CorrelationContext> {
    Arc::new(CorrelationContext {
        source: "vllm".into(),
        clock_domain: "w/mono".into(),
        collection_mode: CollectionMode::Passive,
        provenance: Provenance::Reported,
        host: Some("h1".into()),
        pid: Some(7),
        ..base_context("eng")
    })
}

fn trace_context() -> Arc<CorrelationContext> {
    Arc::new(CorrelationContext {
        source: "kineto".into(),
        clock_domain: "w/mono".into(),
        clock_kind: ClockKind::Device,
        collection_mode: CollectionMode::Imported,
        host: Some("h1".into()),
        device_uuid: Some("GPU-A".into()),
        rank: Some(0),
        local_rank: Some(0),
        world_size: Some(2),
        ..base_context("tr")
    })
}

fn r(producer: &str, id: &str) -> EntityRef {
    EntityRef::new(producer, id).unwrap()
}

fn event(ctx: &Arc<CorrelationContext>, id: &str, meta: &str, body: EventBody) -> InferenceRecord {
    InferenceRecord::Event(CorrelationEvent::new(
        Arc::clone(ctx),
        id.into(),
        Metadata::from_json_text(meta),
        body,
    ))
}

fn activity(intervals: BusyIntervals) -> ActivityReferenceEvent {
    ActivityReferenceEvent {
        activity_ref: r("tr", "k-1"),
        activity_kind: "gpu_kernel".into(),
        attribution_status: AttributionStatus::Linked,
        activity_domain: ActivityDomain::Gpu,
        iteration_ref: Some(r("eng", "I1")),
        correlation_scope: None,
        trace_attachment_id: Some("kineto:t.json".into()),
        runtime_correlation_id: None,
        cuda_correlation_id: Some(42),
        stream_id: Some(7),
        graph_id: Some(3),
        start_ns: Some(1000),
        end_ns: Some(2000),
        intervals,
    }
}

/// One record of each of the eight types, in the order artifact, request, iteration, stage,
/// membership, activity (version 3), capabilities, clock alignment.
fn eight_records() -> Vec<InferenceRecord> {
    let e = engine_context();
    let t = trace_context();
    vec![
        event(
            &e,
            "artifact",
            "{}",
            EventBody::Artifact(ArtifactIdentityEvent {
                artifact_kind: "inference_jsonl".into(),
                created_at_ns: 1_790_000_000_000_000_000,
            }),
        ),
        event(
            &e,
            "r-1",
            r#"{"stream":true,"model":"m"}"#,
            EventBody::Request(RequestEvent {
                request_ref: r("cli", "R1"),
                attempt_ref: Some(r("cli", "R1/a1")),
                backend_request_ref: None,
                start_ns: Some(100),
                end_ns: Some(900),
                status: Some("ok".into()),
                input_tokens: Some(12),
                output_tokens: None,
                kv_bytes: None,
            }),
        ),
        event(
            &e,
            "it-1",
            "{}",
            EventBody::Iteration(IterationEvent {
                iteration_ref: r("eng", "I1"),
                batch_ref: Some(r("eng", "B1")),
                start_ns: Some(0),
                end_ns: None,
            }),
        ),
        event(
            &e,
            "st-1",
            "{}",
            EventBody::Stage(StageEvent {
                stage_ref: r("eng", "S1"),
                name: "queue".into(),
                request_ref: None,
                iteration_ref: Some(r("eng", "I1")),
                start_ns: Some(5),
                end_ns: Some(5),
                input_tokens: None,
                output_tokens: Some(3),
                kv_bytes: Some(4096),
            }),
        ),
        event(
            &e,
            "m-1",
            "{}",
            EventBody::Membership(MembershipEvent {
                request_ref: r("cli", "R1"),
                iteration_ref: r("eng", "I1"),
                role: "prefill".into(),
                attempt_ref: None,
                input_tokens: Some(12),
                output_tokens: None,
                kv_bytes: None,
            }),
        ),
        event(
            &t,
            "k-1",
            r#"{"intervals":[[0,300],[500,500]],"first_name":"k","event_count":2}"#,
            EventBody::Activity(activity(BusyIntervals::List(vec![(0, 300), (500, 500)]))),
        ),
        event(
            &e,
            "cap",
            "{}",
            EventBody::Capabilities(CapabilityEvent {
                component: "engine_adapter".into(),
                available: true,
                supported: vec!["iterations".into(), "stages".into()],
                enabled: vec!["iterations".into(), "stages".into()],
                collected: vec!["stages".into()],
            }),
        ),
        event(
            &e,
            "al-1",
            r#"{"method":"ptp"}"#,
            EventBody::ClockAlignment(ClockAlignmentEvent {
                from_clock_domain: "w/mono".into(),
                to_clock_domain: "c/wall".into(),
                offset_ns: -50,
                uncertainty_ns: 4,
                valid_from_ns: Some(100),
                valid_to_ns: None,
            }),
        ),
    ]
}

/// The eight rows with the context slot left as `{C}` (the embedded context or the id).
const ROWS: [&str; 8] = [
    r#"{"artifact_kind": "inference_jsonl", {C}, "created_at_ns": 1790000000000000000, "event_id": "artifact", "event_type": "infer.artifact", "metadata": {}, "schema_version": {V}}"#,
    r#"{"attempt_ref": {"id": "R1/a1", "producer_id": "cli"}, "backend_request_ref": null, {C}, "end_ns": 900, "event_id": "r-1", "event_type": "infer.request", "input_tokens": 12, "kv_bytes": null, "metadata": {"model": "m", "stream": true}, "output_tokens": null, "request_ref": {"id": "R1", "producer_id": "cli"}, "schema_version": {V}, "start_ns": 100, "status": "ok"}"#,
    r#"{"batch_ref": {"id": "B1", "producer_id": "eng"}, {C}, "end_ns": null, "event_id": "it-1", "event_type": "infer.iteration", "iteration_ref": {"id": "I1", "producer_id": "eng"}, "metadata": {}, "schema_version": {V}, "start_ns": 0}"#,
    r#"{{C}, "end_ns": 5, "event_id": "st-1", "event_type": "infer.stage", "input_tokens": null, "iteration_ref": {"id": "I1", "producer_id": "eng"}, "kv_bytes": 4096, "metadata": {}, "name": "queue", "output_tokens": 3, "request_ref": null, "schema_version": {V}, "stage_ref": {"id": "S1", "producer_id": "eng"}, "start_ns": 5}"#,
    r#"{"attempt_ref": null, {C}, "event_id": "m-1", "event_type": "infer.membership", "input_tokens": 12, "iteration_ref": {"id": "I1", "producer_id": "eng"}, "kv_bytes": null, "metadata": {}, "output_tokens": null, "request_ref": {"id": "R1", "producer_id": "cli"}, "role": "prefill", "schema_version": {V}}"#,
    r#"{"activity_domain": "gpu", "activity_kind": "gpu_kernel", "activity_ref": {"id": "k-1", "producer_id": "tr"}, "attribution_status": "linked", {C}, "correlation_scope": null, "cuda_correlation_id": 42, "end_ns": 2000, "event_id": "k-1", "event_type": "infer.activity_ref", "graph_id": 3, "iteration_ref": {"id": "I1", "producer_id": "eng"}, "metadata": {"event_count": 2, "first_name": "k", "intervals": [[0, 300], [500, 500]]}, "runtime_correlation_id": null, "schema_version": {V}, "start_ns": 1000, "stream_id": 7, "trace_attachment_id": "kineto:t.json"}"#,
    r#"{"available": true, "collected": ["stages"], "component": "engine_adapter", {C}, "enabled": ["iterations", "stages"], "event_id": "cap", "event_type": "infer.capabilities", "metadata": {}, "schema_version": {V}, "supported": ["iterations", "stages"]}"#,
    r#"{{C}, "event_id": "al-1", "event_type": "infer.clock_alignment", "from_clock_domain": "w/mono", "metadata": {"method": "ptp"}, "offset_ns": -50, "schema_version": {V}, "to_clock_domain": "c/wall", "uncertainty_ns": 4, "valid_from_ns": 100, "valid_to_ns": null}"#,
];

fn row(k: usize, context: &str, version: &str) -> String {
    ROWS[k].replace("{C}", context).replace("{V}", version)
}

fn lines(bytes: &[u8]) -> Vec<String> {
    let text = std::str::from_utf8(bytes).unwrap();
    assert!(text.ends_with('\n'));
    text.lines().map(str::to_owned).collect()
}

#[test]
fn context_id_test_vector() {
    assert_eq!(context_id(&base_context("p")), "ctx-49cf44798778cbd2");
    assert_eq!(context_id(&engine_context()), E_ID);
    assert_eq!(context_id(&trace_context()), T_ID);
}

#[test]
fn context_id_escapes_non_ascii() {
    let ctx = CorrelationContext {
        run_id: "r\u{e9}".into(),
        ..base_context("p")
    };
    assert_eq!(context_id(&ctx), "ctx-6777ea9efeef38a7");
}

#[test]
fn v2_rows_of_every_type() {
    let bytes = to_jsonl(&eight_records(), ArtifactForm::V2).unwrap();
    let expected: Vec<String> = (0..8)
        .map(|k| {
            let ctx = if k == 5 { T } else { E };
            let version = if k == 5 { "3" } else { "2" };
            row(k, &format!(r#""context": {ctx}"#), version)
        })
        .collect();
    assert_eq!(lines(&bytes), expected);
}

#[test]
fn v4_rows_of_every_type() {
    let bytes = to_jsonl(&eight_records(), ArtifactForm::V4).unwrap();
    let definition = |ctx: &str, id: &str| {
        format!(
            r#"{{"context": {ctx}, "context_id": "{id}", "event_type": "infer.context", "schema_version": 4}}"#
        )
    };
    let mut expected = vec![definition(E, E_ID)];
    for k in 0..8 {
        if k == 5 {
            expected.push(definition(T, T_ID));
        }
        let id = if k == 5 { T_ID } else { E_ID };
        expected.push(row(k, &format!(r#""context_id": "{id}""#), "4"));
    }
    assert_eq!(lines(&bytes), expected);
}

#[test]
fn equal_contexts_in_different_arcs_share_one_definition() {
    let records = eight_records();
    let again = eight_records();
    let bytes = to_jsonl(records.iter().chain(&again), ArtifactForm::V4).unwrap();
    let definitions = lines(&bytes)
        .iter()
        .filter(|l| l.contains(r#""event_type": "infer.context""#))
        .count();
    assert_eq!(definitions, 2);
    assert_eq!(lines(&bytes).len(), 2 + 16);
}

#[test]
fn null_intervals_stay_embedded_in_v4() {
    let t = trace_context();
    let null = event(
        &t,
        "k-1",
        r#"{"intervals":null}"#,
        EventBody::Activity(activity(BusyIntervals::Null)),
    );
    let bytes = to_jsonl([&null, &null], ArtifactForm::V4).unwrap();
    let embedded = r#"{"activity_domain": "gpu", "activity_kind": "gpu_kernel", "activity_ref": {"id": "k-1", "producer_id": "tr"}, "attribution_status": "linked", "context": {T}, "correlation_scope": null, "cuda_correlation_id": 42, "end_ns": 2000, "event_id": "k-1", "event_type": "infer.activity_ref", "graph_id": 3, "iteration_ref": {"id": "I1", "producer_id": "eng"}, "metadata": {"intervals": null}, "runtime_correlation_id": null, "schema_version": 3, "start_ns": 1000, "stream_id": 7, "trace_attachment_id": "kineto:t.json"}"#
        .replace("{T}", T);
    // No definition: the reference's encoder passes the null form through untouched.
    assert_eq!(lines(&bytes), vec![embedded.clone(), embedded]);
}

#[test]
fn strings_are_escaped_like_python_ensure_ascii() {
    let mut out = Vec::new();
    python_json::push_str(
        &mut out,
        "a\"b\\c\n\r\t\u{8}\u{c}\u{1}\u{1f}\u{7f} \u{e9}\u{20ac}\u{1f600}~",
    );
    assert_eq!(
        std::str::from_utf8(&out).unwrap(),
        r#""a\"b\\c\n\r\t\b\f\u0001\u001f\u007f \u00e9\u20ac\ud83d\ude00~""#
    );
}

#[test]
fn non_ascii_ids_are_escaped_in_rows() {
    let e = engine_context();
    let rec = event(
        &e,
        "m-\u{e9}",
        "{}",
        EventBody::Membership(MembershipEvent {
            request_ref: r("cli", "\u{1f600}"),
            iteration_ref: r("eng", "I1"),
            role: "d\u{e9}code".into(),
            attempt_ref: None,
            input_tokens: None,
            output_tokens: Some(1),
            kv_bytes: None,
        }),
    );
    let bytes = to_jsonl([&rec], ArtifactForm::V2).unwrap();
    let expected = format!(
        r#"{{"attempt_ref": null, "context": {E}, "event_id": "m-\u00e9", "event_type": "infer.membership", "input_tokens": null, "iteration_ref": {{"id": "I1", "producer_id": "eng"}}, "kv_bytes": null, "metadata": {{}}, "output_tokens": 1, "request_ref": {{"id": "\ud83d\ude00", "producer_id": "cli"}}, "role": "d\u00e9code", "schema_version": 2}}"#
    );
    assert_eq!(lines(&bytes), vec![expected]);
}

#[test]
fn metadata_is_sorted_at_every_level_and_keeps_special_floats() {
    let e = engine_context();
    let meta = r#"{"z":1,"a":{"y":NaN,"b":[Infinity,-Infinity,{"q":null,"p":false}]},"m":1.5,"e":1e-7,"big":1e16,"u":"\u00e9"}"#;
    let rec = event(
        &e,
        "it-1",
        meta,
        EventBody::Iteration(IterationEvent {
            iteration_ref: r("eng", "I1"),
            batch_ref: None,
            start_ns: None,
            end_ns: None,
        }),
    );
    let bytes = to_jsonl([&rec], ArtifactForm::V2).unwrap();
    let expected_meta = r#""metadata": {"a": {"b": [Infinity, -Infinity, {"p": false, "q": null}], "y": NaN}, "big": 1e+16, "e": 1e-07, "m": 1.5, "u": "\u00e9", "z": 1}"#;
    let line = &lines(&bytes)[0];
    assert!(line.contains(expected_meta), "{line}");
}

#[test]
fn legacy_records_are_resorted_and_keep_nan() {
    let legacy = InferenceRecord::Legacy(LegacyRecord {
        json: r#"{"schema_version":1,"event_type":"infer.request","z":NaN,"a":"\u00e9","n":[1,2.5,-3]}"#
            .into(),
    });
    let expected = r#"{"a": "\u00e9", "event_type": "infer.request", "n": [1, 2.5, -3], "schema_version": 1, "z": NaN}"#;
    for form in [ArtifactForm::V2, ArtifactForm::V4] {
        let bytes = to_jsonl([&legacy], form).unwrap();
        assert_eq!(lines(&bytes), vec![expected.to_owned()]);
    }
}

#[test]
fn floats_are_written_as_python_repr() {
    let cases: [(f64, &str); 14] = [
        (0.1, "0.1"),
        (100.0, "100.0"),
        (1.5, "1.5"),
        (-0.0, "-0.0"),
        (0.0, "0.0"),
        (1e16, "1e+16"),
        (1_234_567_890_123_456.0, "1234567890123456.0"),
        (12_345_678_901_234_567.0, "1.2345678901234568e+16"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (1.234e-7, "1.234e-07"),
        (f64::MAX, "1.7976931348623157e+308"),
        (5e-324, "5e-324"),
        (123.456, "123.456"),
    ];
    for (value, expected) in cases {
        let mut out = Vec::new();
        python_json::push_f64(&mut out, value);
        assert_eq!(std::str::from_utf8(&out).unwrap(), expected, "{value:e}");
    }
}

fn canonical(text: &str, seps: Separators) -> String {
    let mut out = Vec::new();
    super::canonical::reserialize(&mut out, text, seps).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn compact_separators_for_hashing() {
    assert_eq!(
        canonical(r#"{"b": [1, 2], "a": null}"#, Separators::Compact),
        r#"{"a":null,"b":[1,2]}"#
    );
}

#[test]
fn reserialising_keeps_what_python_keeps() {
    let cases = [
        // -0 is the integer 0; integers of any size are kept digit for digit.
        (
            "[-0, 0, -0.0, 1.0, 1E2, 123456789012345678901234567890, -5]",
            "[0, 0, -0.0, 1.0, 100.0, 123456789012345678901234567890, -5]",
        ),
        // Overflowing floats are infinite, as in Python.
        ("[1e400, -1e400, NaN]", "[Infinity, -Infinity, NaN]"),
        // The last of duplicate keys wins; keys sort by code point (astral after U+E000).
        (
            r#"{"b": 1, "a": 2, "b": 3, "\ud83d\ude00": 5, "\ue000": 4}"#,
            r#"{"a": 2, "b": 3, "\ue000": 4, "\ud83d\ude00": 5}"#,
        ),
        // Lone surrogates survive; an escaped pair joins; "\/" is a slash.
        (
            r#"["\ud800", "\ud83d\ud83d\ude00", "a\/b", "\u00E9", "\udc00x"]"#,
            r#"["\ud800", "\ud83d\ud83d\ude00", "a/b", "\u00e9", "\udc00x"]"#,
        ),
        // Whitespace goes; raw non-ASCII is escaped.
        (
            "{ \"x\" :\t[ true ,false,null ] ,\n\"y\":\"\u{e9}\"}",
            r#"{"x": [true, false, null], "y": "\u00e9"}"#,
        ),
        ("{}", "{}"),
        ("[]", "[]"),
    ];
    for (input, expected) in cases {
        assert_eq!(canonical(input, Separators::Spaced), expected, "{input}");
    }
}

#[test]
fn reserialising_refuses_what_is_not_json() {
    for bad in [
        "{",
        "[1,]",
        r#"{"a" 1}"#,
        "01",
        r#""\x""#,
        "[1] 2",
        "nul",
        "",
    ] {
        let mut out = Vec::new();
        let result = super::canonical::reserialize(&mut out, bad, Separators::Spaced);
        assert!(result.is_err(), "{bad}");
    }
}

#[test]
fn same_input_gives_the_same_bytes() {
    for form in [ArtifactForm::V2, ArtifactForm::V4] {
        let a = to_jsonl(&eight_records(), form).unwrap();
        let b = to_jsonl(&eight_records(), form).unwrap();
        assert_eq!(a, b);
    }
}

#[test]
fn each_writer_starts_a_fresh_registry() {
    let records = eight_records();
    let first = to_jsonl(&records, ArtifactForm::V4).unwrap();
    let second = to_jsonl(&records, ArtifactForm::V4).unwrap();
    assert!(lines(&second)[0].contains(r#""event_type": "infer.context""#));
    assert_eq!(first, second);
}

#[test]
fn a_failed_record_writes_and_registers_nothing() {
    let e = engine_context();
    let iteration = |meta: &str| {
        event(
            &e,
            "it-1",
            meta,
            EventBody::Iteration(IterationEvent {
                iteration_ref: r("eng", "I1"),
                batch_ref: None,
                start_ns: None,
                end_ns: None,
            }),
        )
    };
    let mut writer = ArtifactWriter::new(Vec::new(), ArtifactForm::V4);
    let err = writer.write_record(&iteration("{not json")).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
    writer.write_record(&iteration("{}")).unwrap();
    let bytes = writer.finish().unwrap();
    let expected_row = r#"{"batch_ref": null, "context_id": "ctx-c87c218ffa8614e3", "end_ns": null, "event_id": "it-1", "event_type": "infer.iteration", "iteration_ref": {"id": "I1", "producer_id": "eng"}, "metadata": {}, "schema_version": 4, "start_ns": null}"#;
    let lines = lines(&bytes);
    assert_eq!(
        lines.len(),
        2,
        "the definition is written with the first good record"
    );
    assert!(lines[0].starts_with(r#"{"context": {"backend": null"#));
    assert_eq!(lines[1], expected_row);
}

#[test]
fn dropping_the_writer_flushes() {
    let mut sink = Vec::new();
    {
        let mut writer = ArtifactWriter::new(&mut sink, ArtifactForm::V2);
        writer.write_all(&eight_records()).unwrap();
    }
    assert_eq!(sink, to_jsonl(&eight_records(), ArtifactForm::V2).unwrap());
}
