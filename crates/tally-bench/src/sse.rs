//! An incremental Server-Sent Events parser over bytes, as OpenAI-compatible servers stream.
//!
//! Lines end in `\n` or `\r\n`; `data:` takes an optional single space; several `data:` lines of
//! one event join with `\n`; a blank line ends the event; lines starting with `:` are comments
//! (keep-alive pings), counted but not returned; `event:`, `id:` and `retry:` are ignored. Two
//! tolerances for servers that forget separators: a `data:` line that arrives while the event
//! already holds a complete JSON value (or `[DONE]`) first ends that event, and [`SseParser::finish`]
//! returns a final event that had no blank line after it. Bytes are buffered, not strings, so a
//! UTF-8 character split across network frames survives; data is decoded with replacement only
//! when an event is complete.

/// One parsed event's data (the `data:` lines joined with `\n`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SseEvent {
    /// The data, decoded as UTF-8 with replacement.
    pub data: String,
}

/// The parser state: the unfinished line and the unfinished event.
#[derive(Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    data: Vec<u8>,
    has_data: bool,
    comments: u64,
}

fn is_complete_value(data: &[u8]) -> bool {
    let trimmed = data.trim_ascii();
    trimmed == b"[DONE]"
        || (trimmed.first() == Some(&b'{')
            && serde_json::from_slice::<serde::de::IgnoredAny>(trimmed).is_ok())
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Comment lines seen so far.
    pub fn comments(&self) -> u64 {
        self.comments
    }

    /// Feeds bytes as they arrived; completed events are appended to `out`.
    pub fn feed(&mut self, mut bytes: &[u8], out: &mut Vec<SseEvent>) {
        while let Some(end) = memchr_newline(bytes) {
            if self.line.is_empty() {
                self.process_line(&bytes[..end], out);
            } else {
                self.line.extend_from_slice(&bytes[..end]);
                let line = std::mem::take(&mut self.line);
                self.process_line(&line, out);
                self.line = line;
                self.line.clear();
            }
            bytes = &bytes[end + 1..];
        }
        self.line.extend_from_slice(bytes);
    }

    /// The stream ended: a pending line and event are completed (servers that omit the final
    /// blank line).
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) {
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.process_line(&line, out);
        }
        self.dispatch(out);
    }

    fn process_line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line[0] == b':' {
            self.comments += 1;
            return;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        if field != b"data" {
            return;
        }
        if self.has_data && is_complete_value(&self.data) {
            self.dispatch(out);
        }
        if self.has_data {
            self.data.push(b'\n');
        }
        self.data.extend_from_slice(value);
        self.has_data = true;
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        if self.has_data {
            out.push(SseEvent {
                data: String::from_utf8_lossy(&self.data).into_owned(),
            });
            self.data.clear();
            self.has_data = false;
        }
    }
}

fn memchr_newline(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == b'\n')
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse_in_pieces(stream: &[u8], cuts: &[usize]) -> (Vec<SseEvent>, u64) {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        let mut start = 0;
        for &cut in cuts {
            parser.feed(&stream[start..cut], &mut out);
            start = cut;
        }
        parser.feed(&stream[start..], &mut out);
        parser.finish(&mut out);
        (out, parser.comments())
    }

    fn data(events: &[SseEvent]) -> Vec<&str> {
        events.iter().map(|e| e.data.as_str()).collect()
    }

    const STREAM: &str = ": ping\r\n\r\ndata: {\"a\":\"é€\"}\r\n\r\nevent: x\nid: 3\ndata:line1\ndata: line2\n\n: c2\ndata: [DONE]";

    #[test]
    fn parses_crlf_comments_multiline_and_missing_final_blank_line() {
        let (events, comments) = parse_in_pieces(STREAM.as_bytes(), &[]);
        assert_eq!(data(&events), ["{\"a\":\"é€\"}", "line1\nline2", "[DONE]"]);
        assert_eq!(comments, 2);
    }

    #[test]
    fn split_at_every_byte_gives_the_same_events() {
        let bytes = STREAM.as_bytes();
        let whole = parse_in_pieces(bytes, &[]);
        for cut in 0..=bytes.len() {
            assert_eq!(parse_in_pieces(bytes, &[cut]), whole, "cut at {cut}");
        }
        let every: Vec<usize> = (1..bytes.len()).collect();
        assert_eq!(parse_in_pieces(bytes, &every), whole);
    }

    #[test]
    fn complete_json_without_separator_is_its_own_event() {
        let (events, _) = parse_in_pieces(b"data: {\"k\":1}\ndata: {\"k\":2}\ndata: [DONE]\n", &[]);
        assert_eq!(data(&events), ["{\"k\":1}", "{\"k\":2}", "[DONE]"]);
    }

    proptest! {
        #[test]
        fn any_split_of_a_generated_stream_parses_identically(
            payloads in prop::collection::vec("[a-zé€ {}\":,0-9]{0,12}", 1..6),
            crlf in any::<bool>(),
            cuts in prop::collection::vec(0usize..400, 0..6),
        ) {
            let eol = if crlf { "\r\n" } else { "\n" };
            let mut stream = String::new();
            for (i, payload) in payloads.iter().enumerate() {
                if i % 2 == 1 {
                    stream.push_str(&format!(": keepalive{eol}"));
                }
                stream.push_str(&format!("data: x{payload}{eol}{eol}"));
            }
            let bytes = stream.as_bytes();
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (bytes.len() + 1)).collect();
            cuts.sort_unstable();
            let (events, _) = parse_in_pieces(bytes, &cuts);
            let want: Vec<String> = payloads.iter().map(|p| format!("x{p}")).collect();
            prop_assert_eq!(events.iter().map(|e| e.data.clone()).collect::<Vec<_>>(), want);
        }
    }
}
