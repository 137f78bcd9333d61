//! Open-loop arrival schedules, fixed before the first send: offsets in seconds from the phase
//! start for `fixed`, `poisson`, `gamma`, `burst` and `replay`, cut by a request count and/or a
//! duration, with the *scheduled endpoint* that rates divide by (for a count-bounded schedule the
//! first offset strictly after the last kept one, as stormlog does: 2 fixed arrivals at 10/s
//! span 0.2 s). Randomness is a seeded SplitMix64 stream, or with [`RngMode::Stormlog`] a
//! CPython-compatible MT19937 so stormlog's `arrival_offsets` are reproduced bit for bit.

use std::path::Path;

use crate::error::SpecError;
use crate::rng::{PythonMt, SplitMix64, Uniform, exponential, gamma};

/// No schedule may hold more arrivals than this.
pub const MAX_ARRIVALS: usize = 1_000_000;

/// How arrivals are spaced.
#[derive(Clone, Debug, PartialEq)]
pub enum ArrivalModel {
    /// t_k = k/λ.
    Fixed {
        /// Requests per second.
        rate: f64,
    },
    /// Exponential gaps with rate λ, starting at 0.
    Poisson {
        /// Requests per second.
        rate: f64,
    },
    /// Gamma gaps: shape β, scale 1/(λβ) (mean 1/λ, CV 1/√β).
    Gamma {
        /// Requests per second.
        rate: f64,
        /// β; 1 is Poisson.
        burstiness: f64,
    },
    /// t_k = ⌊k/b⌋·T.
    Burst {
        /// Requests per burst.
        size: u64,
        /// Seconds between bursts.
        interval: f64,
    },
    /// Offsets from a file, sorted and shifted to start at 0.
    Replay {
        /// Seconds.
        offsets: Vec<f64>,
    },
}

/// Which generator draws random gaps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RngMode {
    /// tally's SplitMix64 stream.
    Tally,
    /// CPython's `random.Random(seed)` (stormlog's generator).
    Stormlog,
}

/// A fixed schedule.
#[derive(Clone, Debug, PartialEq)]
pub struct Schedule {
    /// Seconds from the phase start, ascending.
    pub offsets: Vec<f64>,
    /// The end of the scheduled window, seconds (rates of a count-bounded open loop divide by it).
    pub endpoint: f64,
}

enum Source {
    Tally(SplitMix64),
    Python(Box<PythonMt>),
}

impl Uniform for Source {
    fn next_f64(&mut self) -> f64 {
        match self {
            Self::Tally(rng) => rng.next_f64(),
            Self::Python(rng) => rng.next_f64(),
        }
    }
}

impl ArrivalModel {
    /// The nominal rate (requests per second) of the model.
    pub fn rate(&self) -> f64 {
        match self {
            Self::Fixed { rate } | Self::Poisson { rate } | Self::Gamma { rate, .. } => *rate,
            Self::Burst { size, interval } => *size as f64 / interval,
            Self::Replay { offsets } => match offsets.last() {
                Some(&last) if last > 0.0 => (offsets.len() - 1) as f64 / last,
                _ => f64::INFINITY,
            },
        }
    }

    /// Builds the schedule of at most `requests` arrivals with offsets before `duration`
    /// seconds (at least one bound must be given).
    pub fn schedule(
        &self,
        seed: u64,
        rng_mode: RngMode,
        requests: Option<u64>,
        duration: Option<f64>,
    ) -> Result<Schedule, SpecError> {
        let cap = requests.map_or(MAX_ARRIVALS, |n| (n as usize).min(MAX_ARRIVALS));
        let mut source = match rng_mode {
            RngMode::Tally => Source::Tally(SplitMix64::for_stream(seed, "arrivals")),
            RngMode::Stormlog => Source::Python(Box::new(PythonMt::new(seed))),
        };
        if matches!(self, Self::Gamma { .. }) && rng_mode == RngMode::Stormlog {
            return Err(SpecError::new(
                "stormlog",
                "--rng stormlog supports fixed, poisson and burst",
            ));
        }
        let mut offsets = Vec::new();
        let mut k: u64 = 0;
        let mut previous = 0.0f64;
        let next = |k: u64, previous: f64, source: &mut Source| -> Option<f64> {
            Some(match self {
                Self::Fixed { rate } => k as f64 / rate,
                Self::Poisson { .. } | Self::Gamma { .. } if k == 0 => 0.0,
                Self::Poisson { rate } => previous + exponential(source, *rate),
                Self::Gamma { rate, burstiness } => {
                    previous + gamma(source, *burstiness, 1.0 / (rate * burstiness))
                }
                Self::Burst { size, interval } => (k / size) as f64 * interval,
                Self::Replay { offsets } => *offsets.get(k as usize)?,
            })
        };
        let endpoint = loop {
            let Some(t) = next(k, previous, &mut source) else {
                // A replay file ran out: the window ends one mean gap after its last arrival.
                let last = offsets.last().copied().unwrap_or(0.0);
                let gap = if offsets.len() > 1 {
                    last / (offsets.len() - 1) as f64
                } else {
                    0.0
                };
                break duration.unwrap_or(last + gap);
            };
            if duration.is_some_and(|d| t >= d) {
                break duration.unwrap_or(t);
            }
            if offsets.len() >= cap {
                // The first unbounded offset strictly after the last kept one.
                let last = offsets.last().copied().unwrap_or(0.0);
                let mut t = t;
                let mut j = k;
                while t <= last {
                    j += 1;
                    match next(j, t, &mut source) {
                        Some(v) => t = v,
                        None => break,
                    }
                }
                break match duration {
                    Some(d) if t > d => d,
                    _ => t,
                };
            }
            offsets.push(t);
            previous = t;
            k += 1;
        };
        if requests.is_none() && duration.is_none() && !matches!(self, Self::Replay { .. }) {
            return Err(SpecError::new("bounds", "give --requests or --duration"));
        }
        Ok(Schedule { offsets, endpoint })
    }
}

/// Reads a replay file: JSONL lines with `offset_ms`, or request records of an earlier tally run
/// (their `intended_offset_ms`); sorted and shifted so the first is 0.
pub fn read_replay(path: &Path) -> Result<Vec<f64>, SpecError> {
    let spec = path.display().to_string();
    let text =
        std::fs::read_to_string(path).map_err(|err| SpecError::new(&spec, err.to_string()))?;
    let mut offsets = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let value: serde_json::Value = serde_json::from_str(line)
            .map_err(|err| SpecError::new(&spec, format!("line {}: {err}", n + 1)))?;
        if value
            .get("type")
            .and_then(|t| t.as_str())
            .is_some_and(|t| t != "tally.bench.request")
        {
            continue;
        }
        let ms = value
            .get("offset_ms")
            .or_else(|| value.get("intended_offset_ms"))
            .and_then(serde_json::Value::as_f64)
            .filter(|ms| ms.is_finite() && *ms >= 0.0)
            .ok_or_else(|| {
                SpecError::new(&spec, format!("line {}: no non-negative offset_ms", n + 1))
            })?;
        offsets.push(ms);
    }
    if offsets.is_empty() {
        return Err(SpecError::new(&spec, "no arrivals"));
    }
    offsets.sort_by(f64::total_cmp);
    let first = offsets[0];
    Ok(offsets.into_iter().map(|ms| (ms - first) / 1e3).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stormlog_vectors_bit_for_bit() {
        // stormlog 0.4.3 `arrival_offsets`, poisson, rate 10, seed 0, 5 arrivals.
        let poisson = ArrivalModel::Poisson { rate: 10.0 }
            .schedule(0, RngMode::Stormlog, Some(5), None)
            .unwrap();
        assert_eq!(
            poisson.offsets,
            [
                0.0,
                0.18606071110652234,
                0.32792362640369854,
                0.3824949409578578,
                0.4124591721792392
            ]
        );
        assert_eq!(poisson.endpoint, 0.48405464715595425);
        let burst = ArrivalModel::Burst {
            size: 3,
            interval: 0.5,
        }
        .schedule(0, RngMode::Stormlog, Some(7), None)
        .unwrap();
        assert_eq!(burst.offsets, [0.0, 0.0, 0.0, 0.5, 0.5, 0.5, 1.0]);
        assert_eq!(burst.endpoint, 1.5);
        let fixed = ArrivalModel::Fixed { rate: 4.0 }
            .schedule(0, RngMode::Stormlog, None, Some(1.0))
            .unwrap();
        assert_eq!(fixed.offsets, [0.0, 0.25, 0.5, 0.75]);
        assert_eq!(fixed.endpoint, 1.0);
    }

    #[test]
    fn count_bounded_endpoint_is_the_next_slot() {
        let two = ArrivalModel::Fixed { rate: 10.0 }
            .schedule(0, RngMode::Tally, Some(2), None)
            .unwrap();
        assert_eq!(two.offsets, [0.0, 0.1]);
        assert!((two.endpoint - 0.2).abs() < 1e-12);
        let hundred = ArrivalModel::Fixed { rate: 20.0 }
            .schedule(0, RngMode::Tally, None, Some(5.0))
            .unwrap();
        assert_eq!(hundred.offsets.len(), 100);
        assert_eq!(hundred.endpoint, 5.0);
    }

    #[test]
    fn seeded_schedules_repeat_and_differ() {
        let model = ArrivalModel::Poisson { rate: 50.0 };
        let a = model.schedule(1, RngMode::Tally, Some(200), None).unwrap();
        let b = model.schedule(1, RngMode::Tally, Some(200), None).unwrap();
        let c = model.schedule(2, RngMode::Tally, Some(200), None).unwrap();
        assert_eq!(a, b);
        assert_ne!(a.offsets, c.offsets);
        let gamma = ArrivalModel::Gamma {
            rate: 100.0,
            burstiness: 0.25,
        }
        .schedule(3, RngMode::Tally, Some(20_000), None)
        .unwrap();
        let gaps: Vec<f64> = gamma.offsets.windows(2).map(|w| w[1] - w[0]).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let cv = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt()
            / mean;
        assert!((mean - 0.01).abs() < 0.0005, "{mean}");
        assert!((cv - 2.0).abs() < 0.1, "{cv}");
    }

    #[test]
    fn replay_reads_offsets_and_records() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("arrivals.jsonl");
        std::fs::write(
            &path,
            "{\"offset_ms\": 250}\n{\"offset_ms\": 50}\n{\"type\":\"tally.bench.run\"}\n{\"type\":\"tally.bench.request\",\"intended_offset_ms\":150}\n",
        )
        .unwrap();
        let offsets = read_replay(&path).unwrap();
        assert_eq!(offsets, [0.0, 0.1, 0.2]);
        let schedule = ArrivalModel::Replay { offsets }
            .schedule(0, RngMode::Tally, None, None)
            .unwrap();
        assert_eq!(schedule.offsets.len(), 3);
        assert!((schedule.endpoint - 0.3).abs() < 1e-12);
    }
}
