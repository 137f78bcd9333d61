//! The fake server's faults: what one request suffers, chosen by the `x-fake-fault` header or
//! drawn per request id at a configured rate (`SPEC@RATE`), plus the global ones (`pause`,
//! `cold`) that shape every request's timing.

use std::time::Duration;

use crate::error::SpecError;
use crate::rng::{SplitMix64, Uniform, hash_bytes};

/// What one request suffers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Answer with this HTTP status and an OpenAI error body (429 and 503 may carry
    /// `Retry-After` seconds).
    Status {
        /// The status code.
        code: u16,
        /// `Retry-After`, seconds.
        retry_after: Option<u32>,
    },
    /// After K tokens, an `{"error": …}` event, then `[DONE]`.
    StreamError {
        /// Tokens first.
        after: u64,
    },
    /// After K tokens, abort the body (no terminal chunk).
    Cut {
        /// Tokens first.
        after: u64,
    },
    /// Read the request, then drop the connection without a status line.
    CloseBeforeHead,
    /// After K tokens, emit nothing for S ms, then go on.
    Stall {
        /// Tokens first.
        after: u64,
        /// Milliseconds.
        ms: u64,
    },
    /// Never answer.
    Hang,
    /// After K tokens, an event whose data is not JSON, then the rest.
    BadJson {
        /// Tokens first.
        after: u64,
    },
    /// End the stream cleanly without `[DONE]`.
    NoDone,
    /// Wait S ms before the response head.
    SlowHead {
        /// Milliseconds.
        ms: u64,
    },
    /// A 200 stream with no generated text: finish chunk and `[DONE]` only.
    Empty,
}

fn params(spec: &str, body: &str) -> Result<Vec<(String, u64)>, SpecError> {
    body.split(',')
        .filter(|p| !p.is_empty())
        .map(|part| {
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| SpecError::new(spec, format!("expected KEY=VALUE, not {part:?}")))?;
            let value = value
                .parse()
                .map_err(|_| SpecError::new(spec, format!("{value:?} is not a number")))?;
            Ok((key.to_owned(), value))
        })
        .collect()
}

fn param(spec: &str, list: &[(String, u64)], key: &str) -> Result<u64, SpecError> {
    list.iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| *v)
        .ok_or_else(|| SpecError::new(spec, format!("missing {key}=")))
}

impl Fault {
    /// Parses a fault as the header and `--fault` write it.
    pub fn parse(spec: &str) -> Result<Self, SpecError> {
        let spec = spec.trim();
        let (kind, body) = spec.split_once(':').unwrap_or((spec, ""));
        let list = || params(spec, body);
        Ok(match kind {
            "status" => {
                let mut parts = body.split(':');
                let code: u16 = parts
                    .next()
                    .and_then(|c| c.parse().ok())
                    .filter(|c| (400..600).contains(c))
                    .ok_or_else(|| SpecError::new(spec, "expected status:CODE[:RETRY_AFTER]"))?;
                let retry_after = parts
                    .next()
                    .map(str::parse)
                    .transpose()
                    .map_err(|_| SpecError::new(spec, "RETRY_AFTER must be whole seconds"))?;
                Self::Status { code, retry_after }
            }
            "stream_error" => Self::StreamError {
                after: param(spec, &list()?, "after")?,
            },
            "cut" => Self::Cut {
                after: param(spec, &list()?, "after")?,
            },
            "close_before_head" => Self::CloseBeforeHead,
            "stall" => {
                let list = list()?;
                Self::Stall {
                    after: param(spec, &list, "after")?,
                    ms: param(spec, &list, "ms")?,
                }
            }
            "hang" => Self::Hang,
            "bad_json" => Self::BadJson {
                after: param(spec, &list()?, "after")?,
            },
            "no_done" => Self::NoDone,
            "slow_head" => Self::SlowHead {
                ms: param(spec, &list()?, "ms")?,
            },
            "empty" => Self::Empty,
            _ => {
                return Err(SpecError::new(
                    spec,
                    "faults are status, stream_error, cut, close_before_head, stall, hang, \
                     bad_json, no_done, slow_head, empty",
                ));
            }
        })
    }
}

/// A fault drawn at a rate (`SPEC@RATE`, e.g. `status:500@0.02`).
#[derive(Clone, Debug, PartialEq)]
pub struct SeededFault {
    /// The fault.
    pub fault: Fault,
    /// The probability per request.
    pub rate: f64,
}

impl SeededFault {
    /// Parses `SPEC@RATE`.
    pub fn parse(spec: &str) -> Result<Self, SpecError> {
        let (fault, rate) = spec
            .rsplit_once('@')
            .ok_or_else(|| SpecError::new(spec, "expected SPEC@RATE, e.g. status:500@0.02"))?;
        let rate: f64 = rate
            .parse()
            .ok()
            .filter(|r| (0.0..=1.0).contains(r))
            .ok_or_else(|| SpecError::new(spec, "RATE must be in 0..1"))?;
        Ok(Self {
            fault: Fault::parse(fault)?,
            rate,
        })
    }
}

/// Picks the seeded fault of a request id, if any: one uniform draw from (seed, id) against the
/// cumulative rates.
pub fn draw(faults: &[SeededFault], seed: u64, request_id: &str) -> Option<Fault> {
    if faults.is_empty() {
        return None;
    }
    let mut rng = SplitMix64::new(seed ^ hash_bytes(request_id.as_bytes()) ^ 0xfa17);
    let u = rng.next_f64();
    let mut cumulative = 0.0;
    for seeded in faults {
        cumulative += seeded.rate;
        if u < cumulative {
            return Some(seeded.fault.clone());
        }
    }
    None
}

/// The engine emits nothing in [at, at + length) after the server started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pause {
    /// Offset from the server's start.
    pub at: Duration,
    /// Length.
    pub length: Duration,
}

impl Pause {
    /// Parses `at=SECONDS,ms=MS` (SECONDS may be fractional; `at=2s` is accepted).
    pub fn parse(spec: &str) -> Result<Self, SpecError> {
        let mut at = None;
        let mut ms = None;
        for part in spec.trim_start_matches("pause:").split(',') {
            match part.split_once('=') {
                Some(("at", v)) => at = v.trim_end_matches('s').parse::<f64>().ok(),
                Some(("ms", v)) => ms = v.parse::<u64>().ok(),
                _ => return Err(SpecError::new(spec, "expected at=SECONDS,ms=MS")),
            }
        }
        match (at, ms) {
            (Some(at), Some(ms)) if at >= 0.0 => Ok(Self {
                at: Duration::from_secs_f64(at),
                length: Duration::from_millis(ms),
            }),
            _ => Err(SpecError::new(spec, "expected at=SECONDS,ms=MS")),
        }
    }
}

/// The first N requests the server receives get S ms of extra TTFT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cold {
    /// How many requests.
    pub first: u64,
    /// Extra milliseconds.
    pub ms: u64,
}

impl Cold {
    /// Parses `first=N,ms=S`.
    pub fn parse(spec: &str) -> Result<Self, SpecError> {
        let list = params(spec, spec.trim_start_matches("cold:"))?;
        Ok(Self {
            first: param(spec, &list, "first")?,
            ms: param(spec, &list, "ms")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_fault() {
        assert_eq!(
            Fault::parse("status:429:3").unwrap(),
            Fault::Status {
                code: 429,
                retry_after: Some(3)
            }
        );
        assert_eq!(
            Fault::parse("cut:after=3").unwrap(),
            Fault::Cut { after: 3 }
        );
        assert_eq!(
            Fault::parse("stall:after=1,ms=50").unwrap(),
            Fault::Stall { after: 1, ms: 50 }
        );
        assert_eq!(Fault::parse("hang").unwrap(), Fault::Hang);
        for bad in [
            "status:200",
            "cut",
            "stall:after=1",
            "weird",
            "slow_head:ms=x",
        ] {
            assert!(Fault::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(SeededFault::parse("status:500@0.1").unwrap().rate, 0.1);
        assert_eq!(
            Pause::parse("at=2s,ms=1000").unwrap().length,
            Duration::from_secs(1)
        );
        assert_eq!(
            Cold::parse("first=5,ms=500").unwrap(),
            Cold { first: 5, ms: 500 }
        );
    }

    #[test]
    fn seeded_faults_hit_their_rate_and_repeat() {
        let faults = [SeededFault::parse("status:500@0.1").unwrap()];
        let hits = (0..10_000)
            .filter(|i| draw(&faults, 1, &format!("r-{i}")).is_some())
            .count();
        assert!((900..1100).contains(&hits), "{hits}");
        assert_eq!(draw(&faults, 1, "r-7"), draw(&faults, 1, "r-7"));
    }
}
