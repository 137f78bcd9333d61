//! `tally bench convert --evidence`: a run's JSONL → evidence v2 records that `tally trace
//! account` reads. Each measured request becomes one `infer.request` (from the send to the end of
//! the stream, joined to server-side records by its `X-Request-Id` and the server's response id)
//! and three `infer.stage` records: `client.queue` [intended, sent], `client.ttft` [sent, first
//! token], `client.decode` [first token, last token].

use serde_json::{Value, json};

use crate::error::SpecError;

/// The producer of every converted record.
pub const PRODUCER: &str = "tally.bench";

fn context(header: &Value) -> Value {
    let get = |key: &str| header.get(key).cloned().unwrap_or(Value::Null);
    json!({
        "backend": null, "backend_version": null,
        "clock_domain": get("clock_domain"), "clock_kind": "wall", "collection_mode": "active",
        "device_uuid": null, "engine": null, "engine_version": null,
        "host": get("host"), "local_rank": null, "pid": get("pid"), "producer_id": PRODUCER,
        "provenance": "observed", "rank": null, "run_id": get("run_id"),
        "session_id": get("run_id"), "source": "tally.bench.openai",
        "source_version": get("tally_version"), "world_size": null,
    })
}

fn stage(ctx: &Value, request: &Value, name: &str, start: &Value, end: &Value) -> Option<Value> {
    let (start, end) = (start.as_u64()?, end.as_u64()?);
    let index = request.get("index")?;
    let id = format!("{name}-{index}");
    Some(json!({
        "context": ctx, "end_ns": end, "event_id": format!("st-{id}"), "event_type": "infer.stage",
        "metadata": {}, "name": name,
        "request_ref": {"id": request.get("x_request_id")?, "producer_id": PRODUCER},
        "schema_version": 2, "stage_ref": {"id": id, "producer_id": PRODUCER},
        "start_ns": start,
    }))
}

/// Converts the lines of a run's JSONL; returns the evidence lines.
pub fn convert(text: &str) -> Result<Vec<Value>, SpecError> {
    let mut header: Option<Value> = None;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let value: Value = serde_json::from_str(line)
            .map_err(|err| SpecError::new(&format!("line {}", n + 1), err.to_string()))?;
        match value.get("type").and_then(Value::as_str) {
            Some("tally.bench.run") => {
                let ctx = context(&value);
                out.push(json!({
                    "artifact_kind": "inference_jsonl", "context": ctx,
                    "created_at_ns": value.get("clock_anchor_ns"), "event_id": "artifact",
                    "event_type": "infer.artifact", "metadata": {}, "schema_version": 2,
                }));
                header = Some(value);
            }
            Some("tally.bench.request") => {
                let header = header.as_ref().ok_or_else(|| {
                    SpecError::new(
                        &format!("line {}", n + 1),
                        "a request before the tally.bench.run header",
                    )
                })?;
                if value.get("phase").and_then(Value::as_str) != Some("measured") {
                    continue;
                }
                let Some(sent) = value.get("sent_ns").and_then(Value::as_u64) else {
                    continue;
                };
                let ctx = context(header);
                let end = value.get("end_ns").and_then(Value::as_u64).unwrap_or(sent);
                let request_id = value.get("x_request_id").cloned().unwrap_or(Value::Null);
                let backend = value
                    .get("response_id")
                    .filter(|v| !v.is_null())
                    .map_or(Value::Null, |id| json!({"id": id, "producer_id": "server"}));
                let index = value.get("index").cloned().unwrap_or(Value::Null);
                out.push(json!({
                    "attempt_ref": null, "backend_request_ref": backend, "context": ctx,
                    "end_ns": end.max(sent), "event_id": format!("req-{index}"), "event_type": "infer.request",
                    "input_tokens": value.get("prompt_tokens"), "kv_bytes": null,
                    "metadata": {
                        "intended_ns": value.get("intended_ns"), "first_token_ns": value.get("first_token_ns"),
                        "ttft_ms": value.get("ttft_ms"), "tpot_ms": value.get("tpot_ms"),
                    },
                    "output_tokens": value.get("output_tokens"),
                    "request_ref": {"id": request_id, "producer_id": PRODUCER},
                    "schema_version": 2, "start_ns": sent, "status": value.get("status"),
                }));
                let null = Value::Null;
                let field = |key: &str| value.get(key).unwrap_or(&null);
                out.extend(stage(
                    &ctx,
                    &value,
                    "client.queue",
                    field("intended_ns"),
                    field("sent_ns"),
                ));
                out.extend(stage(
                    &ctx,
                    &value,
                    "client.ttft",
                    field("sent_ns"),
                    field("first_token_ns"),
                ));
                out.extend(stage(
                    &ctx,
                    &value,
                    "client.decode",
                    field("first_token_ns"),
                    field("last_token_ns"),
                ));
            }
            _ => {}
        }
    }
    if header.is_none() {
        return Err(SpecError::new(
            "input",
            "no tally.bench.run header: not a tally bench run",
        ));
    }
    Ok(out)
}
