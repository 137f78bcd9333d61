//! The OpenAI wire format as the client sees it: request bodies for `chat/completions` and
//! `completions`, and the interpretation of one streamed event (generated text or not, usage,
//! finish reason, an error object inside a 200 stream) or of a whole non-streamed body.

use serde::Deserialize;
use serde_json::Value;

/// Which endpoint the client drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    /// `POST {base}/chat/completions` with one user message.
    Chat,
    /// `POST {base}/completions` with a `prompt`.
    Completions,
}

impl Api {
    /// The path below the base URL.
    pub fn path(self) -> &'static str {
        match self {
            Self::Chat => "/chat/completions",
            Self::Completions => "/completions",
        }
    }

    /// The name used on the command line and in records.
    pub fn name(self) -> &'static str {
        match self {
            Self::Chat => "chat",
            Self::Completions => "completions",
        }
    }
}

/// What one request asks for.
#[derive(Clone, Debug)]
pub struct RequestBody<'a> {
    /// The model name.
    pub model: &'a str,
    /// The prompt text.
    pub prompt: &'a str,
    /// `max_tokens`.
    pub max_tokens: u64,
    /// Stream the answer.
    pub stream: bool,
    /// Ask for the usage chunk (`stream_options.include_usage`).
    pub include_usage: bool,
    /// Add `ignore_eos: true` (a vLLM/SGLang extension).
    pub ignore_eos: bool,
}

impl RequestBody<'_> {
    /// The JSON body for `api`.
    pub fn to_json(&self, api: Api) -> Vec<u8> {
        let mut body = serde_json::Map::new();
        body.insert("model".into(), Value::from(self.model));
        match api {
            Api::Chat => {
                body.insert(
                    "messages".into(),
                    serde_json::json!([{"role": "user", "content": self.prompt}]),
                );
            }
            Api::Completions => {
                body.insert("prompt".into(), Value::from(self.prompt));
            }
        }
        body.insert("max_tokens".into(), Value::from(self.max_tokens));
        body.insert("stream".into(), Value::from(self.stream));
        if self.stream && self.include_usage {
            body.insert(
                "stream_options".into(),
                serde_json::json!({"include_usage": true}),
            );
        }
        if self.ignore_eos {
            body.insert("ignore_eos".into(), Value::from(true));
        }
        serde_json::to_vec(&Value::Object(body)).unwrap_or_default()
    }
}

#[derive(Deserialize)]
struct Usage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct Delta {
    content: Option<String>,
    reasoning_content: Option<String>,
    reasoning: Option<String>,
    tool_calls: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    delta: Option<Delta>,
    message: Option<Delta>,
    text: Option<String>,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Payload {
    id: Option<String>,
    #[serde(default)]
    choices: Vec<Choice>,
    usage: Option<Usage>,
    error: Option<Value>,
    object: Option<String>,
    message: Option<String>,
}

/// What one streamed event (or a non-streamed body) says.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EventInfo {
    /// It carries non-empty generated text (content, reasoning, tool-call arguments, or
    /// completions text).
    pub has_text: bool,
    /// The generated text's whitespace-separated words (for non-streamed bodies).
    pub text_words: u64,
    /// `usage.completion_tokens`, when present.
    pub completion_tokens: Option<u64>,
    /// `usage.prompt_tokens`, when present.
    pub prompt_tokens: Option<u64>,
    /// A `finish_reason`, when present.
    pub finish_reason: Option<String>,
    /// The response id.
    pub response_id: Option<String>,
    /// An error object's message (an `error` key, or a flat `{"object": "error"}`).
    pub error: Option<String>,
}

/// How one event's data reads.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// `[DONE]`: the stream is over.
    Done,
    /// A JSON payload.
    Payload(EventInfo),
    /// Not JSON.
    Malformed(String),
}

fn tool_call_text(calls: &Value) -> bool {
    calls.as_array().is_some_and(|calls| {
        calls.iter().any(|call| {
            call.pointer("/function/arguments")
                .and_then(Value::as_str)
                .is_some_and(|s| !s.is_empty())
        })
    })
}

fn error_message(error: &Value) -> String {
    match error {
        Value::String(s) => s.clone(),
        other => other
            .get("message")
            .and_then(Value::as_str)
            .map_or_else(|| other.to_string(), str::to_owned),
    }
}

/// Interprets one event's data.
pub fn interpret(data: &str) -> Event {
    if data.trim() == "[DONE]" {
        return Event::Done;
    }
    let payload: Payload = match serde_json::from_str(data) {
        Ok(payload) => payload,
        Err(err) => return Event::Malformed(format!("malformed JSON in the stream: {err}")),
    };
    let mut info = EventInfo {
        response_id: payload.id,
        ..EventInfo::default()
    };
    if let Some(error) = payload.error.filter(|e| !e.is_null()) {
        info.error = Some(error_message(&error));
    } else if payload.object.as_deref() == Some("error") {
        info.error = Some(payload.message.unwrap_or_else(|| "error object".into()));
    }
    for choice in payload.choices {
        let delta = choice.delta.or(choice.message);
        let mut text_of = |text: Option<&String>| {
            if let Some(text) = text.filter(|t| !t.is_empty()) {
                info.has_text = true;
                info.text_words += text.split_whitespace().count() as u64;
            }
        };
        text_of(choice.text.as_ref());
        if let Some(delta) = &delta {
            text_of(delta.content.as_ref());
            text_of(delta.reasoning_content.as_ref());
            text_of(delta.reasoning.as_ref());
            if delta.tool_calls.as_ref().is_some_and(tool_call_text) {
                info.has_text = true;
            }
        }
        if choice.finish_reason.is_some() {
            info.finish_reason = choice.finish_reason;
        }
    }
    if let Some(usage) = payload.usage {
        info.completion_tokens = usage.completion_tokens;
        info.prompt_tokens = usage.prompt_tokens;
    }
    Event::Payload(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(data: &str) -> EventInfo {
        match interpret(data) {
            Event::Payload(info) => info,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn role_only_and_empty_chunks_carry_no_text() {
        let role = info(
            r#"{"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}"#,
        );
        assert!(!role.has_text);
        assert_eq!(role.response_id.as_deref(), Some("c1"));
        let finish = info(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#);
        assert!(!finish.has_text);
        assert_eq!(finish.finish_reason.as_deref(), Some("length"));
    }

    #[test]
    fn text_reasoning_tools_and_completions_count_as_text() {
        assert!(info(r#"{"choices":[{"delta":{"content":"w1 w2 "}}]}"#).has_text);
        assert!(info(r#"{"choices":[{"delta":{"reasoning_content":"hm"}}]}"#).has_text);
        assert!(info(r#"{"choices":[{"delta":{"reasoning":"hm"}}]}"#).has_text);
        assert!(
            info(r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"{"}}]}}]}"#)
                .has_text
        );
        assert!(
            info(r#"{"object":"text_completion","choices":[{"text":" w1","index":0}]}"#).has_text
        );
    }

    #[test]
    fn usage_errors_and_done() {
        let usage = info(
            r#"{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":20,"total_tokens":27}}"#,
        );
        assert_eq!(
            (usage.prompt_tokens, usage.completion_tokens),
            (Some(7), Some(20))
        );
        let error = info(r#"{"error":{"message":"boom","type":"internal","code":500}}"#);
        assert_eq!(error.error.as_deref(), Some("boom"));
        let flat = info(r#"{"object":"error","message":"flat boom"}"#);
        assert_eq!(flat.error.as_deref(), Some("flat boom"));
        assert!(info(r#"{"error":null,"choices":[]}"#).error.is_none());
        assert_eq!(interpret(" [DONE]"), Event::Done);
        assert!(matches!(interpret("{not json"), Event::Malformed(_)));
    }

    #[test]
    fn bodies_carry_the_owned_fields() {
        let body = RequestBody {
            model: "m",
            prompt: "hi",
            max_tokens: 5,
            stream: true,
            include_usage: true,
            ignore_eos: true,
        };
        let chat: Value = serde_json::from_slice(&body.to_json(Api::Chat)).unwrap();
        assert_eq!(chat["messages"][0]["content"], "hi");
        assert_eq!(chat["stream_options"]["include_usage"], true);
        assert_eq!(chat["ignore_eos"], true);
        let completions: Value = serde_json::from_slice(&body.to_json(Api::Completions)).unwrap();
        assert_eq!(completions["prompt"], "hi");
        assert_eq!(completions["max_tokens"], 5);
    }
}
