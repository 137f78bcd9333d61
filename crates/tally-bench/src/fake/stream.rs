//! Writing one answer: the SSE events of a stream (role chunk, token chunks grouped by the
//! shape, finish, usage, `[DONE]`, comments, split writes) timed by the token clock, with the
//! stream faults applied; and the JSON body of a non-streamed answer.

use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::mpsc;

use super::body::{Outgoing, TokenFrame};
use super::faults::Fault;
use super::http::Shared;
use super::{StreamShape, UsageMode};
use crate::openai::Api;
use crate::timer::sleep_until;

/// When each token is generated.
#[derive(Debug)]
pub enum TokenClock {
    /// Token j is due at `first + j·gap` (pause-adjusted).
    Exact {
        /// First token.
        first: Instant,
        /// Gap between tokens.
        gap: Duration,
    },
    /// The engine reports each token.
    Engine(mpsc::UnboundedReceiver<Instant>),
}

impl TokenClock {
    /// Waits for token `j`; `wait` false skips the sleep for exact timing (a token that is not
    /// the last of its chunk). `shift` is added by stalls. `None` when the engine is gone.
    async fn token(
        &mut self,
        j: u64,
        wait: bool,
        shift: Duration,
        pause: Option<(Instant, Instant)>,
    ) -> Option<()> {
        match self {
            Self::Exact { first, gap } => {
                if wait {
                    let due = *first + *gap * j as u32 + shift;
                    sleep_until(super::engine::after_pause(due, pause)).await;
                }
                Some(())
            }
            Self::Engine(rx) => rx.recv().await.map(|_| ()),
        }
    }
}

/// One answer to write.
#[derive(Debug)]
pub struct Answer {
    /// Chat or completions.
    pub api: Api,
    /// The model name, as a JSON string.
    pub model_json: String,
    /// The response id.
    pub id: String,
    /// Tokens to generate.
    pub tokens: u64,
    /// `max_tokens` asked.
    pub max_tokens: u64,
    /// Prompt tokens counted.
    pub prompt_tokens: u64,
    /// The request asked for the usage chunk.
    pub include_usage: bool,
    /// The fault applied.
    pub fault: Option<Fault>,
}

impl Answer {
    fn finish_reason(&self) -> &'static str {
        if self.tokens >= self.max_tokens {
            "length"
        } else {
            "stop"
        }
    }

    fn object(&self) -> &'static str {
        match self.api {
            Api::Chat => "chat.completion.chunk",
            Api::Completions => "text_completion",
        }
    }

    fn chunk(&self, text: &str, finish: Option<&str>) -> String {
        let finish = finish.map_or("null".to_owned(), |f| format!("\"{f}\""));
        let choice = match self.api {
            Api::Chat if text.is_empty() && finish == "null" => {
                r#"{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}"#
                    .to_owned()
            }
            Api::Chat if text.is_empty() => {
                format!(r#"{{"index":0,"delta":{{}},"finish_reason":{finish}}}"#)
            }
            Api::Chat => {
                format!(r#"{{"index":0,"delta":{{"content":"{text}"}},"finish_reason":{finish}}}"#)
            }
            Api::Completions => {
                format!(r#"{{"index":0,"text":"{text}","finish_reason":{finish}}}"#)
            }
        };
        format!(
            r#"{{"id":"{}","object":"{}","created":0,"model":{},"choices":[{choice}],"usage":null}}"#,
            self.id,
            self.object(),
            self.model_json
        )
    }

    fn usage_chunk(&self) -> String {
        format!(
            r#"{{"id":"{}","object":"{}","created":0,"model":{},"choices":[],"usage":{{"prompt_tokens":{},"completion_tokens":{},"total_tokens":{}}}}}"#,
            self.id,
            self.object(),
            self.model_json,
            self.prompt_tokens,
            self.tokens,
            self.prompt_tokens + self.tokens
        )
    }

    /// The non-streamed body.
    pub fn full_body(&self, usage: UsageMode, multibyte: bool) -> String {
        let text: String = (0..self.tokens).map(|j| token_text(j, multibyte)).collect();
        let choice = match self.api {
            Api::Chat => format!(
                r#"{{"index":0,"message":{{"role":"assistant","content":"{text}"}},"finish_reason":"{}"}}"#,
                self.finish_reason()
            ),
            Api::Completions => {
                format!(
                    r#"{{"index":0,"text":"{text}","finish_reason":"{}"}}"#,
                    self.finish_reason()
                )
            }
        };
        let usage = if usage == UsageMode::Never {
            "null".to_owned()
        } else {
            format!(
                r#"{{"prompt_tokens":{},"completion_tokens":{},"total_tokens":{}}}"#,
                self.prompt_tokens,
                self.tokens,
                self.prompt_tokens + self.tokens
            )
        };
        let object = if self.api == Api::Chat {
            "chat.completion"
        } else {
            "text_completion"
        };
        format!(
            r#"{{"id":"{}","object":"{object}","created":0,"model":{},"choices":[{choice}],"usage":{usage}}}"#,
            self.id, self.model_json
        )
    }
}

fn token_text(j: u64, multibyte: bool) -> String {
    if multibyte {
        format!("wé{} ", j + 1)
    } else {
        format!("w{} ", j + 1)
    }
}

struct Writer<'a> {
    tx: mpsc::Sender<Result<Outgoing, std::io::Error>>,
    shape: &'a StreamShape,
}

impl Writer<'_> {
    fn event(&self, data: &str) -> String {
        let eol = if self.shape.crlf { "\r\n" } else { "\n" };
        let mut event = format!("data: {data}{eol}{eol}");
        if self.shape.ping {
            event.push_str(&format!(": ping{eol}{eol}"));
        }
        event
    }

    async fn send(&self, text: String) -> bool {
        self.send_marked(text, None).await
    }

    /// Sends text that carries generated tokens (`first`: the first of them), marked so that
    /// the body stamps it as it is written (the last part, when the frame is split).
    async fn send_marked(&self, text: String, token: Option<TokenFrame>) -> bool {
        let bytes = Bytes::from(text);
        let out = |bytes, token| Ok(Outgoing { bytes, token });
        match self.shape.split_at {
            Some(at) if at > 0 && at < bytes.len() => {
                self.tx.send(out(bytes.slice(..at), None)).await.is_ok()
                    && self.tx.send(out(bytes.slice(at..), token)).await.is_ok()
            }
            _ => self.tx.send(out(bytes, token)).await.is_ok(),
        }
    }
}

/// Writes the stream of `answer` into `tx`, its token frames marked for the body to stamp the
/// server-side truth in `slot` as the connection writes them.
pub async fn write_stream(
    shared: &Shared,
    slot: usize,
    answer: Answer,
    mut clock: TokenClock,
    tx: mpsc::Sender<Result<Outgoing, std::io::Error>>,
) {
    let config = &shared.config;
    let writer = Writer {
        tx,
        shape: &config.shape,
    };
    let eol = if config.shape.crlf { "\r\n" } else { "\n" };
    let pause = shared.pause_window();
    if config.shape.ping && !writer.send(format!(": ping{eol}{eol}")).await {
        return;
    }
    if config.shape.role_chunk && !writer.send(writer.event(&answer.chunk("", None))).await {
        return;
    }
    let send_usage = match config.usage {
        UsageMode::Always => true,
        UsageMode::Requested => answer.include_usage,
        UsageMode::Never => false,
    };
    let trailer = |answer: &Answer, done: bool| {
        let mut text = writer.event(&answer.chunk("", Some(answer.finish_reason())));
        if send_usage {
            text.push_str(&writer.event(&answer.usage_chunk()));
        }
        if done {
            text.push_str(&writer.event("[DONE]"));
        }
        text
    };
    if answer.fault == Some(Fault::Empty) || answer.tokens == 0 {
        let mut empty = answer;
        empty.tokens = 0;
        writer.send(trailer(&empty, true)).await;
        return;
    }
    let per_chunk = config.shape.tokens_per_chunk.max(1);
    let mut shift = Duration::ZERO;
    let mut text = String::new();
    for j in 0..answer.tokens {
        match answer.fault {
            Some(Fault::StreamError { after }) if after == j => {
                let error = r#"{"error":{"message":"fake stream error","type":"internal_error","param":null,"code":500}}"#;
                let mut bytes = writer.event(error);
                bytes.push_str(&writer.event("[DONE]"));
                writer.send(bytes).await;
                return;
            }
            Some(Fault::Cut { after }) if after == j => {
                let _ = writer.tx.send(Err(std::io::Error::other("fake cut"))).await;
                return;
            }
            Some(Fault::BadJson { after })
                if after == j && !writer.send(writer.event("{\"choices\": [")).await =>
            {
                return;
            }
            Some(Fault::Stall { after, ms }) if after == j => match clock {
                TokenClock::Exact { .. } => shift = Duration::from_millis(ms),
                TokenClock::Engine(_) => tokio::time::sleep(Duration::from_millis(ms)).await,
            },
            _ => {}
        }
        let last = j + 1 == answer.tokens;
        let ends_chunk = j == 0 || j % per_chunk == 0 || last;
        if clock.token(j, ends_chunk, shift, pause).await.is_none() {
            return;
        }
        text.push_str(&token_text(j, config.shape.multibyte));
        if !ends_chunk {
            continue;
        }
        let mut bytes = writer.event(&answer.chunk(&text, None));
        text.clear();
        if last {
            bytes.push_str(&trailer(&answer, answer.fault != Some(Fault::NoDone)));
        }
        let token = TokenFrame {
            slot,
            first: j == 0,
        };
        if !writer.send_marked(bytes, Some(token)).await {
            return;
        }
    }
}
