//! Every message of the reader's error catalogue (`evidence.md` §2.10), each triggered by a
//! crafted line, with the exact text; and the check order of §2.8 (the first failing check wins).
//! Expected texts were checked against stormlog 0.4.3.

use tally_evidence::Error;
use tally_evidence::read::parse_inference_record;

use super::{ACTIVITY, CTX, ITERATION, compact, definition, error, read, record, v2};

/// Asserts that `text` fails at `line` with `message` (an `Error::Record`).
fn refused(text: &str, line: u64, message: &str) {
    let got = error(text);
    assert_eq!(got, format!("t: line {line}: {message}"), "input: {text}");
    let Err(Error::Record { .. }) = read(text) else {
        panic!("not a record error: {text}")
    };
}

fn ctx_with(member: &str) -> String {
    format!("{},{member}}}", &CTX[..CTX.len() - 1])
}

fn activity(version: u8, fields: &str) -> String {
    record(version, "infer.activity_ref", CTX, fields)
}

#[test]
fn classification_and_transport_messages() {
    refused("[1, 2]", 1, "record must be an object");
    refused("\"x\"", 1, "record must be an object");
    refused(
        &format!(
            r#"{{"schema_version":2,"context_id":"c1","event_type":"infer.iteration","event_id":"e",{ITERATION}}}"#
        ),
        1,
        "context transport requires schema_version 4",
    );
    refused(
        r#"{"schema_version":4.0,"event_type":"infer.iteration"}"#,
        1,
        "context transport requires schema_version 4",
    );
    refused(
        &format!(r#"{{"event_type":"infer.context","context_id":"c1","context":{CTX}}}"#),
        1,
        "context transport requires schema_version 4",
    );
    refused(
        &compact("", "infer.iteration", ITERATION),
        1,
        "context_id must be a non-empty string",
    );
    refused(
        r#"{"schema_version":4,"event_type":"infer.iteration","event_id":"e"}"#,
        1,
        "context_id must be a non-empty string",
    );
    refused(
        r#"{"schema_version":4,"event_type":"infer.iteration","context_id":7}"#,
        1,
        "context_id must be a non-empty string",
    );
    refused(
        &format!(
            r#"{{"schema_version":4,"event_type":"infer.context","context_id":"c1","context":{CTX},"x":1}}"#
        ),
        1,
        "infer.context requires exactly version, type, ID, context",
    );
    refused(
        r#"{"schema_version":4,"event_type":"infer.context","context_id":"c1"}"#,
        1,
        "infer.context requires exactly version, type, ID, context",
    );
    let other = CTX.replace(r#""run_id":"r""#, r#""run_id":"r2""#);
    refused(
        &format!(
            "{}\n{{\"schema_version\":4,\"event_type\":\"infer.context\",\"context_id\":\"c1\",\"context\":{other}}}",
            definition("c1")
        ),
        2,
        "conflicting context definition: c1",
    );
    refused(
        &compact("c9", "infer.iteration", ITERATION),
        1,
        "unknown context_id: c9",
    );
    refused(
        r#"{"schema_version":4,"event_type":"infer.iteration","context_id":"c1","context":null}"#,
        1,
        "v4 event must have context_id and no context",
    );
    refused(
        r#"{"schema_version":"2","event_type":"infer.iteration"}"#,
        1,
        "schema_version must be an integer",
    );
    refused(
        r#"{"schema_version":true,"event_type":"infer.iteration"}"#,
        1,
        "schema_version must be an integer",
    );
    refused(
        r#"{"schema_version":2.0,"event_type":"infer.iteration"}"#,
        1,
        "schema_version must be an integer",
    );
    refused(
        r#"{"schema_version":null,"event_type":"infer.iteration"}"#,
        1,
        "schema_version must be an integer",
    );
    refused(
        r#"{"schema_version":1,"event_type":"custom"}"#,
        1,
        "event_type must name an inference event",
    );
    refused(
        r#"{"schema_version":2}"#,
        1,
        "event_type must name an inference event",
    );
    refused(r#"{"x":1}"#, 1, "event_type must name an inference event");
    refused(
        &v2("infer.iteration", ITERATION).replace("\"schema_version\":2", "\"schema_version\":3"),
        1,
        "unsupported inference schema_version: 3",
    );
    refused(
        r#"{"schema_version":1180591620717411303424,"event_type":"infer.iteration"}"#,
        1,
        "unsupported inference schema_version: 1180591620717411303424",
    );
    refused(
        r#"{"schema_version":-0,"event_type":"infer.iteration"}"#,
        1,
        "unsupported inference schema_version: 0",
    );
    refused(
        r#"{"schema_version":2,"event_type":"infer.foo"}"#,
        1,
        "unsupported inference event_type: infer.foo",
    );
    // An unknown type at version 3 reports the version (§2.2 step 6).
    refused(
        r#"{"schema_version":3,"event_type":"infer.foo"}"#,
        1,
        "unsupported inference schema_version: 3",
    );
    // A compact record of an unknown type reports the type after expansion.
    refused(
        &format!("{}\n{}", definition("c1"), compact("c1", "infer.foo", "")),
        2,
        "unsupported inference event_type: infer.foo",
    );
    refused(
        &format!("{}\n{}", definition("c1"), compact("c1", "custom", "")),
        2,
        "event_type must name an inference event",
    );
}

#[test]
fn v4_requires_a_decoder_when_parsed_alone() {
    let e = parse_inference_record(&compact("c1", "infer.iteration", ITERATION)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "v4 requires load_inference_artifact or a sequence decoder"
    );
    let e = parse_inference_record("[]").unwrap_err();
    assert_eq!(e.to_string(), "record must be an object");
    // The embedded parser does not classify transport: `context_id` is an unknown keyword.
    let with_id = v2(
        "infer.iteration",
        &format!("{ITERATION},\"context_id\":\"c1\""),
    );
    assert_eq!(
        parse_inference_record(&with_id).unwrap_err().to_string(),
        "invalid infer.iteration record: IterationEvent.__init__() got an unexpected keyword argument 'context_id'"
    );
}

#[test]
fn context_messages() {
    let it = |ctx: &str| record(2, "infer.iteration", ctx, ITERATION);
    refused(
        &record(2, "infer.iteration", "\"x\"", ITERATION),
        1,
        "context must be an object",
    );
    refused(
        &format!(
            r#"{{"schema_version":2,"event_type":"infer.iteration","event_id":"e",{ITERATION}}}"#
        ),
        1,
        "context must be an object",
    );
    refused(
        &it(&ctx_with(r#""x":1"#)),
        1,
        "invalid infer.iteration record: CorrelationContext.__init__() got an unexpected keyword argument 'x'",
    );
    refused(
        &it(&CTX.replace(r#""source":"src","#, "")),
        1,
        "invalid infer.iteration record: CorrelationContext.__init__() missing 1 required positional argument: 'source'",
    );
    refused(
        &it("{}"),
        1,
        "invalid infer.iteration record: CorrelationContext.__init__() missing 8 required positional arguments: 'run_id', 'session_id', 'producer_id', 'source', 'clock_domain', 'clock_kind', 'collection_mode', and 'provenance'",
    );
    for (key, value) in [
        ("run_id", "r"),
        ("session_id", "s"),
        ("producer_id", "eng"),
        ("source", "src"),
        ("clock_domain", "w/mono"),
    ] {
        let empty = CTX.replace(&format!(r#""{key}":"{value}""#), &format!(r#""{key}":"""#));
        refused(&it(&empty), 1, &format!("{key} must be a non-empty string"));
        let null = CTX.replace(
            &format!(r#""{key}":"{value}""#),
            &format!(r#""{key}":null"#),
        );
        refused(&it(&null), 1, &format!("{key} must be a non-empty string"));
    }
    for key in [
        "source_version",
        "engine",
        "engine_version",
        "backend",
        "backend_version",
        "host",
        "device_uuid",
    ] {
        refused(
            &it(&ctx_with(&format!(r#""{key}":"""#))),
            1,
            &format!("{key} must be a non-empty string"),
        );
        refused(
            &it(&ctx_with(&format!(r#""{key}":5"#))),
            1,
            &format!("{key} must be a non-empty string"),
        );
    }
    for key in ["pid", "rank", "local_rank", "world_size"] {
        for bad in ["-1", "1.0", "true", "\"1\""] {
            refused(
                &it(&ctx_with(&format!(r#""{key}":{bad}"#))),
                1,
                &format!("{key} must be a non-negative integer or null"),
            );
        }
    }
    refused(
        &it(&ctx_with(r#""world_size":0"#)),
        1,
        "world_size must be >= 1",
    );
    let kind = |v: &str| {
        CTX.replace(
            r#""clock_kind":"monotonic""#,
            &format!(r#""clock_kind":{v}"#),
        )
    };
    refused(
        &it(&kind("\"tsc\"")),
        1,
        "clock_kind must be monotonic, wall, or device",
    );
    refused(
        &it(&kind("1")),
        1,
        "clock_kind must be monotonic, wall, or device",
    );
    refused(
        &it(&kind("null")),
        1,
        "clock_kind must be monotonic, wall, or device",
    );
    refused(
        &it(&kind("[]")),
        1,
        "invalid infer.iteration record: unhashable type: 'list'",
    );
    refused(
        &it(&kind("{}")),
        1,
        "invalid infer.iteration record: unhashable type: 'dict'",
    );
    let mode = CTX.replace(r#""passive""#, r#""sideways""#);
    refused(
        &it(&mode),
        1,
        "collection_mode must be active, passive, or imported",
    );
    let prov = CTX.replace(r#""observed""#, r#""guessed""#);
    refused(
        &it(&prov),
        1,
        "provenance must be observed, reported, or estimated",
    );
    // Check order inside the context: strings, then integers, then enums.
    let both = ctx_with(r#""pid":-1,"host":"""#).replace(r#""monotonic""#, r#""x""#);
    refused(&it(&both), 1, "host must be a non-empty string");
    let both = ctx_with(r#""world_size":0"#).replace(r#""monotonic""#, r#""x""#);
    refused(&it(&both), 1, "world_size must be >= 1");
}

#[test]
fn definition_errors_are_bare() {
    let def = |ctx: &str| {
        format!(
            r#"{{"schema_version":4,"event_type":"infer.context","context_id":"c1","context":{ctx}}}"#
        )
    };
    refused(&def("[]"), 1, "context must be an object");
    refused(
        &def(&ctx_with(r#""x":1"#)),
        1,
        "CorrelationContext.__init__() got an unexpected keyword argument 'x'",
    );
    refused(
        &def(&CTX.replace(r#","provenance":"observed""#, "")),
        1,
        "CorrelationContext.__init__() missing 1 required positional argument: 'provenance'",
    );
    refused(
        &def(&CTX.replace(r#""monotonic""#, "[1]")),
        1,
        "unhashable type: 'list'",
    );
    refused(
        &def(&ctx_with(r#""rank":-3"#)),
        1,
        "rank must be a non-negative integer or null",
    );
}

#[test]
fn ref_and_constructor_messages() {
    let it = |fields: &str| v2("infer.iteration", fields);
    refused(
        &it(r#""iteration_ref":"I1""#),
        1,
        "iteration_ref must be an object",
    );
    refused(
        &it(r#""iteration_ref":null"#),
        1,
        "iteration_ref must be an EntityRef",
    );
    refused(
        &it(r#""iteration_ref":{"producer_id":"","id":"I"}"#),
        1,
        "producer_id must be a non-empty string",
    );
    refused(
        &it(r#""iteration_ref":{"producer_id":"p","id":7}"#),
        1,
        "id must be a non-empty string",
    );
    refused(
        &it(r#""iteration_ref":{"producer_id":"p","id":"I","x":1}"#),
        1,
        "invalid infer.iteration record: EntityRef.__init__() got an unexpected keyword argument 'x'",
    );
    refused(
        &it(r#""iteration_ref":{}"#),
        1,
        "invalid infer.iteration record: EntityRef.__init__() missing 2 required positional arguments: 'producer_id' and 'id'",
    );
    refused(
        &it(&format!("{ITERATION},\"foo\":1")),
        1,
        "invalid infer.iteration record: IterationEvent.__init__() got an unexpected keyword argument 'foo'",
    );
    refused(
        &record(2, "infer.iteration", CTX, "").replace(",\"event_id\":\"e\"", ""),
        1,
        "invalid infer.iteration record: IterationEvent.__init__() missing 2 required keyword-only arguments: 'event_id' and 'iteration_ref'",
    );
    refused(
        &v2("infer.clock_alignment", r#""from_clock_domain":"a""#),
        1,
        "invalid infer.clock_alignment record: ClockAlignmentEvent.__init__() missing 3 required keyword-only arguments: 'to_clock_domain', 'offset_ns', and 'uncertainty_ns'",
    );
    refused(
        &v2(
            "infer.membership",
            r#""request_ref":{"producer_id":"c","id":"R"},"iteration_ref":{"producer_id":"e","id":"I"}"#,
        ),
        1,
        "invalid infer.membership record: MembershipEvent.__init__() missing 1 required keyword-only argument: 'role'",
    );
    // A ref field the type does not have is still converted first, then refused by the
    // constructor; a null one is refused by the constructor only.
    refused(
        &v2(
            "infer.artifact",
            r#""artifact_kind":"k","created_at_ns":1,"batch_ref":"x""#,
        ),
        1,
        "batch_ref must be an object",
    );
    refused(
        &v2(
            "infer.artifact",
            r#""artifact_kind":"k","created_at_ns":1,"batch_ref":null"#,
        ),
        1,
        "invalid infer.artifact record: ArtifactIdentityEvent.__init__() got an unexpected keyword argument 'batch_ref'",
    );
    // Ref fields convert in the fixed order, whatever the key order.
    refused(
        &v2("infer.request", r#""attempt_ref":"a","request_ref":"r""#),
        1,
        "request_ref must be an object",
    );
}

#[test]
fn field_messages() {
    refused(
        &v2("infer.iteration", ITERATION).replace(r#""event_id":"e""#, r#""event_id":"""#),
        1,
        "event_id must be a non-empty string",
    );
    refused(
        &v2("infer.iteration", &format!("{ITERATION},\"metadata\":null")),
        1,
        "metadata must be an object",
    );
    refused(
        &v2("infer.iteration", &format!("{ITERATION},\"metadata\":[]")),
        1,
        "metadata must be an object",
    );
    refused(
        &v2("infer.artifact", r#""artifact_kind":"","created_at_ns":1"#),
        1,
        "artifact_kind must be a non-empty string",
    );
    refused(
        &v2(
            "infer.artifact",
            r#""artifact_kind":"k","created_at_ns":null"#,
        ),
        1,
        "created_at_ns must be a non-negative integer",
    );
    refused(
        &v2(
            "infer.artifact",
            r#""artifact_kind":"k","created_at_ns":1e3"#,
        ),
        1,
        "created_at_ns must be a non-negative integer",
    );
    let it = |fields: &str| {
        v2(
            "infer.iteration",
            &format!(r#""iteration_ref":{{"producer_id":"e","id":"I"}},{fields}"#),
        )
    };
    refused(
        &it(r#""start_ns":-1"#),
        1,
        "start_ns must be a non-negative integer or null",
    );
    refused(
        &it(r#""end_ns":true"#),
        1,
        "end_ns must be a non-negative integer or null",
    );
    refused(
        &it(r#""start_ns":5,"end_ns":4"#),
        1,
        "end_ns must be >= start_ns",
    );
    let req = |fields: &str| {
        v2(
            "infer.request",
            &format!(r#""request_ref":{{"producer_id":"c","id":"R"}},{fields}"#),
        )
    };
    refused(
        &req(r#""status":"""#),
        1,
        "status must be a non-empty string",
    );
    refused(
        &req(r#""kv_bytes":1.5"#),
        1,
        "kv_bytes must be a non-negative integer or null",
    );
    // Counters before status.
    refused(
        &req(r#""status":"","input_tokens":-1"#),
        1,
        "input_tokens must be a non-negative integer or null",
    );
    let stage = |fields: &str| {
        v2(
            "infer.stage",
            &format!(r#""stage_ref":{{"producer_id":"e","id":"S"}},"name":"n"{fields}"#),
        )
    };
    refused(&stage(""), 1, "stage must reference a request or iteration");
    refused(
        &stage(r#","request_ref":null,"start_ns":-1"#),
        1,
        "stage must reference a request or iteration",
    );
    refused(
        &v2(
            "infer.stage",
            r#""stage_ref":{"producer_id":"e","id":"S"},"name":"""#,
        ),
        1,
        "name must be a non-empty string",
    );
    refused(
        &v2(
            "infer.membership",
            r#""request_ref":{"producer_id":"c","id":"R"},"iteration_ref":{"producer_id":"e","id":"I"},"role":"""#,
        ),
        1,
        "role must be a non-empty string",
    );
    let act = |fields: &str| {
        activity(
            2,
            &(ACTIVITY.replace(r#""activity_domain":"gpu","#, "") + fields),
        )
    };
    refused(
        &act(r#","activity_domain":"tpu""#),
        1,
        "activity_domain must be gpu, runtime, cpu, or unknown",
    );
    refused(
        &act(r#","activity_domain":null"#),
        1,
        "activity_domain must be gpu, runtime, cpu, or unknown",
    );
    refused(
        &act(r#","activity_domain":["gpu"]"#),
        1,
        "invalid infer.activity_ref record: unhashable type: 'list'",
    );
    refused(
        &activity(2, &ACTIVITY.replace("\"unresolved\"", "\"maybe\"")),
        1,
        "attribution_status must be linked or unresolved",
    );
    refused(
        &activity(2, &ACTIVITY.replace("\"unresolved\"", "{}")),
        1,
        "invalid infer.activity_ref record: unhashable type: 'dict'",
    );
    refused(
        &activity(2, &ACTIVITY.replace("\"unresolved\"", "\"linked\"")),
        1,
        "attribution_status must match the iteration link",
    );
    refused(
        &activity(
            2,
            &format!(r#"{ACTIVITY},"iteration_ref":{{"producer_id":"e","id":"I"}}"#),
        ),
        1,
        "attribution_status must match the iteration link",
    );
    refused(
        &activity(2, &format!(r#"{ACTIVITY},"trace_attachment_id":"""#)),
        1,
        "trace_attachment_id must be a non-empty string",
    );
    for key in [
        "runtime_correlation_id",
        "cuda_correlation_id",
        "stream_id",
        "graph_id",
    ] {
        refused(
            &activity(2, &format!(r#"{ACTIVITY},"{key}":-2"#)),
            1,
            &format!("{key} must be a non-negative integer or null"),
        );
    }
    let cap = |fields: &str| {
        v2(
            "infer.capabilities",
            &format!(r#""component":"c",{fields}"#),
        )
    };
    refused(&cap(r#""available":1"#), 1, "available must be a boolean");
    refused(
        &cap(r#""available":true,"supported":null"#),
        1,
        "supported must be a list of non-empty strings",
    );
    refused(
        &cap(r#""available":true,"enabled":["a",""]"#),
        1,
        "enabled must be a list of non-empty strings",
    );
    refused(
        &cap(r#""available":true,"collected":[1]"#),
        1,
        "collected must be a list of non-empty strings",
    );
    refused(
        &cap(r#""available":true,"supported":["a","a"]"#),
        1,
        "supported must not contain duplicates",
    );
    refused(
        &cap(r#""available":true,"supported":["a"],"enabled":["b"]"#),
        1,
        "collected must be enabled and enabled must be supported",
    );
    refused(
        &cap(r#""available":true,"supported":["a"],"enabled":["a"],"collected":["b"]"#),
        1,
        "collected must be enabled and enabled must be supported",
    );
    refused(
        &cap(r#""available":false,"supported":["a"]"#),
        1,
        "unavailable components cannot report capabilities",
    );
    refused(
        &v2("infer.capabilities", r#""component":"","available":true"#),
        1,
        "component must be a non-empty string",
    );
    let align = |fields: &str| {
        v2(
            "infer.clock_alignment",
            &format!(r#""from_clock_domain":"a","to_clock_domain":"b",{fields}"#),
        )
    };
    refused(
        &align(r#""offset_ns":1.0,"uncertainty_ns":0"#),
        1,
        "offset_ns must be an integer",
    );
    refused(
        &align(r#""offset_ns":false,"uncertainty_ns":0"#),
        1,
        "offset_ns must be an integer",
    );
    refused(
        &align(r#""offset_ns":-5,"uncertainty_ns":-1"#),
        1,
        "uncertainty_ns must be a non-negative integer",
    );
    refused(
        &align(r#""offset_ns":-5,"uncertainty_ns":1,"valid_from_ns":-1"#),
        1,
        "start_ns must be a non-negative integer or null",
    );
    refused(
        &align(r#""offset_ns":-5,"uncertainty_ns":1,"valid_from_ns":9,"valid_to_ns":8"#),
        1,
        "end_ns must be >= start_ns",
    );
    refused(
        &v2(
            "infer.clock_alignment",
            r#""from_clock_domain":"","to_clock_domain":"b","offset_ns":0,"uncertainty_ns":0"#,
        ),
        1,
        "from_clock_domain must be a non-empty string",
    );
}

#[test]
fn intervals_and_declared_version_messages() {
    let v3 = |meta: &str| {
        activity(
            3,
            &format!(r#"{ACTIVITY},"metadata":{{"intervals":{meta}}}"#),
        )
    };
    refused(
        &activity(
            3,
            &format!(
                r#"{},"metadata":{{"intervals":[[0,1]]}}"#,
                ACTIVITY.replace(r#","end_ns":200"#, "")
            ),
        ),
        1,
        "metadata.intervals needs start_ns and end_ns",
    );
    let list = "metadata.intervals must be a non-empty list of [offset_ns, duration_ns] pairs";
    refused(&v3("[]"), 1, list);
    refused(&v3("{}"), 1, list);
    refused(&v3("5"), 1, list);
    let entries = "metadata.intervals entries must be [offset_ns, duration_ns] pairs of non-negative integers";
    refused(&v3("[[0,1,2]]"), 1, entries);
    refused(&v3("[[0,-1]]"), 1, entries);
    refused(&v3("[[0,true]]"), 1, entries);
    refused(&v3("[[0,1.0]]"), 1, entries);
    refused(&v3("[5]"), 1, entries);
    refused(
        &v3("[[0,10],[5,1]]"),
        1,
        "metadata.intervals must be sorted and disjoint",
    );
    refused(
        &v3("[[0,50],[60,41]]"),
        1,
        "metadata.intervals must lie inside start_ns..end_ns",
    );
    // Entries are checked in order: the sorting error of entry 2 before the shape of entry 3.
    refused(
        &v3("[[10,1],[0,1],\"x\"]"),
        1,
        "metadata.intervals must be sorted and disjoint",
    );
    // A huge entry fails "inside", as in the reference.
    refused(
        &v3("[[0,1180591620717411303424]]"),
        1,
        "metadata.intervals must lie inside start_ns..end_ns",
    );
    refused(
        &activity(
            2,
            &format!(r#"{ACTIVITY},"metadata":{{"intervals":[[0,30]]}}"#),
        ),
        1,
        "infer.activity_ref with metadata.intervals requires schema_version 3",
    );
    refused(
        &activity(2, &format!(r#"{ACTIVITY},"metadata":{{"intervals":null}}"#)),
        1,
        "infer.activity_ref with metadata.intervals requires schema_version 3",
    );
    refused(
        &activity(3, ACTIVITY),
        1,
        "infer.activity_ref schema_version 3 requires metadata.intervals",
    );
    // Null intervals are legal embedded at version 3, refused in the compact form.
    assert!(read(&v3("null")).is_ok());
    refused(
        &format!(
            "{}\n{}",
            definition("c1"),
            compact(
                "c1",
                "infer.activity_ref",
                &format!(r#"{ACTIVITY},"metadata":{{"intervals":null}}"#)
            )
        ),
        2,
        list,
    );
}

#[test]
fn the_first_failing_check_wins() {
    // An unknown key and a bad context: the context comes first.
    refused(
        &record(
            2,
            "infer.iteration",
            "[]",
            &format!("{ITERATION},\"foo\":1"),
        ),
        1,
        "context must be an object",
    );
    // A bad context field and a bad ref: the context first.
    refused(
        &record(
            2,
            "infer.iteration",
            &ctx_with(r#""pid":-1"#),
            r#""iteration_ref":"x""#,
        ),
        1,
        "pid must be a non-negative integer or null",
    );
    // A bad ref and an unknown key: the ref first.
    refused(
        &v2("infer.iteration", r#""foo":1,"iteration_ref":"x""#),
        1,
        "iteration_ref must be an object",
    );
    // Unexpected before missing, and the first unexpected key in record order.
    refused(
        &record(2, "infer.iteration", CTX, r#""zz":1,"aa":2"#).replace(",\"event_id\":\"e\"", ""),
        1,
        "invalid infer.iteration record: IterationEvent.__init__() got an unexpected keyword argument 'zz'",
    );
    // A key valid for another type counts as unexpected, in record order too.
    refused(
        &v2(
            "infer.iteration",
            &format!(r#""role":"x",{ITERATION},"zz":1"#),
        ),
        1,
        "invalid infer.iteration record: IterationEvent.__init__() got an unexpected keyword argument 'role'",
    );
    // The constructor before event_id and metadata; event_id before metadata.
    refused(
        &v2("infer.iteration", &format!("{ITERATION},\"metadata\":null")).replace("\"e\"", "\"\""),
        1,
        "event_id must be a non-empty string",
    );
    refused(
        &v2("infer.iteration", "\"metadata\":null,\"x\":1"),
        1,
        "invalid infer.iteration record: IterationEvent.__init__() got an unexpected keyword argument 'x'",
    );
    // metadata before the type's checks; type checks before the declared version.
    refused(
        &activity(
            3,
            &format!(
                r#"{},"metadata":null"#,
                ACTIVITY.replace("\"gpu\"", "\"tpu\"")
            ),
        ),
        1,
        "metadata must be an object",
    );
    refused(
        &activity(3, &ACTIVITY.replace("\"gpu\"", "\"tpu\"")),
        1,
        "activity_domain must be gpu, runtime, cpu, or unknown",
    );
    // Version classification before everything else.
    refused(
        &record(2, "infer.nope", "[]", "\"foo\":1"),
        1,
        "unsupported inference event_type: infer.nope",
    );
    // v4: the id lookup before the body's own errors; the definition's key set before its id's
    // registration.
    refused(
        &compact("c9", "infer.iteration", "\"foo\":1"),
        1,
        "unknown context_id: c9",
    );
    refused(
        &format!(
            "{}\n{}",
            definition("c1"),
            compact("c1", "infer.iteration", "\"foo\":1")
        ),
        2,
        "invalid infer.iteration record: IterationEvent.__init__() got an unexpected keyword argument 'foo'",
    );
}

#[test]
fn constructor_keys_count_in_first_position_with_duplicates() {
    // Python's dict keeps a key where it first appeared: "zz" (position 1) before "aa" even
    // though "zz" is repeated last.
    let line = record(
        2,
        "infer.iteration",
        CTX,
        r#""aa":1,"iteration_ref":{"producer_id":"e","id":"I"}"#,
    )
    .replacen("{", r#"{"zz":0,"#, 1)
    .replacen(r#""aa":1"#, r#""aa":1,"zz":2"#, 1);
    refused(
        &line,
        1,
        "invalid infer.iteration record: IterationEvent.__init__() got an unexpected keyword argument 'zz'",
    );
}
