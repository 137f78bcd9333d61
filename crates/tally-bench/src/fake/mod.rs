//! The fake OpenAI-compatible server: known timing, seeded faults, and its own record of what it
//! sent, so every figure the client reports has an analytic expected value.
//!
//! It serves `POST /v1/chat/completions`, `POST /v1/completions`, `GET /v1/models`,
//! `GET /health`, and for tests `GET /fake/stats` and `POST /fake/reset`. Prompt tokens are the
//! whitespace words of the prompt (its documented tokenizer); a generated token is one word
//! `w<k>` plus a space. Two timing modes: [`Timing::Exact`] (TTFT and per-token gap drawn per
//! request, frames due at absolute instants) and [`Timing::Batched`] (a continuous-batching
//! engine, see [`engine`]). It runs on its own runtime thread(s) so a test's client and server
//! share one clock (`Instant`) but not one scheduler.

mod body;
pub mod engine;
pub mod faults;
mod http;
mod stats;
mod stream;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

pub use engine::EngineConfig;
pub use faults::{Cold, Fault, Pause, SeededFault};
pub use stats::{ServedRequest, Stats};

use crate::dist::{LengthDist, TimeDist};
use crate::error::SpecError;

/// How long generation takes.
#[derive(Clone, Debug, PartialEq)]
pub enum Timing {
    /// Load-independent: TTFT and per-token gap drawn per request from (seed, request id).
    Exact {
        /// Time to first token, ms.
        ttft: TimeDist,
        /// Gap between tokens, ms.
        gap: TimeDist,
    },
    /// A continuous-batching engine.
    Batched(EngineConfig),
}

/// When the usage chunk is sent on streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UsageMode {
    /// When the request asks (`stream_options.include_usage`).
    Requested,
    /// Always.
    Always,
    /// Never (non-streamed bodies too).
    Never,
}

/// How streams are cut into events and writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamShape {
    /// Tokens per chunk after the first (the first token is alone).
    pub tokens_per_chunk: u64,
    /// An immediate role-only first chunk (`delta: {role, content: ""}`).
    pub role_chunk: bool,
    /// `: ping` comments at the start and after every chunk.
    pub ping: bool,
    /// Lines end in CRLF.
    pub crlf: bool,
    /// Each event is written as two frames split at this byte.
    pub split_at: Option<usize>,
    /// Tokens carry a two-byte UTF-8 character (`wé<k>`), to test splits inside characters.
    pub multibyte: bool,
}

impl Default for StreamShape {
    fn default() -> Self {
        Self {
            tokens_per_chunk: 1,
            role_chunk: false,
            ping: false,
            crlf: false,
            split_at: None,
            multibyte: false,
        }
    }
}

/// Everything that decides the fake server's behaviour.
#[derive(Clone, Debug)]
pub struct FakeConfig {
    /// The timing mode.
    pub timing: Timing,
    /// Stream shape.
    pub shape: StreamShape,
    /// Usage chunk policy.
    pub usage: UsageMode,
    /// Seeded EOS length (without `ignore_eos`, output = min(max_tokens, this)); `None`: always
    /// `max_tokens`.
    pub eos: Option<LengthDist>,
    /// Faults drawn per request.
    pub faults: Vec<SeededFault>,
    /// A global pause.
    pub pause: Option<Pause>,
    /// Cold start of the first requests.
    pub cold: Option<Cold>,
    /// Seed of every per-request draw.
    pub seed: u64,
    /// The model name served.
    pub model: String,
    /// Runtime worker threads.
    pub threads: usize,
}

impl Default for FakeConfig {
    fn default() -> Self {
        Self {
            timing: Timing::Exact {
                ttft: TimeDist::Const(50.0),
                gap: TimeDist::Const(10.0),
            },
            shape: StreamShape::default(),
            usage: UsageMode::Requested,
            eos: None,
            faults: Vec::new(),
            pause: None,
            cold: None,
            seed: 0,
            model: "fake-model".into(),
            threads: 1,
        }
    }
}

/// Whether an address may be served without `--allow-remote`.
pub fn is_loopback(addr: &SocketAddr) -> bool {
    addr.ip().is_loopback()
}

/// A running fake server; dropping it stops it (its runtime and every connection).
#[derive(Debug)]
pub struct FakeServer {
    addr: SocketAddr,
    shared: Arc<http::Shared>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl FakeServer {
    /// Binds `listen` (refusing a non-loopback address unless `allow_remote`) and serves.
    pub fn start(
        config: FakeConfig,
        listen: SocketAddr,
        allow_remote: bool,
    ) -> Result<Self, SpecError> {
        if !allow_remote && !is_loopback(&listen) {
            return Err(SpecError::new(
                &listen.to_string(),
                "the fake server binds loopback addresses only (--allow-remote to override)",
            ));
        }
        let listener = std::net::TcpListener::bind(listen)
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .map_err(|err| SpecError::new(&listen.to_string(), err.to_string()))?;
        let addr = listener
            .local_addr()
            .map_err(|err| SpecError::new(&listen.to_string(), err.to_string()))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(config.threads.max(1))
            .thread_name("fake-llm")
            .enable_all()
            .build()
            .map_err(|err| SpecError::new("runtime", err.to_string()))?;
        let shared = Arc::new(http::Shared::new(config, Instant::now()));
        let serving = shared.clone();
        runtime.spawn(async move {
            if let Ok(listener) = tokio::net::TcpListener::from_std(listener) {
                http::serve(listener, serving).await;
            }
        });
        Ok(Self {
            addr,
            shared,
            runtime: Some(runtime),
        })
    }

    /// Starts on `127.0.0.1:0` (tests).
    pub fn start_local(config: FakeConfig) -> Result<Self, SpecError> {
        Self::start(config, SocketAddr::from(([127, 0, 0, 1], 0)), false)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The OpenAI base URL (`http://ADDR/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// When the server started (the origin of [`Pause::at`]).
    pub fn started(&self) -> Instant {
        self.shared.started
    }

    /// A copy of what the server has seen and sent.
    pub fn stats(&self) -> Stats {
        self.shared
            .stats
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Forgets the stats and the request count (`cold` starts over).
    pub fn reset(&self) {
        self.shared.reset();
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
