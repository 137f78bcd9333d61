//! One request's record: its stamps on the run's monotonic clock (nanoseconds since the run's
//! anchor), what the server said, and how it ended ([`Status`], spec'd in `docs/bench.md`).

use serde::{Deserialize, Serialize};

/// How a request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// A complete answer with generated text.
    Ok,
    /// HTTP ≥ 400 other than 429/503, an error object in a 200 body or stream, malformed JSON,
    /// or a stream cut after the head.
    Error,
    /// HTTP 429 or 503.
    Rejected,
    /// No byte for `--timeout`, or past `--request-deadline`.
    Timeout,
    /// The connection could not be made (nothing was sent).
    Unreachable,
    /// The connection was lost after sending, before a status line.
    DeliveryUnknown,
    /// Still running when the drain limit was reached.
    Cancelled,
    /// Never sent (open loop, `--overflow drop`, or still waiting for a slot at the drain limit).
    Dropped,
    /// A 200 stream that ended with no generated text and no error although tokens were asked.
    Empty,
}

impl Status {
    /// Every status, in report order.
    pub const ALL: [Status; 9] = [
        Self::Ok,
        Self::Error,
        Self::Rejected,
        Self::Timeout,
        Self::Unreachable,
        Self::DeliveryUnknown,
        Self::Cancelled,
        Self::Dropped,
        Self::Empty,
    ];

    /// The name in records and summaries.
    pub fn name(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Error => "error",
            Self::Rejected => "rejected",
            Self::Timeout => "timeout",
            Self::Unreachable => "unreachable",
            Self::DeliveryUnknown => "delivery_unknown",
            Self::Cancelled => "cancelled",
            Self::Dropped => "dropped",
            Self::Empty => "empty",
        }
    }
}

/// Which part of the run a request belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Before the measurement window (its own prompt namespace).
    Warmup,
    /// The measured cohort.
    Measured,
    /// After the window, keeping the load up until the cohort has finished (closed loop).
    Cooldown,
}

/// Where an output or prompt token count came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenSource {
    /// The server's `usage` (exact).
    ServerUsage,
    /// Content chunks counted (exact only at one token per chunk).
    Chunks,
    /// The planned count (prompts).
    Planned,
    /// Nothing to count from.
    None,
}

/// Everything measured about one request. Instants are nanoseconds since the run's anchor.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// Warm-up, measured or cool-down.
    pub phase: Phase,
    /// The request's index within its phase (decides its prompt and lengths).
    pub index: u64,
    /// The closed-loop worker that sent it.
    pub worker: Option<u32>,
    /// The `X-Request-Id` header sent.
    pub x_request_id: String,
    /// a_r: when the request was due (open loop: the schedule; closed loop: when the worker
    /// took its slot).
    pub intended_ns: u64,
    /// s_r: just before the request was handed to the connection.
    pub sent_ns: Option<u64>,
    /// h_r: the response head arrived.
    pub head_ns: Option<u64>,
    /// The first SSE event of any kind arrived.
    pub first_event_ns: Option<u64>,
    /// f_r: the first event with generated text arrived.
    pub first_token_ns: Option<u64>,
    /// l_r: the last event with generated text arrived.
    pub last_token_ns: Option<u64>,
    /// e_r: the stream ended (`[DONE]` or a clean end of body).
    pub end_ns: Option<u64>,
    /// Arrival instants of the events with generated text (kept in memory for ICL and window
    /// token counts; written only with `--record-gaps`, as gaps).
    #[serde(skip)]
    pub chunk_ns: Vec<u64>,
    /// It waited for an in-flight slot (open loop, overflow `wait`).
    pub held_for_slot: bool,
    /// Requests in flight when it was dispatched.
    pub in_flight_at_dispatch: u32,
    /// Events with generated text.
    pub chunks: u32,
    /// Prompt tokens and where the count came from.
    pub prompt_tokens: Option<u64>,
    /// Source of `prompt_tokens`.
    pub prompt_tokens_source: TokenSource,
    /// Output tokens and where the count came from.
    pub output_tokens: Option<u64>,
    /// Source of `output_tokens`.
    pub output_tokens_source: TokenSource,
    /// The planned prompt length (tokens).
    pub target_input_tokens: u64,
    /// The planned output length (`max_tokens`).
    pub target_output_tokens: u64,
    /// The last `finish_reason` seen.
    pub finish_reason: Option<String>,
    /// How it ended.
    pub status: Status,
    /// The HTTP status, when a head arrived.
    pub http_status: Option<u16>,
    /// A short machine-readable kind of failure.
    pub error_kind: Option<String>,
    /// The failure's message (API key scrubbed, at most 512 bytes).
    pub error_message: Option<String>,
    /// The server's response id.
    pub response_id: Option<String>,
    /// A digest of the prompt text.
    pub prompt_digest: String,
    /// The client-side connection (its local port).
    pub conn_id: Option<u32>,
    /// The connection had carried an earlier request.
    pub conn_reused: bool,
}

fn ms(later: Option<u64>, earlier: Option<u64>) -> Option<f64> {
    Some(later?.checked_sub(earlier?)? as f64 / 1e6)
}

impl RequestRecord {
    /// A record for a request due at `intended_ns` that has not been sent yet.
    pub fn new(phase: Phase, index: u64, x_request_id: String, intended_ns: u64) -> Self {
        Self {
            phase,
            index,
            worker: None,
            x_request_id,
            intended_ns,
            sent_ns: None,
            head_ns: None,
            first_event_ns: None,
            first_token_ns: None,
            last_token_ns: None,
            end_ns: None,
            chunk_ns: Vec::new(),
            held_for_slot: false,
            in_flight_at_dispatch: 0,
            chunks: 0,
            prompt_tokens: None,
            prompt_tokens_source: TokenSource::None,
            output_tokens: None,
            output_tokens_source: TokenSource::None,
            target_input_tokens: 0,
            target_output_tokens: 0,
            finish_reason: None,
            status: Status::Dropped,
            http_status: None,
            error_kind: None,
            error_message: None,
            response_id: None,
            prompt_digest: String::new(),
            conn_id: None,
            conn_reused: false,
        }
    }

    /// It succeeded.
    pub fn ok(&self) -> bool {
        self.status == Status::Ok
    }

    /// TTFT from the intended arrival, ms.
    pub fn ttft_ms(&self) -> Option<f64> {
        ms(self.first_token_ns, Some(self.intended_ns))
    }

    /// TTFT from the send, ms.
    pub fn ttft_sent_ms(&self) -> Option<f64> {
        ms(self.first_token_ns, self.sent_ns)
    }

    /// E2E from the intended arrival, ms.
    pub fn e2e_ms(&self) -> Option<f64> {
        ms(self.end_ns, Some(self.intended_ns))
    }

    /// E2E from the send, ms.
    pub fn e2e_sent_ms(&self) -> Option<f64> {
        ms(self.end_ns, self.sent_ns)
    }

    /// First SSE event of any kind, from the send, ms.
    pub fn first_event_ms(&self) -> Option<f64> {
        ms(self.first_event_ns, self.sent_ns)
    }

    /// Response head from the send, ms.
    pub fn head_ms(&self) -> Option<f64> {
        ms(self.head_ns, self.sent_ns)
    }

    /// Dispatch lag s_r − a_r, ms.
    pub fn dispatch_lag_ms(&self) -> Option<f64> {
        ms(self.sent_ns, Some(self.intended_ns))
    }

    /// TPOT = (l − f)/(o − 1) when o ≥ 2; `None` otherwise or when the count is not the
    /// server's and `allow_chunk_counts` is false.
    pub fn tpot_ms(&self, allow_chunk_counts: bool) -> Option<f64> {
        let trusted = self.output_tokens_source == TokenSource::ServerUsage
            || (allow_chunk_counts && self.output_tokens_source == TokenSource::Chunks);
        let tokens = self.output_tokens.filter(|&o| o >= 2 && trusted)?;
        Some(ms(self.last_token_ns, self.first_token_ns)? / (tokens - 1) as f64)
    }

    /// Gaps between successive events with generated text, ms.
    pub fn chunk_gaps_ms(&self) -> impl Iterator<Item = f64> + '_ {
        self.chunk_ns.windows(2).map(|w| (w[1] - w[0]) as f64 / 1e6)
    }
}
