//! Records added on purpose: dangling references and legacy (v1) client records.
//!
//! Both are spread evenly over the run by request index: after request `r` of `R`, the
//! `floor((r+1)·N/R) − floor(r·N/R)` next items of a plan of `N` are emitted, so exactly `N`
//! appear in total whatever the interleaving.
//!
//! Each planted reference makes exactly one entry in the reference's `unresolved` list, cycling
//! through four shapes: a membership of a real request in a missing iteration (`iteration`), a
//! queue stage of a missing request (`request`), a runtime launch linked to a missing iteration
//! (`iteration`), and a membership naming an attempt its request never had (`attempt`).
//! Legacy records cycle through the v1 client types stormlog writes (`infer.request`,
//! `infer.phase_window`, `infer.dispatch`, `infer.summary` without a `schema_version`,
//! `infer.system_sample`, `infer.session`); they may hold floats, since nothing compares them.

use std::sync::Arc;

use tally_evidence::{
    CorrelationContext, EventBody, InferenceRecord, LegacyRecord, MembershipEvent, StageEvent, Text,
};

use crate::happening::RequestEnd;
use crate::shapes::{eref, json_str, record, req, runtime_launch};
use crate::topology::Topology;

/// The plans of planted references and legacy records.
pub(crate) struct Extras {
    requests: u64,
    unresolved: u64,
    legacy: u64,
    planted: u64,
    legacy_written: u64,
    client: Text,
}

impl Extras {
    pub(crate) fn new(requests: u64, unresolved: u64, legacy: u64) -> Self {
        Self {
            requests: requests.max(1),
            unresolved,
            legacy,
            planted: 0,
            legacy_written: 0,
            client: "client".into(),
        }
    }

    /// How many of a plan of `total` are due after request `r`.
    fn due(&self, total: u64, r: u64) -> u64 {
        let share = |r: u64| (u128::from(r) * u128::from(total) / u128::from(self.requests)) as u64;
        share(r + 1) - share(r)
    }

    /// Appends the planted references and legacy records due after `end`'s request.
    pub(crate) fn after_request(
        &mut self,
        end: &RequestEnd,
        engine: &Arc<CorrelationContext>,
        topology: &Topology,
        out: &mut Vec<InferenceRecord>,
    ) {
        for _ in 0..self.due(self.unresolved, end.request) {
            out.push(self.plant(end, engine));
            self.planted += 1;
        }
        for _ in 0..self.due(self.legacy, end.request) {
            out.push(legacy(self.legacy_written, end, topology));
            self.legacy_written += 1;
        }
    }

    fn plant(&self, end: &RequestEnd, engine: &Arc<CorrelationContext>) -> InferenceRecord {
        let k = self.planted;
        let producer = &engine.producer_id;
        let request = eref(&self.client, req(end.request));
        let membership = |id: String, iteration: String, attempt: Option<String>| {
            record(
                engine,
                id,
                String::new(),
                EventBody::Membership(MembershipEvent {
                    request_ref: request.clone(),
                    iteration_ref: eref(producer, iteration),
                    role: "decode".into(),
                    attempt_ref: attempt.map(|a| eref(&self.client, a)),
                    input_tokens: None,
                    output_tokens: Some(1),
                    kv_bytes: None,
                }),
            )
        };
        match k % 4 {
            0 => membership(format!("m-lost-{k}"), format!("it-lost-{k}"), None),
            1 => record(
                engine,
                format!("st-orphan-{k}"),
                String::new(),
                EventBody::Stage(StageEvent {
                    stage_ref: eref(producer, format!("orphan-{k}")),
                    name: "queue".into(),
                    request_ref: Some(eref(&self.client, format!("req-lost-{k}"))),
                    iteration_ref: None,
                    start_ns: None,
                    end_ns: None,
                    input_tokens: None,
                    output_tokens: None,
                    kv_bytes: None,
                }),
            ),
            2 => runtime_launch(
                engine,
                format!("launch-lost-{k}"),
                k + 1,
                Some(eref(producer, format!("it-lost-{k}"))),
            ),
            _ => membership(
                format!("m-stray-{k}"),
                format!("it-{}", end.last_iteration),
                Some(format!("{}/a9", req(end.request))),
            ),
        }
    }
}

/// The `j`-th legacy record, about the request that just ended.
fn legacy(j: u64, end: &RequestEnd, topology: &Topology) -> InferenceRecord {
    let request = json_str(&req(end.request));
    let wall = topology.client.wall.at(end.client_end_t);
    let latency_ms = (end.client_end_t - end.client_start_t) / 250_000;
    let json = match j % 6 {
        0 => format!(
            r#"{{"schema_version":1,"event_type":"infer.request","session_id":"sess-client","request_id":{request},"status":"ok","latency_ms":{}.{:02},"prompt_tokens":{},"completion_tokens":{}}}"#,
            latency_ms / 4,
            (latency_ms % 4) * 25,
            end.prompt_tokens,
            end.output_tokens
        ),
        1 => format!(
            r#"{{"schema_version":1,"event_type":"infer.phase_window","session_id":"sess-client","phase":"steady","start_ns":{},"end_ns":{wall}}}"#,
            topology.client.wall.at(end.client_start_t)
        ),
        2 => format!(
            r#"{{"schema_version":1,"event_type":"infer.dispatch","session_id":"sess-client","request_id":{request},"target":{},"attempt":{}}}"#,
            json_str(&topology.hosts[end.host as usize].name),
            end.attempts
        ),
        3 => format!(
            r#"{{"event_type":"infer.summary","session_id":"sess-client","completed":{},"throughput_rps":{}.5}}"#,
            end.request + 1,
            end.request % 97
        ),
        4 => format!(
            r#"{{"schema_version":1,"event_type":"infer.system_sample","host":"client-0","ts_ns":{wall},"cpu_util":0.{:03},"rss_bytes":{}}}"#,
            100 + end.request % 800,
            512 * 1024 * 1024 + end.request * 4096
        ),
        _ => format!(
            r#"{{"schema_version":1,"event_type":"infer.session","session_id":"sess-client","note":"caf\u00e9 \u2014 \ud83d\ude80","run":{},"hosts":{}}}"#,
            json_str(&topology.run_id),
            topology.hosts.len()
        ),
    };
    InferenceRecord::Legacy(LegacyRecord { json: json.into() })
}
