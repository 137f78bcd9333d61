//! Distributions named on the command line: token lengths (`fixed:N`, `uniform:LO..HI`,
//! `normal:MEAN,SD[,MIN,MAX]`, `lognormal:MEDIAN,SIGMA[,MIN,MAX]`, `file:PATH`) and durations
//! in milliseconds for the fake server (`const:MS`, `uniform:A..B`, `normal:MU,SIGMA`,
//! `lognormal:MEDIAN,SIGMA`, `exp:MEAN`). Every draw takes one uniform source, so the caller
//! decides which seeded stream a value comes from.

use std::path::Path;

use crate::error::SpecError;
use crate::rng::{Uniform, exponential, standard_normal};

/// A distribution of non-negative integers (token counts).
#[derive(Clone, Debug, PartialEq)]
pub enum LengthDist {
    /// Always N.
    Fixed(u64),
    /// Uniform on the integers LO..=HI.
    Uniform(u64, u64),
    /// Normal, rounded and clamped to [min, max].
    Normal {
        /// Mean.
        mean: f64,
        /// Standard deviation.
        sd: f64,
        /// Smallest value.
        min: u64,
        /// Largest value.
        max: u64,
    },
    /// Log-normal with the given median and log-space sigma, rounded and clamped.
    LogNormal {
        /// Median.
        median: f64,
        /// Sigma of the logarithm.
        sigma: f64,
        /// Smallest value.
        min: u64,
        /// Largest value.
        max: u64,
    },
    /// Values read from a file, one per line, taken by request index (cycling).
    File(Vec<u64>),
}

fn number<T: std::str::FromStr>(text: &str, spec: &str) -> Result<T, SpecError> {
    text.trim()
        .parse()
        .map_err(|_| SpecError::new(spec, format!("{text:?} is not a number")))
}

fn range<T: std::str::FromStr>(body: &str, spec: &str) -> Result<(T, T), SpecError> {
    let (lo, hi) = body
        .split_once("..")
        .ok_or_else(|| SpecError::new(spec, "expected LO..HI"))?;
    Ok((number(lo, spec)?, number(hi, spec)?))
}

fn floats(body: &str, spec: &str) -> Result<Vec<f64>, SpecError> {
    body.split(',').map(|part| number(part, spec)).collect()
}

impl LengthDist {
    /// Parses a length distribution; a `file:` of `in,out` pairs gives its first column.
    pub fn parse(spec: &str) -> Result<Self, SpecError> {
        Self::parse_column(spec, 0)
    }

    /// Parses an output-length distribution: a `file:` of `in,out` pairs gives its second
    /// column (a file of single values, its only one).
    pub fn parse_output(spec: &str) -> Result<Self, SpecError> {
        Self::parse_column(spec, 1)
    }

    fn parse_column(spec: &str, column: usize) -> Result<Self, SpecError> {
        let (kind, body) = spec
            .split_once(':')
            .ok_or_else(|| SpecError::new(spec, "expected KIND:PARAMETERS, e.g. fixed:128"))?;
        let clamp = |parts: &[f64]| -> (u64, u64) {
            let min = parts.get(2).map_or(0, |v| v.max(0.0) as u64);
            let max = parts
                .get(3)
                .map_or(u64::from(u32::MAX), |v| v.max(0.0) as u64);
            (min, max)
        };
        match kind {
            "fixed" => Ok(Self::Fixed(number(body, spec)?)),
            "uniform" => {
                let (lo, hi) = range(body, spec)?;
                if lo > hi {
                    return Err(SpecError::new(spec, "LO must not exceed HI"));
                }
                Ok(Self::Uniform(lo, hi))
            }
            "normal" | "lognormal" => {
                let parts = floats(body, spec)?;
                if !(parts.len() == 2 || parts.len() == 4) || parts[1] < 0.0 {
                    return Err(SpecError::new(
                        spec,
                        "expected CENTER,SPREAD[,MIN,MAX] with SPREAD >= 0",
                    ));
                }
                let (min, max) = clamp(&parts);
                if kind == "normal" {
                    Ok(Self::Normal {
                        mean: parts[0],
                        sd: parts[1],
                        min,
                        max,
                    })
                } else if parts[0] <= 0.0 {
                    Err(SpecError::new(spec, "the median must be positive"))
                } else {
                    Ok(Self::LogNormal {
                        median: parts[0],
                        sigma: parts[1],
                        min,
                        max,
                    })
                }
            }
            "file" => Self::read_file(Path::new(body), spec, column),
            _ => Err(SpecError::new(
                spec,
                "kinds are fixed, uniform, normal, lognormal, file",
            )),
        }
    }

    fn read_file(path: &Path, spec: &str, column: usize) -> Result<Self, SpecError> {
        let text = std::fs::read_to_string(path)
            .map_err(|err| SpecError::new(spec, format!("{}: {err}", path.display())))?;
        let values: Vec<u64> = text
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty() && !line.starts_with('#'))
            .map(|line| {
                let fields: Vec<&str> = line.split(',').collect();
                number(fields.get(column).unwrap_or(&fields[0]), spec)
            })
            .collect::<Result<_, _>>()?;
        if values.is_empty() {
            return Err(SpecError::new(spec, "the file has no values"));
        }
        Ok(Self::File(values))
    }

    /// Draws the value of request `index` from the uniform source.
    pub fn sample(&self, rng: &mut impl Uniform, index: u64) -> u64 {
        let clamped = |x: f64, min: u64, max: u64| (x.round().max(0.0) as u64).clamp(min, max);
        match self {
            Self::Fixed(n) => *n,
            Self::Uniform(lo, hi) => {
                lo + ((rng.next_f64() * (hi - lo + 1) as f64) as u64).min(hi - lo)
            }
            Self::Normal { mean, sd, min, max } => {
                clamped(mean + sd * standard_normal(rng), *min, *max)
            }
            Self::LogNormal {
                median,
                sigma,
                min,
                max,
            } => clamped(median * (sigma * standard_normal(rng)).exp(), *min, *max),
            Self::File(values) => values[(index % values.len() as u64) as usize],
        }
    }

    /// The distribution's mean (files: the mean of their values), for summaries.
    pub fn nominal_mean(&self) -> f64 {
        match self {
            Self::Fixed(n) => *n as f64,
            Self::Uniform(lo, hi) => (*lo + *hi) as f64 / 2.0,
            Self::Normal { mean, .. } => *mean,
            Self::LogNormal { median, sigma, .. } => median * (sigma * sigma / 2.0).exp(),
            Self::File(values) => values.iter().sum::<u64>() as f64 / values.len() as f64,
        }
    }
}

/// A distribution of durations in milliseconds (the fake server's TTFT and token gap).
#[derive(Clone, Debug, PartialEq)]
pub enum TimeDist {
    /// Always MS.
    Const(f64),
    /// Uniform on [A, B).
    Uniform(f64, f64),
    /// Normal, clamped at 0.
    Normal(f64, f64),
    /// Log-normal with the given median and log-space sigma.
    LogNormal(f64, f64),
    /// Exponential with the given mean.
    Exp(f64),
}

impl TimeDist {
    /// Parses a duration distribution (milliseconds).
    pub fn parse(spec: &str) -> Result<Self, SpecError> {
        let (kind, body) = spec.split_once(':').unwrap_or(("const", spec));
        let two = |body: &str| -> Result<(f64, f64), SpecError> {
            let parts = floats(body, spec)?;
            match parts.as_slice() {
                [a, b] if *b >= 0.0 => Ok((*a, *b)),
                _ => Err(SpecError::new(spec, "expected CENTER,SPREAD")),
            }
        };
        let dist = match kind {
            "const" => Self::Const(number(body, spec)?),
            "uniform" => {
                let (a, b) = range(body, spec)?;
                Self::Uniform(a, b)
            }
            "normal" => {
                let (a, b) = two(body)?;
                Self::Normal(a, b)
            }
            "lognormal" => {
                let (a, b) = two(body)?;
                Self::LogNormal(a, b)
            }
            "exp" => Self::Exp(number(body, spec)?),
            _ => {
                return Err(SpecError::new(
                    spec,
                    "kinds are const, uniform, normal, lognormal, exp",
                ));
            }
        };
        let negative = match dist {
            Self::Const(a) | Self::Exp(a) | Self::LogNormal(a, _) => a < 0.0,
            Self::Uniform(a, b) => a < 0.0 || b < a,
            Self::Normal(..) => false,
        };
        if negative {
            return Err(SpecError::new(spec, "durations must be non-negative"));
        }
        Ok(dist)
    }

    /// Draws one duration in milliseconds (never negative).
    pub fn sample_ms(&self, rng: &mut impl Uniform) -> f64 {
        match *self {
            Self::Const(ms) => ms,
            Self::Uniform(a, b) => a + (b - a) * rng.next_f64(),
            Self::Normal(mu, sigma) => (mu + sigma * standard_normal(rng)).max(0.0),
            Self::LogNormal(median, sigma) => median * (sigma * standard_normal(rng)).exp(),
            Self::Exp(mean) => {
                if mean == 0.0 {
                    0.0
                } else {
                    exponential(rng, 1.0 / mean)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    #[test]
    fn parses_every_length_kind() {
        assert_eq!(
            LengthDist::parse("fixed:128").unwrap(),
            LengthDist::Fixed(128)
        );
        assert_eq!(
            LengthDist::parse("uniform:10..20").unwrap(),
            LengthDist::Uniform(10, 20)
        );
        assert!(matches!(
            LengthDist::parse("normal:100,10").unwrap(),
            LengthDist::Normal { min: 0, .. }
        ));
        assert!(matches!(
            LengthDist::parse("lognormal:100,0.5,10,400").unwrap(),
            LengthDist::LogNormal {
                min: 10,
                max: 400,
                ..
            }
        ));
        for bad in [
            "128",
            "uniform:20..10",
            "normal:1",
            "weird:1",
            "fixed:x",
            "lognormal:0,1",
        ] {
            assert!(LengthDist::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn file_lengths_cycle_by_index() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lens.txt");
        std::fs::write(&path, "# lengths\n5\n7,3\n\n9\n").unwrap();
        let dist = LengthDist::parse(&format!("file:{}", path.display())).unwrap();
        let mut rng = SplitMix64::new(1);
        let got: Vec<u64> = (0..4).map(|i| dist.sample(&mut rng, i)).collect();
        assert_eq!(got, [5, 7, 9, 5]);
        let outputs = LengthDist::parse_output(&format!("file:{}", path.display())).unwrap();
        let got: Vec<u64> = (0..3).map(|i| outputs.sample(&mut rng, i)).collect();
        assert_eq!(got, [5, 3, 9]);
    }

    #[test]
    fn samples_stay_in_range() {
        let mut rng = SplitMix64::new(3);
        let uniform = LengthDist::Uniform(10, 12);
        let mut seen = [false; 3];
        for i in 0..1000 {
            let v = uniform.sample(&mut rng, i);
            assert!((10..=12).contains(&v));
            seen[(v - 10) as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
        let normal = LengthDist::parse("normal:50,100,20,60").unwrap();
        assert!((0..1000).all(|i| (20..=60).contains(&normal.sample(&mut rng, i))));
    }

    #[test]
    fn time_distributions() {
        let mut rng = SplitMix64::new(5);
        assert_eq!(TimeDist::parse("50").unwrap().sample_ms(&mut rng), 50.0);
        assert_eq!(TimeDist::parse("const:2.5").unwrap(), TimeDist::Const(2.5));
        let normal = TimeDist::parse("normal:1,10").unwrap();
        assert!((0..1000).all(|_| normal.sample_ms(&mut rng) >= 0.0));
        assert!(TimeDist::parse("uniform:5..1").is_err());
        assert!(TimeDist::parse("exp:-1").is_err());
    }
}
