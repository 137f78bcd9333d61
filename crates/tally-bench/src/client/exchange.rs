//! One request from send to end of stream, stamped on the run clock as each body frame arrives
//! (before any JSON parsing), and classified into a [`Status`] by where it ended.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body::Body as _;
use http_body_util::{BodyExt, Full};
use hyper::Request;

use super::pool::Pool;
use super::{RunClock, scrub};
use crate::openai::{Event, EventInfo, interpret};
use crate::record::{RequestRecord, Status, TokenSource};
use crate::sse::{SseEvent, SseParser};

/// Bodies of error responses are read up to this size.
const MAX_BODY: usize = 16 << 20;

/// What every request of a run shares.
#[derive(Debug)]
pub struct ExchangeContext {
    /// Connections.
    pub pool: Pool,
    /// `host:port` for the Host header.
    pub authority: String,
    /// Full path of the endpoint (`/v1/chat/completions`).
    pub path: String,
    /// `Authorization: Bearer` value, if any.
    pub api_key: Option<String>,
    /// The run clock.
    pub clock: RunClock,
    /// Longest wait for any byte.
    pub inactivity: Duration,
    /// The answer is streamed.
    pub stream: bool,
    /// Extra request headers (`--header`).
    pub extra_headers: Vec<(String, String)>,
}

fn fail(record: &mut RequestRecord, status: Status, kind: &str, message: &str, key: Option<&str>) {
    record.status = status;
    record.error_kind = Some(kind.to_owned());
    record.error_message = Some(scrub(message, key));
}

fn status_of_http(code: u16) -> Status {
    if code == 429 || code == 503 {
        Status::Rejected
    } else {
        Status::Error
    }
}

fn error_text(body: &[u8]) -> String {
    match interpret(&String::from_utf8_lossy(body)) {
        Event::Payload(EventInfo {
            error: Some(message),
            ..
        }) => message,
        _ => String::from_utf8_lossy(&body[..body.len().min(512)]).into_owned(),
    }
}

/// Sends `body` with `x_request_id` and fills `record` (stamps, counts, status). Never fails:
/// every failure becomes a status. A total deadline is the caller's (dropping this future
/// keeps the stamps written so far).
pub async fn execute(ctx: &ExchangeContext, body: Bytes, record: &mut RequestRecord) {
    let key = ctx.api_key.as_deref();
    let mut conn = match ctx.pool.take().await {
        Ok(conn) => conn,
        Err(err) => {
            return fail(
                record,
                Status::Unreachable,
                "connect",
                &err.to_string(),
                key,
            );
        }
    };
    record.conn_id = Some(conn.id);
    record.conn_reused = conn.uses > 0;
    let mut builder = Request::post(&ctx.path)
        .header("host", &ctx.authority)
        .header("content-type", "application/json")
        .header(
            "accept",
            if ctx.stream {
                "text/event-stream"
            } else {
                "application/json"
            },
        )
        .header("x-request-id", &record.x_request_id);
    if let Some(key) = key {
        builder = builder.header("authorization", format!("Bearer {key}"));
    }
    for (name, value) in &ctx.extra_headers {
        builder = builder.header(name.as_str(), value.as_str());
    }
    if !ctx.pool.keepalive() {
        builder = builder.header("connection", "close");
    }
    let request = match builder.body(Full::new(body)) {
        Ok(request) => request,
        Err(err) => return fail(record, Status::Error, "request", &err.to_string(), key),
    };
    let sent = Instant::now();
    record.sent_ns = Some(ctx.clock.ns(sent));
    // When the bytes in hand reached the host: the kernel's stamp of the connection's latest
    // read (docs/bench.md#kernel-stamps), else now.
    let arrival = |now: Instant| {
        conn.rx
            .latest()
            .filter(|at| *at >= sent && *at <= now)
            .unwrap_or(now)
    };
    let response =
        match tokio::time::timeout(ctx.inactivity, conn.sender.send_request(request)).await {
            Err(_) => {
                return fail(
                    record,
                    Status::Timeout,
                    "head_timeout",
                    "no response head within --timeout",
                    key,
                );
            }
            Ok(Err(err)) => {
                return fail(
                    record,
                    Status::DeliveryUnknown,
                    "lost_before_head",
                    &err.to_string(),
                    key,
                );
            }
            Ok(Ok(response)) => response,
        };
    record.head_ns = Some(ctx.clock.ns(arrival(Instant::now())));
    let code = response.status().as_u16();
    record.http_status = Some(code);
    let mut body = response.into_body();
    if code != 200 {
        let mut bytes = Vec::new();
        let mut complete = false;
        loop {
            match tokio::time::timeout(ctx.inactivity, body.frame()).await {
                Ok(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        let room = MAX_BODY.saturating_sub(bytes.len());
                        bytes.extend_from_slice(&data[..data.len().min(room)]);
                    }
                }
                Ok(None) => {
                    complete = true;
                    break;
                }
                _ => break,
            }
        }
        record.end_ns = Some(ctx.clock.now_ns());
        if complete {
            ctx.pool.give_back(conn);
        }
        let message = format!("HTTP {code}: {}", error_text(&bytes));
        return fail(record, status_of_http(code), "http_status", &message, key);
    }
    let mut reader = StreamReader::new(ctx.stream);
    let mut clean_end;
    loop {
        let next = tokio::time::timeout(ctx.inactivity, body.frame()).await;
        let now = match next {
            Ok(Some(Ok(_)) | None) => arrival(Instant::now()),
            _ => Instant::now(),
        };
        match next {
            Err(_) => {
                record.end_ns = Some(ctx.clock.ns(now));
                return fail(
                    record,
                    Status::Timeout,
                    "inactivity",
                    "no byte within --timeout",
                    key,
                );
            }
            Ok(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    reader.feed(&data, ctx.clock.ns(now), record);
                }
                if reader.done {
                    record.end_ns = Some(ctx.clock.ns(now));
                    clean_end = body.is_end_stream();
                    break;
                }
            }
            Ok(Some(Err(err))) => {
                record.end_ns = Some(ctx.clock.ns(now));
                reader.finish(ctx.clock.ns(now), record);
                let message = format!("the stream was cut after the head: {err}");
                return fail(record, Status::Error, "cut", &message, key);
            }
            Ok(None) => {
                reader.finish(ctx.clock.ns(now), record);
                record.end_ns = Some(ctx.clock.ns(now));
                clean_end = true;
                break;
            }
        }
    }
    if !clean_end {
        // `[DONE]` came; the chunked terminator normally follows in the same frame.
        clean_end = matches!(
            tokio::time::timeout(Duration::from_millis(50), body.frame()).await,
            Ok(None)
        );
    }
    if clean_end {
        ctx.pool.give_back(conn);
    }
    reader.conclude(record, key);
}

/// Reads the body's events into the record.
struct StreamReader {
    parser: SseParser,
    events: Vec<SseEvent>,
    streaming: bool,
    whole: Vec<u8>,
    done: bool,
    error: Option<(String, String)>,
    usage_completion: Option<u64>,
    usage_prompt: Option<u64>,
    whole_words: u64,
}

impl StreamReader {
    fn new(streaming: bool) -> Self {
        Self {
            parser: SseParser::new(),
            events: Vec::new(),
            streaming,
            whole: Vec::new(),
            done: false,
            error: None,
            usage_completion: None,
            usage_prompt: None,
            whole_words: 0,
        }
    }

    fn feed(&mut self, data: &[u8], at: u64, record: &mut RequestRecord) {
        if !self.streaming {
            self.whole.extend_from_slice(data);
            return;
        }
        if record.first_event_ns.is_none() && !data.is_empty() {
            record.first_event_ns = Some(at);
        }
        self.parser.feed(data, &mut self.events);
        self.take_events(at, record);
    }

    fn finish(&mut self, at: u64, record: &mut RequestRecord) {
        if self.streaming {
            self.parser.finish(&mut self.events);
            self.take_events(at, record);
        } else if !self.whole.is_empty() {
            let text = String::from_utf8_lossy(&self.whole).into_owned();
            match interpret(&text) {
                Event::Payload(info) => {
                    // A whole answer has no first token to time (no TTFT, no TPOT); its text
                    // counts as one chunk that arrived with the end of the body.
                    if info.has_text {
                        record.chunk_ns.push(at);
                        record.chunks = 1;
                    }
                    self.apply(info, record);
                }
                Event::Malformed(message) => self.error = Some(("bad_json".into(), message)),
                Event::Done => {}
            }
            self.done = true;
        }
    }

    fn take_events(&mut self, at: u64, record: &mut RequestRecord) {
        for event in std::mem::take(&mut self.events) {
            if self.done {
                break;
            }
            match interpret(&event.data) {
                Event::Done => self.done = true,
                Event::Malformed(message) => {
                    self.error.get_or_insert(("bad_json".into(), message));
                }
                Event::Payload(info) => {
                    if info.has_text {
                        record.first_token_ns.get_or_insert(at);
                        record.last_token_ns = Some(at);
                        record.chunk_ns.push(at);
                        record.chunks += 1;
                    }
                    self.apply(info, record);
                }
            }
        }
    }

    fn apply(&mut self, info: EventInfo, record: &mut RequestRecord) {
        if let Some(message) = info.error {
            self.error.get_or_insert(("error_event".into(), message));
        }
        if info.response_id.is_some() && record.response_id.is_none() {
            record.response_id = info.response_id;
        }
        if info.finish_reason.is_some() {
            record.finish_reason = info.finish_reason;
        }
        self.whole_words += info.text_words;
        self.usage_completion = info.completion_tokens.or(self.usage_completion);
        self.usage_prompt = info.prompt_tokens.or(self.usage_prompt);
    }

    fn conclude(self, record: &mut RequestRecord, key: Option<&str>) {
        if let Some(tokens) = self.usage_completion {
            record.output_tokens = Some(tokens);
            record.output_tokens_source = TokenSource::ServerUsage;
        } else if record.chunks > 0 {
            // Without usage: content chunks (a whole answer: its words), flagged as estimated.
            let count = if self.streaming {
                u64::from(record.chunks)
            } else {
                self.whole_words
            };
            record.output_tokens = Some(count);
            record.output_tokens_source = TokenSource::Chunks;
        }
        if let Some(tokens) = self.usage_prompt {
            record.prompt_tokens = Some(tokens);
            record.prompt_tokens_source = TokenSource::ServerUsage;
        }
        if let Some((kind, message)) = self.error {
            return fail(record, Status::Error, &kind, &message, key);
        }
        if record.chunks == 0 && record.target_output_tokens > 0 {
            return fail(
                record,
                Status::Empty,
                "empty",
                "a 200 answer with no generated text",
                key,
            );
        }
        record.status = Status::Ok;
    }
}
