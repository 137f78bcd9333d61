//! What the fake server saw and sent: connections, requests by outcome, peak concurrency, and per
//! request its stamps on the shared clock (the "server truth" the client is compared with).

use std::collections::BTreeMap;
use std::time::Instant;

/// One request as the server handled it.
#[derive(Clone, Debug)]
pub struct ServedRequest {
    /// `X-Request-Id`.
    pub request_id: String,
    /// Digest of the request body (same seed → same bodies).
    pub body_digest: String,
    /// The kernel received the request's last bytes (`SO_TIMESTAMPNS`; the read's time where the
    /// kernel gave no stamp): the request's arrival, the start of the server's truth.
    pub arrived: Instant,
    /// This server read the whole request (at or after `arrived`).
    pub received: Instant,
    /// The connection took the first frame with generated text to write it (`fake/body.rs`).
    pub first_token_sent: Option<Instant>,
    /// The connection took the last frame with generated text to write it.
    pub last_token_sent: Option<Instant>,
    /// Prompt tokens counted.
    pub prompt_tokens: u64,
    /// Tokens generated.
    pub output_tokens: u64,
    /// The fault applied, if any.
    pub fault: Option<String>,
}

/// Counters and per-request stamps.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// TCP connections accepted.
    pub connections_accepted: u64,
    /// Completion requests by outcome (`ok`, `fault:<kind>`).
    pub requests_by_outcome: BTreeMap<String, u64>,
    /// Completion requests in progress now.
    pub in_flight: u64,
    /// The most completion requests in progress at once.
    pub peak_concurrency: u64,
    /// Every completion request, in arrival order.
    pub requests: Vec<ServedRequest>,
}

impl Stats {
    /// The request with this id.
    pub fn request(&self, id: &str) -> Option<&ServedRequest> {
        self.requests.iter().find(|r| r.request_id == id)
    }

    /// JSON for `GET /fake/stats` (instants as ns since `origin`).
    pub fn to_json(&self, origin: Instant) -> serde_json::Value {
        let ns =
            |t: Option<Instant>| t.map(|t| t.saturating_duration_since(origin).as_nanos() as u64);
        serde_json::json!({
            "connections_accepted": self.connections_accepted,
            "requests_by_outcome": self.requests_by_outcome,
            "peak_concurrency": self.peak_concurrency,
            "requests": self.requests.iter().map(|r| serde_json::json!({
                "request_id": r.request_id,
                "body_digest": r.body_digest,
                "arrived_ns": ns(Some(r.arrived)),
                "received_ns": ns(Some(r.received)),
                "first_token_sent_ns": ns(r.first_token_sent),
                "last_token_sent_ns": ns(r.last_token_sent),
                "prompt_tokens": r.prompt_tokens,
                "output_tokens": r.output_tokens,
                "fault": r.fault,
            })).collect::<Vec<_>>(),
        })
    }
}
