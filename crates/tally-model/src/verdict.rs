//! Verdicts and who set them: [`Verdict`] (`pending` → `keep` | `interesting` | `discard` |
//! `crash`) and [`Actor`] (the loop or a named person).
//!
//! Only the words; how a verdict is decided lives in `tally-stats` and the engine, and the rule
//! that the loop never overwrites a person's verdict is enforced by the store.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A candidate's verdict (`campaign.md` §1).
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
    /// Every verdict, in the order of the spec (`pending` first).
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
    use crate::{Direction, Role};

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
