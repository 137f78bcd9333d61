//! Metric vocabulary: which way a metric improves ([`Direction`]) and what it is for ([`Role`]).
//!
//! Only the words and `gain`; the metric table of `tally.toml` (margins, floors, repeats) is the
//! config's business, not this module's.

use serde::{Deserialize, Serialize};

/// Which way a metric improves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Bigger is better (throughput).
    Higher,
    /// Smaller is better (latency, seconds).
    Lower,
}

impl Direction {
    /// `higher` or `lower`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Higher => "higher",
            Self::Lower => "lower",
        }
    }
    /// Parses `higher` / `lower`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "higher" => Some(Self::Higher),
            "lower" => Some(Self::Lower),
            _ => None,
        }
    }
    /// `gain(a, b)`: positive when `a` is better than `b` (`campaign.md` §4).
    pub fn gain(self, a: f64, b: f64) -> f64 {
        match self {
            Self::Higher => a - b,
            Self::Lower => b - a,
        }
    }
}

/// What a metric is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The one metric the verdict judges.
    Primary,
    /// Must not get worse beyond its margin.
    Guardrail,
    /// Recorded and shown, never judged.
    #[default]
    Watch,
}

impl Role {
    /// `primary`, `guardrail` or `watch`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Primary => "primary",
            Self::Guardrail => "guardrail",
            Self::Watch => "watch",
        }
    }
    /// Parses the wire spelling.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "primary" => Some(Self::Primary),
            "guardrail" => Some(Self::Guardrail),
            "watch" => Some(Self::Watch),
            _ => None,
        }
    }
}
