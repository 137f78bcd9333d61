//! The error catalogue (`docs/evidence.md#reader-messages`), part 1: classification, v4 transport, contexts and
//! definitions, each triggered by a crafted line with the exact expected text (all checked
//! against stormlog 0.4.3).

use tally_artifact::read::parse_inference_record;

use super::{CTX, ITERATION, compact, ctx_with, definition, record, refused, v2};

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
    // An unknown type at version 3 reports the version (`docs/evidence.md#schema-versions` step 6).
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
