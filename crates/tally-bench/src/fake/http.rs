//! The fake server's HTTP side: the accept loop (`TCP_NODELAY` on every socket, keep-alive),
//! routing, reading a completion request, applying the request-level faults, and handing the
//! answer to [`super::stream`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::sync::mpsc;

use super::body::FakeBody;
use super::engine::{self, EngineJob};
use super::faults::{self, Fault};
use super::stats::{ServedRequest, Stats};
use super::stream::{Answer, TokenClock, write_stream};
use super::{FakeConfig, Timing, UsageMode};
use crate::openai::Api;
use crate::rng::{SplitMix64, hash_bytes};
use crate::rx_stamp::{RxStamp, StampedStream};
use crate::workload::digest;

/// State shared by every connection.
#[derive(Debug)]
pub struct Shared {
    pub(super) config: FakeConfig,
    pub(super) started: Instant,
    pub(super) stats: Mutex<Stats>,
    received: AtomicU64,
    engine: Mutex<Option<mpsc::UnboundedSender<EngineJob>>>,
    engine_rx: Mutex<Option<mpsc::UnboundedReceiver<EngineJob>>>,
}

impl Shared {
    pub(super) fn new(config: FakeConfig, started: Instant) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Self {
            config,
            started,
            stats: Mutex::new(Stats::default()),
            received: AtomicU64::new(0),
            engine: Mutex::new(Some(tx)),
            engine_rx: Mutex::new(Some(rx)),
        }
    }

    pub(super) fn reset(&self) {
        *self.stats.lock().unwrap_or_else(|e| e.into_inner()) = Stats::default();
        self.received.store(0, Ordering::SeqCst);
    }

    /// The pause window on the clock.
    pub fn pause_window(&self) -> Option<(Instant, Instant)> {
        self.config
            .pause
            .map(|p| (self.started + p.at, self.started + p.at + p.length))
    }

    /// Stamps a frame with generated text of the request in `slot`.
    pub fn stamp(&self, slot: usize, at: Instant, first: bool) {
        let mut stats = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(request) = stats.requests.get_mut(slot) {
            if first {
                request.first_token_sent = Some(at);
            }
            request.last_token_sent = Some(at);
        }
    }

    fn with_stats<T>(&self, f: impl FnOnce(&mut Stats) -> T) -> T {
        f(&mut self.stats.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Decrements the in-flight count when a completion request ends (moved into the stream's
/// writer task when the answer is streamed).
struct InFlight(Arc<Shared>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0
            .with_stats(|s| s.in_flight = s.in_flight.saturating_sub(1));
    }
}

/// Accepts connections until the runtime is shut down.
pub async fn serve(listener: tokio::net::TcpListener, shared: Arc<Shared>) {
    if let Timing::Batched(config) = &shared.config.timing
        && let Some(rx) = shared
            .engine_rx
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    {
        tokio::spawn(engine::run(config.clone(), rx, shared.pause_window()));
    }
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        let stream = StampedStream::new(stream);
        let stamp = stream.stamp();
        shared.with_stats(|s| s.connections_accepted += 1);
        let shared = shared.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let (shared, stamp) = (shared.clone(), stamp.clone());
                async move { route(shared, &stamp, request).await }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

type Reply = Result<Response<FakeBody>, std::io::Error>;

fn json(status: StatusCode, body: String) -> Reply {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(FakeBody::full(body))
        .map_err(std::io::Error::other)
}

fn error_reply(status: StatusCode, message: &str, retry_after: Option<u32>) -> Reply {
    let body = serde_json::json!({"error": {"message": message, "type": "fake_error", "param": null, "code": status.as_u16()}});
    let mut response = json(status, body.to_string())?;
    if let Some(seconds) = retry_after {
        response.headers_mut().insert("retry-after", seconds.into());
    }
    Ok(response)
}

async fn route(shared: Arc<Shared>, stamp: &RxStamp, request: Request<Incoming>) -> Reply {
    let path = request.uri().path().trim_end_matches('/').to_owned();
    match (request.method().clone(), path.as_str()) {
        (Method::GET, "/health") => json(StatusCode::OK, "{}".into()),
        (Method::GET, "/v1/models") => json(
            StatusCode::OK,
            serde_json::json!({"object": "list", "data": [{"id": shared.config.model, "object": "model", "owned_by": "tally"}]}).to_string(),
        ),
        (Method::GET, "/fake/stats") => {
            let stats = shared.with_stats(|s| s.to_json(shared.started));
            json(StatusCode::OK, stats.to_string())
        }
        (Method::POST, "/fake/reset") => {
            shared.reset();
            json(StatusCode::OK, "{}".into())
        }
        (Method::POST, "/v1/chat/completions") => complete(shared, stamp, request, Api::Chat).await,
        (Method::POST, "/v1/completions") => complete(shared, stamp, request, Api::Completions).await,
        _ => error_reply(StatusCode::NOT_FOUND, "no such route", None),
    }
}

/// What the request asked for.
struct Asked {
    stream: bool,
    include_usage: bool,
    max_tokens: u64,
    ignore_eos: bool,
    prompt_tokens: u64,
}

fn read_request(body: &[u8], api: Api) -> Result<Asked, String> {
    let value: Value =
        serde_json::from_slice(body).map_err(|err| format!("invalid JSON: {err}"))?;
    let words = |text: &str| text.split_whitespace().count() as u64;
    let prompt_tokens = match api {
        Api::Chat => value
            .get("messages")
            .and_then(Value::as_array)
            .ok_or("messages is required")?
            .iter()
            .filter_map(|m| m.get("content").and_then(Value::as_str))
            .map(words)
            .sum(),
        Api::Completions => match value.get("prompt") {
            Some(Value::String(text)) => words(text),
            Some(Value::Array(ids)) => ids.len() as u64,
            _ => return Err("prompt is required".into()),
        },
    };
    let max_tokens = value
        .get("max_tokens")
        .or_else(|| value.get("max_completion_tokens"))
        .and_then(Value::as_u64)
        .unwrap_or(16);
    Ok(Asked {
        stream: value
            .get("stream")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        include_usage: value
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        max_tokens,
        ignore_eos: value
            .get("ignore_eos")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        prompt_tokens,
    })
}

async fn complete(
    shared: Arc<Shared>,
    stamp: &RxStamp,
    request: Request<Incoming>,
    api: Api,
) -> Reply {
    let header = |name: &str| {
        request
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let ordinal = shared.received.fetch_add(1, Ordering::SeqCst);
    let request_id = header("x-request-id").unwrap_or_else(|| format!("fake-{ordinal}"));
    let forced = match header("x-fake-fault")
        .map(|spec| Fault::parse(&spec))
        .transpose()
    {
        Ok(forced) => forced,
        Err(err) => return error_reply(StatusCode::BAD_REQUEST, &err.to_string(), None),
    };
    let body: Bytes = match request.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(err) => return Err(std::io::Error::other(err)),
    };
    let received = Instant::now();
    // The kernel's receive time of the request's last bytes (the request's arrival at the host,
    // before any wait for this server to read it), else the read itself.
    let arrived = stamp
        .latest()
        .filter(|at| *at <= received)
        .unwrap_or(received);
    let asked = match read_request(&body, api) {
        Ok(asked) => asked,
        Err(message) => return error_reply(StatusCode::BAD_REQUEST, &message, None),
    };
    let config = &shared.config;
    let fault = forced.or_else(|| faults::draw(&config.faults, config.seed, &request_id));
    let mut rng = SplitMix64::new(config.seed ^ hash_bytes(request_id.as_bytes()));
    let tokens = match (&config.eos, asked.ignore_eos) {
        (Some(eos), false) => asked.max_tokens.min(eos.sample(&mut rng, ordinal)),
        _ => asked.max_tokens,
    };
    let slot = shared.with_stats(|s| {
        s.in_flight += 1;
        s.peak_concurrency = s.peak_concurrency.max(s.in_flight);
        let outcome = fault.as_ref().map_or("ok".to_owned(), |f| {
            format!(
                "fault:{}",
                format!("{f:?}")
                    .split([' ', '{'])
                    .next()
                    .unwrap_or("?")
                    .to_lowercase()
            )
        });
        *s.requests_by_outcome.entry(outcome).or_insert(0) += 1;
        s.requests.push(ServedRequest {
            request_id: request_id.clone(),
            body_digest: digest(&String::from_utf8_lossy(&body)),
            arrived,
            received,
            first_token_sent: None,
            last_token_sent: None,
            prompt_tokens: asked.prompt_tokens,
            output_tokens: tokens,
            fault: fault.as_ref().map(|f| format!("{f:?}")),
        });
        s.requests.len() - 1
    });
    let in_flight = InFlight(shared.clone());
    match &fault {
        Some(Fault::Status { code, retry_after }) => {
            let status = StatusCode::from_u16(*code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            return error_reply(status, "fake failure", *retry_after);
        }
        Some(Fault::CloseBeforeHead) => {
            return Err(std::io::Error::other("fake close before head"));
        }
        Some(Fault::Hang) => {
            std::future::pending::<()>().await;
        }
        Some(Fault::SlowHead { ms }) => tokio::time::sleep(Duration::from_millis(*ms)).await,
        _ => {}
    }
    let cold = config
        .cold
        .filter(|c| ordinal < c.first)
        .map_or(Duration::ZERO, |c| Duration::from_millis(c.ms));
    let clock = match &config.timing {
        Timing::Exact { ttft, gap } => {
            let ttft = Duration::from_secs_f64(ttft.sample_ms(&mut rng) / 1e3);
            let gap = Duration::from_secs_f64(gap.sample_ms(&mut rng) / 1e3);
            TokenClock::Exact {
                first: arrived + cold + ttft,
                gap,
            }
        }
        Timing::Batched(_) => {
            let (tx, rx) = mpsc::unbounded_channel();
            if !cold.is_zero() {
                tokio::time::sleep(cold).await;
            }
            let engine = shared
                .engine
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            if tokens > 0
                && let Some(engine) = engine
            {
                let _ = engine.send(EngineJob {
                    prompt_tokens: asked.prompt_tokens,
                    output_tokens: tokens,
                    tokens: tx,
                });
            }
            TokenClock::Engine(rx)
        }
    };
    let answer = Answer {
        api,
        model_json: Value::from(config.model.as_str()).to_string(),
        id: format!("cmpl-{request_id}"),
        tokens,
        max_tokens: asked.max_tokens,
        prompt_tokens: asked.prompt_tokens,
        include_usage: asked.include_usage,
        fault,
    };
    if !asked.stream {
        return full_answer(&shared, slot, answer, clock, in_flight).await;
    }
    let (tx, rx) = mpsc::channel(64);
    let stamps = shared.clone();
    tokio::spawn(async move {
        write_stream(&in_flight.0, slot, answer, clock, tx).await;
        drop(in_flight);
    });
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(FakeBody::Channel { rx, shared: stamps })
        .map_err(std::io::Error::other)
}

async fn full_answer(
    shared: &Shared,
    slot: usize,
    answer: Answer,
    mut clock: TokenClock,
    _in_flight: InFlight,
) -> Reply {
    let pause = shared.pause_window();
    match &mut clock {
        TokenClock::Exact { first, gap } if answer.tokens > 0 => {
            let due = *first + *gap * (answer.tokens - 1) as u32;
            crate::timer::sleep_until(engine::after_pause(due, pause)).await;
        }
        TokenClock::Exact { .. } => {}
        TokenClock::Engine(rx) => while rx.recv().await.is_some() {},
    }
    shared.stamp(slot, Instant::now(), true);
    let usage = if shared.config.usage == UsageMode::Never {
        UsageMode::Never
    } else {
        UsageMode::Always
    };
    json(
        StatusCode::OK,
        answer.full_body(usage, shared.config.shape.multibyte),
    )
}
