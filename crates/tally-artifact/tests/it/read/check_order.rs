//! The check order of `docs/evidence.md#error-precedence`: when a record has several problems, the first failing
//! check in the reference's order is the one reported (texts checked against stormlog 0.4.3).

use super::{
    ACTIVITY, CTX, ITERATION, activity, compact, ctx_with, definition, record, refused, v2,
};

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
