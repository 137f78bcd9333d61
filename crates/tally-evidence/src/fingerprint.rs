//! Content fingerprints: how two records are compared for de-duplication.
//!
//! The reference compares parsed records with Python value equality (`evidence.md` §4.1). tally
//! decides the same, written down once here:
//! - every typed field compares by value (strings by their code points, integers exactly);
//! - `metadata` compares as a JSON value where object key order is irrelevant and numbers compare
//!   by numeric value across integers, floats and booleans (`1`, `1.0` and `true` are equal; so
//!   are `0`, `-0.0` and `false`), and `NaN` equals `NaN`;
//! - `event_id` is not part of a fingerprint (it is part of the identity key instead).
//!
//! A fingerprint is a 128-bit XXH3 hash of a canonical byte encoding of those values. Two records
//! with equal fingerprints are treated as equal; a collision between different records has
//! probability about 2⁻¹²⁸ per pair, which tally accepts (documented in `docs/evidence.md`).
//! Nothing here does I/O.

use serde_json::Value;
use xxhash_rust::xxh3::Xxh3;

use crate::model::{BusyIntervals, CorrelationContext, EntityRef, EventBody, Metadata, Nanos};

/// A 128-bit content fingerprint.
pub type Fingerprint = u128;

/// A canonical encoder feeding a 128-bit hash. Every value is tagged and length-prefixed, so
/// distinct value sequences never encode to the same bytes.
struct Canon {
    h: Xxh3,
}

impl Canon {
    fn new() -> Self {
        Self { h: Xxh3::new() }
    }
    fn tag(&mut self, t: u8) {
        self.h.update(&[t]);
    }
    fn str(&mut self, s: &str) {
        self.tag(b's');
        self.h.update(&(s.len() as u64).to_le_bytes());
        self.h.update(s.as_bytes());
    }
    fn opt_str(&mut self, s: Option<&str>) {
        match s {
            None => self.tag(b'n'),
            Some(s) => self.str(s),
        }
    }
    fn int(&mut self, v: i128) {
        self.tag(b'i');
        self.h.update(&v.to_le_bytes());
    }
    fn opt_u64(&mut self, v: Option<u64>) {
        match v {
            None => self.tag(b'n'),
            Some(v) => self.int(v as i128),
        }
    }
    fn opt_ns(&mut self, v: Option<Nanos>) {
        match v {
            None => self.tag(b'n'),
            Some(v) => self.int(v as i128),
        }
    }
    fn entity(&mut self, r: &EntityRef) {
        self.tag(b'r');
        self.str(&r.producer_id);
        self.str(&r.id);
    }
    fn opt_entity(&mut self, r: Option<&EntityRef>) {
        match r {
            None => self.tag(b'n'),
            Some(r) => self.entity(r),
        }
    }
    fn finish(&self) -> Fingerprint {
        self.h.digest128()
    }

    /// A JSON value with the reference's equality (see the module docs).
    fn json(&mut self, v: &Value) {
        match v {
            Value::Null => self.tag(b'n'),
            Value::Bool(b) => self.int(i128::from(*b)),
            Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    self.int(i as i128)
                } else if let Some(u) = n.as_u64() {
                    self.int(u as i128)
                } else {
                    self.float(n.as_f64().unwrap_or(f64::NAN))
                }
            }
            Value::String(s) => {
                if let Some(special) = special_float(s) {
                    self.float(special)
                } else {
                    self.str(s)
                }
            }
            Value::Array(items) => {
                self.tag(b'a');
                self.h.update(&(items.len() as u64).to_le_bytes());
                for item in items {
                    self.json(item);
                }
            }
            Value::Object(map) => {
                // serde_json's default map is ordered by key, so iteration order is canonical.
                self.tag(b'o');
                self.h.update(&(map.len() as u64).to_le_bytes());
                for (k, v) in map {
                    self.str(k);
                    self.json(v);
                }
            }
        }
    }

    fn float(&mut self, f: f64) {
        if f.is_nan() {
            self.tag(b'N');
        } else if f.is_finite() && f.fract() == 0.0 && f.abs() < 1.7e38 {
            // Integral floats equal the integer of the same value (Python: 1 == 1.0).
            self.int(f as i128)
        } else {
            self.tag(b'f');
            self.h.update(&f.to_bits().to_le_bytes());
        }
    }
}

/// The sentinel strings [`parse_lenient`] puts where the input had the non-standard literals.
const NAN_SENTINEL: &str = "\u{0}tally:NaN";
const INF_SENTINEL: &str = "\u{0}tally:Infinity";
const NEG_INF_SENTINEL: &str = "\u{0}tally:-Infinity";

fn special_float(s: &str) -> Option<f64> {
    if !s.starts_with('\u{0}') {
        return None;
    }
    match s {
        NAN_SENTINEL => Some(f64::NAN),
        INF_SENTINEL => Some(f64::INFINITY),
        NEG_INF_SENTINEL => Some(f64::NEG_INFINITY),
        _ => None,
    }
}

/// Parses JSON text as the reference's parser does, also accepting the literals `NaN`, `Infinity`
/// and `-Infinity` (which Python's `json` module reads and writes). Those literals come back as
/// sentinel strings that [`fingerprint`](self) compares as the floats they stand for.
pub fn parse_lenient(text: &str) -> Result<Value, serde_json::Error> {
    match serde_json::from_str(text) {
        Ok(v) => Ok(v),
        Err(e) => {
            if !(text.contains("NaN") || text.contains("Infinity")) {
                return Err(e);
            }
            serde_json::from_str(&rewrite_special_literals(text)).map_err(|_| e)
        }
    }
}

/// Replaces bare `NaN`, `Infinity` and `-Infinity` tokens outside strings by sentinel strings.
pub fn rewrite_special_literals(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len() + 32);
    let mut i = 0;
    let mut in_string = false;
    while i < bytes.len() {
        let c = bytes[i];
        if in_string {
            if c == b'\\' && i + 1 < bytes.len() {
                // The escaped character may be multi-byte (an invalid escape such as `\é`).
                let end = i + 1 + utf8_len(bytes[i + 1]);
                out.push_str(&text[i..end]);
                i = end;
                continue;
            }
            if c == b'"' {
                in_string = false;
            }
            let ch_len = utf8_len(c);
            out.push_str(&text[i..i + ch_len]);
            i += ch_len;
            continue;
        }
        let rest = &text[i..];
        let (token, sentinel) = if rest.starts_with("NaN") {
            ("NaN", NAN_SENTINEL)
        } else if rest.starts_with("-Infinity") {
            ("-Infinity", NEG_INF_SENTINEL)
        } else if rest.starts_with("Infinity") {
            ("Infinity", INF_SENTINEL)
        } else {
            ("", "")
        };
        if !token.is_empty() {
            out.push_str(&serde_json::to_string(sentinel).expect("string serialises"));
            i += token.len();
            continue;
        }
        if c == b'"' {
            in_string = true;
        }
        let ch_len = utf8_len(c);
        out.push_str(&text[i..i + ch_len]);
        i += ch_len;
    }
    out
}

fn utf8_len(first: u8) -> usize {
    match first {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        _ => 4,
    }
}

/// Fingerprint of a metadata object by value.
pub fn metadata(meta: &Metadata) -> Fingerprint {
    let mut c = Canon::new();
    metadata_into(&mut c, meta);
    c.finish()
}

fn metadata_into(c: &mut Canon, meta: &Metadata) {
    if meta.is_empty() {
        c.tag(b'o');
        c.h.update(&0u64.to_le_bytes());
        return;
    }
    match parse_lenient(meta.json_text()) {
        Ok(v) => c.json(&v),
        // Unparseable metadata cannot come from the reader; hash the text so it is at least
        // stable.
        Err(_) => c.str(meta.json_text()),
    }
}

/// Fingerprint of a context (all 19 values).
pub fn context(ctx: &CorrelationContext) -> Fingerprint {
    let mut c = Canon::new();
    context_into(&mut c, ctx);
    c.finish()
}

fn context_into(c: &mut Canon, ctx: &CorrelationContext) {
    c.tag(b'C');
    c.str(&ctx.run_id);
    c.str(&ctx.session_id);
    c.str(&ctx.producer_id);
    c.str(&ctx.source);
    c.str(&ctx.clock_domain);
    c.str(ctx.clock_kind.as_str());
    c.str(ctx.collection_mode.as_str());
    c.str(ctx.provenance.as_str());
    for s in [
        &ctx.source_version,
        &ctx.engine,
        &ctx.engine_version,
        &ctx.backend,
        &ctx.backend_version,
        &ctx.host,
        &ctx.device_uuid,
    ] {
        c.opt_str(s.as_deref());
    }
    for v in [ctx.pid, ctx.rank, ctx.local_rank, ctx.world_size] {
        c.opt_u64(v);
    }
}

/// Fingerprint of an event's content without its `event_id`: type, declared version, context,
/// every field and metadata by value.
pub fn event_content(ctx: &CorrelationContext, meta: &Metadata, body: &EventBody) -> Fingerprint {
    let mut c = Canon::new();
    c.str(body.event_type().as_str());
    let version = match body {
        EventBody::Activity(a) if a.intervals != BusyIntervals::Absent => 3,
        _ => 2,
    };
    c.int(version);
    context_into(&mut c, ctx);
    metadata_into(&mut c, meta);
    match body {
        EventBody::Artifact(e) => {
            c.str(&e.artifact_kind);
            c.int(e.created_at_ns as i128);
        }
        EventBody::Request(e) => {
            c.entity(&e.request_ref);
            c.opt_entity(e.attempt_ref.as_ref());
            c.opt_entity(e.backend_request_ref.as_ref());
            c.opt_ns(e.start_ns);
            c.opt_ns(e.end_ns);
            c.opt_str(e.status.as_deref());
            c.opt_u64(e.input_tokens);
            c.opt_u64(e.output_tokens);
            c.opt_u64(e.kv_bytes);
        }
        EventBody::Iteration(e) => {
            c.entity(&e.iteration_ref);
            c.opt_entity(e.batch_ref.as_ref());
            c.opt_ns(e.start_ns);
            c.opt_ns(e.end_ns);
        }
        EventBody::Stage(e) => {
            c.entity(&e.stage_ref);
            c.str(&e.name);
            c.opt_entity(e.request_ref.as_ref());
            c.opt_entity(e.iteration_ref.as_ref());
            c.opt_ns(e.start_ns);
            c.opt_ns(e.end_ns);
            c.opt_u64(e.input_tokens);
            c.opt_u64(e.output_tokens);
            c.opt_u64(e.kv_bytes);
        }
        EventBody::Membership(e) => {
            c.entity(&e.request_ref);
            c.entity(&e.iteration_ref);
            c.str(&e.role);
            c.opt_entity(e.attempt_ref.as_ref());
            c.opt_u64(e.input_tokens);
            c.opt_u64(e.output_tokens);
            c.opt_u64(e.kv_bytes);
        }
        EventBody::Activity(e) => {
            c.entity(&e.activity_ref);
            c.str(&e.activity_kind);
            c.str(e.attribution_status.as_str());
            c.str(e.activity_domain.as_str());
            c.opt_entity(e.iteration_ref.as_ref());
            c.opt_entity(e.correlation_scope.as_ref());
            c.opt_str(e.trace_attachment_id.as_deref());
            c.opt_u64(e.runtime_correlation_id);
            c.opt_u64(e.cuda_correlation_id);
            c.opt_u64(e.stream_id);
            c.opt_u64(e.graph_id);
            c.opt_ns(e.start_ns);
            c.opt_ns(e.end_ns);
            // `intervals` lives in metadata and is covered there.
        }
        EventBody::Capabilities(e) => {
            c.str(&e.component);
            c.int(i128::from(e.available));
            for list in [&e.supported, &e.enabled, &e.collected] {
                c.tag(b'a');
                c.h.update(&(list.len() as u64).to_le_bytes());
                for s in list {
                    c.str(s);
                }
            }
        }
        EventBody::ClockAlignment(e) => {
            c.str(&e.from_clock_domain);
            c.str(&e.to_clock_domain);
            c.int(e.offset_ns as i128);
            c.int(e.uncertainty_ns as i128);
            c.opt_ns(e.valid_from_ns);
            c.opt_ns(e.valid_to_ns);
        }
    }
    c.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(text: &str) -> Fingerprint {
        metadata(&Metadata::from_json_text(text))
    }

    #[test]
    fn metadata_equality_follows_python_values() {
        assert_eq!(meta(r#"{"x":1}"#), meta(r#"{"x":1.0}"#));
        assert_eq!(meta(r#"{"x":1}"#), meta(r#"{"x":true}"#));
        assert_eq!(meta(r#"{"x":0}"#), meta(r#"{"x":-0.0}"#));
        assert_eq!(meta(r#"{"a":1,"b":2}"#), meta(r#"{"b":2,"a":1}"#));
        assert_eq!(meta(r#"{"x":NaN}"#), meta(r#"{"x":NaN}"#));
        assert_eq!(meta("{}"), metadata(&Metadata::empty()));
        assert_ne!(meta(r#"{"x":1}"#), meta(r#"{"x":"1"}"#));
        assert_ne!(meta(r#"{"x":[1,2]}"#), meta(r#"{"x":[2,1]}"#));
        assert_ne!(meta(r#"{"x":1.5}"#), meta(r#"{"x":1}"#));
        assert_ne!(meta(r#"{"x":Infinity}"#), meta(r#"{"x":-Infinity}"#));
    }

    #[test]
    fn special_literals_are_rewritten_outside_strings_only() {
        let v = parse_lenient(r#"{"a":NaN,"b":"NaN","c":[-Infinity]}"#).unwrap();
        assert_eq!(v["b"], "NaN");
        assert_eq!(v["a"], NAN_SENTINEL);
        assert_eq!(v["c"][0], NEG_INF_SENTINEL);
    }
}
