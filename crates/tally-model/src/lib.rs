//! `tally-model`: the campaign half's domain types, shared by the store, the engine, the
//! verdict rules and the reports.
//!
//! Pure data: no I/O, no database, no process. Identifiers are newtypes; wire spellings live next
//! to the types so every crate spells them the same way.

use std::fmt;

/// Which way a metric improves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
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

/// A candidate's verdict (`campaign.md` §1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// Not judged yet.
    Pending,
    /// Beats the bar with confidence; becomes the head.
    Keep,
    /// Not a keep, but worth a look.
    Interesting,
    /// No gain.
    Discard,
    /// No successful measurement.
    Crash,
}

impl Verdict {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Keep => "keep",
            Self::Interesting => "interesting",
            Self::Discard => "discard",
            Self::Crash => "crash",
        }
    }
    /// Parses the wire spelling.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "pending" => Self::Pending,
            "keep" => Self::Keep,
            "interesting" => Self::Interesting,
            "discard" => Self::Discard,
            "crash" => Self::Crash,
            _ => return None,
        })
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
