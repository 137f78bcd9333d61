//! Differential check against the Python reference (development aid, not a test): reads a file of
//! cases `{"pre": [json lines], "line": "json line"}`, decodes each with a fresh
//! `CorrelationRecordDecoder` (the `pre` lines first), and prints one JSON line per case: the
//! record normalised, or the error. `reader_diff.py` in the crate's `examples/` does the same with
//! stormlog and compares.
#![allow(clippy::print_stdout)]

use serde_json::{Value, json};
use tally_artifact::read::CorrelationRecordDecoder;
use tally_evidence::{CorrelationEvent, EntityRef, Error, EventBody, InferenceRecord};

fn r(e: &EntityRef) -> Value {
    json!({"producer_id": &*e.producer_id, "id": &*e.id})
}
fn or(e: &Option<EntityRef>) -> Value {
    e.as_ref().map(r).unwrap_or(Value::Null)
}
fn os(s: &Option<tally_evidence::Text>) -> Value {
    s.as_deref().map(Value::from).unwrap_or(Value::Null)
}

fn event(e: &CorrelationEvent) -> Value {
    let c = e.context();
    let mut out = json!({
        "event_type": e.event_type().as_str(),
        "schema_version": e.schema_version(),
        "event_id": e.event_id(),
        "metadata_text": e.metadata().json_text(),
        "context": {
            "run_id": &*c.run_id, "session_id": &*c.session_id, "producer_id": &*c.producer_id,
            "source": &*c.source, "clock_domain": &*c.clock_domain,
            "clock_kind": c.clock_kind.as_str(), "collection_mode": c.collection_mode.as_str(),
            "provenance": c.provenance.as_str(), "source_version": os(&c.source_version),
            "engine": os(&c.engine), "engine_version": os(&c.engine_version),
            "backend": os(&c.backend), "backend_version": os(&c.backend_version),
            "host": os(&c.host), "pid": c.pid, "device_uuid": os(&c.device_uuid),
            "rank": c.rank, "local_rank": c.local_rank, "world_size": c.world_size,
        },
    });
    let fields = match e.body() {
        EventBody::Artifact(b) => {
            json!({"artifact_kind": &*b.artifact_kind, "created_at_ns": b.created_at_ns})
        }
        EventBody::Request(b) => {
            json!({"request_ref": r(&b.request_ref), "attempt_ref": or(&b.attempt_ref),
            "backend_request_ref": or(&b.backend_request_ref), "start_ns": b.start_ns, "end_ns": b.end_ns,
            "status": os(&b.status), "input_tokens": b.input_tokens, "output_tokens": b.output_tokens, "kv_bytes": b.kv_bytes})
        }
        EventBody::Iteration(b) => {
            json!({"iteration_ref": r(&b.iteration_ref), "batch_ref": or(&b.batch_ref),
            "start_ns": b.start_ns, "end_ns": b.end_ns})
        }
        EventBody::Stage(b) => {
            json!({"stage_ref": r(&b.stage_ref), "name": &*b.name, "request_ref": or(&b.request_ref),
            "iteration_ref": or(&b.iteration_ref), "start_ns": b.start_ns, "end_ns": b.end_ns,
            "input_tokens": b.input_tokens, "output_tokens": b.output_tokens, "kv_bytes": b.kv_bytes})
        }
        EventBody::Membership(b) => {
            json!({"request_ref": r(&b.request_ref), "iteration_ref": r(&b.iteration_ref),
            "role": &*b.role, "attempt_ref": or(&b.attempt_ref), "input_tokens": b.input_tokens,
            "output_tokens": b.output_tokens, "kv_bytes": b.kv_bytes})
        }
        EventBody::Activity(b) => {
            json!({"activity_ref": r(&b.activity_ref), "activity_kind": &*b.activity_kind,
            "attribution_status": b.attribution_status.as_str(), "activity_domain": b.activity_domain.as_str(),
            "iteration_ref": or(&b.iteration_ref), "correlation_scope": or(&b.correlation_scope),
            "trace_attachment_id": os(&b.trace_attachment_id), "runtime_correlation_id": b.runtime_correlation_id,
            "cuda_correlation_id": b.cuda_correlation_id, "stream_id": b.stream_id, "graph_id": b.graph_id,
            "start_ns": b.start_ns, "end_ns": b.end_ns,
            "busy": match &b.intervals { tally_evidence::BusyIntervals::List(l) => json!(l.iter().map(|(o, d)| [b.start_ns.unwrap() + o, b.start_ns.unwrap() + o + d]).collect::<Vec<_>>()), _ => Value::Null }})
        }
        EventBody::Capabilities(b) => json!({"component": &*b.component, "available": b.available,
            "supported": b.supported.iter().map(|s| &**s).collect::<Vec<_>>(),
            "enabled": b.enabled.iter().map(|s| &**s).collect::<Vec<_>>(),
            "collected": b.collected.iter().map(|s| &**s).collect::<Vec<_>>()}),
        EventBody::ClockAlignment(b) => {
            json!({"from_clock_domain": &*b.from_clock_domain, "to_clock_domain": &*b.to_clock_domain,
            "offset_ns": b.offset_ns, "uncertainty_ns": b.uncertainty_ns, "valid_from_ns": b.valid_from_ns, "valid_to_ns": b.valid_to_ns})
        }
    };
    out.as_object_mut()
        .unwrap()
        .extend(fields.as_object().unwrap().clone());
    out
}

fn main() {
    let path = std::env::args().nth(1).expect("cases file");
    let text = std::fs::read_to_string(path).expect("readable cases");
    for case in text.lines() {
        let case: Value = serde_json::from_str(case).expect("a case");
        let mut decoder = CorrelationRecordDecoder::new();
        for pre in case["pre"].as_array().unwrap() {
            decoder
                .decode(pre.as_str().unwrap())
                .expect("valid pre line");
        }
        let line = case["line"].as_str().unwrap();
        let out = match decoder.decode(line) {
            Ok(None) => json!({"ok": "definition"}),
            Ok(Some(InferenceRecord::Legacy(l))) => json!({"ok": "legacy", "json": &*l.json}),
            Ok(Some(InferenceRecord::Event(e))) => json!({"ok": event(&e)}),
            Err(Error::OutOfRange { message, .. }) => json!({"range": message}),
            Err(e) => {
                if tally_evidence::json::parse_lenient(line).is_err() {
                    json!({"error": "JSON"})
                } else {
                    json!({"error": e.message()})
                }
            }
        };
        println!("{out}");
    }
}
