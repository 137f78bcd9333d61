//! The words of judging: which way a metric improves ([`Direction`], with `gain`), what a metric
//! is for ([`Role`]), a candidate's [`Verdict`], and who set something ([`Actor`]: the loop or a
//! named person).
//!
//! Only the words; how a verdict is decided lives in `tally-stats` and the engine, the metric
//! table of `tally.toml` (margins, floors, repeats) is the config's business, and the rule that
//! the loop never overwrites a person's verdict is enforced by the store.

use std::fmt;

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
    /// `gain(a, b)`: positive when `a` is better than `b` (`docs/campaign.md#metrics`).
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

/// A candidate's verdict (`docs/campaign.md#vocabulary`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
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

impl Verdict {
    /// Every verdict, in the order `docs/campaign.md#vocabulary` lists them (`pending` first).
    pub const ALL: [Verdict; 5] = [
        Self::Pending,
        Self::Keep,
        Self::Interesting,
        Self::Discard,
        Self::Crash,
    ];

    /// True for every verdict but `pending`.
    pub fn is_judged(self) -> bool {
        self != Self::Pending
    }
}

/// Who wrote something: the campaign loop, or a person (by name) through a command such as
/// `tally candidate verdict` or `tally measurement add`.
///
/// JSON: `"loop"` or `{"person": "alice"}`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Actor {
    /// The campaign engine (`tally run`, `tally init`).
    Loop,
    /// A person or script, by the name the caller gave (e.g. `$USER`).
    Person(String),
}

impl Actor {
    /// True for [`Actor::Person`].
    pub fn is_person(&self) -> bool {
        matches!(self, Self::Person(_))
    }
}

impl fmt::Display for Actor {
    /// `loop`, or the person's name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Loop => f.write_str("loop"),
            Self::Person(name) => f.write_str(name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_uses_the_wire_spellings() {
        for v in Verdict::ALL {
            assert_eq!(
                serde_json::to_string(&v).unwrap(),
                format!("\"{}\"", v.as_str())
            );
            assert_eq!(Verdict::parse(v.as_str()), Some(v));
        }
        assert_eq!(
            serde_json::to_string(&Direction::Lower).unwrap(),
            "\"lower\""
        );
        assert_eq!(
            serde_json::to_string(&Role::Guardrail).unwrap(),
            "\"guardrail\""
        );
        assert!(!Verdict::Pending.is_judged() && Verdict::Crash.is_judged());
        assert_eq!(Actor::Person("ana".into()).to_string(), "ana");
        assert_eq!(Actor::Loop.to_string(), "loop");
    }
}
