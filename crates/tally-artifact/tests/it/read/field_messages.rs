//! The error catalogue (`docs/evidence.md#reader-messages`), part 2: refs, constructors, the fields of each event
//! type, `metadata.intervals` and the declared-version rule, with exact texts (checked against
//! stormlog 0.4.3).

use super::{ACTIVITY, CTX, ITERATION, activity, compact, definition, read, record, refused, v2};

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
