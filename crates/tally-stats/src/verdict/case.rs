//! The verdict case of `docs/campaign.md#verdict-case` and the judgement a rule returns, with their JSON
//! shape (they are the input and result of `verdict_rule.decide` for out-of-tree rules, `docs/campaign.md#external-providers`).
//!
//! Maps are `BTreeMap`s so the JSON is sorted and a case serialises the same way every time.
//! `Direction` and `Verdict` come from `tally-model` and are spelled on the wire with their own
//! `as_str` / `parse`. This module holds data only; deciding lives in `rule`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use tally_model::{Direction, Verdict};

/// Everything a verdict rule sees about one candidate and its bar.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerdictCase {
    /// The primary metric.
    pub primary: Criterion,
    /// The guardrail metrics, in `tally.toml` order.
    #[serde(default)]
    pub guardrails: Vec<Guardrail>,
    /// The candidate being judged.
    pub candidate: Side,
    /// What it is judged against (the head, usually).
    pub bar: Side,
}

/// A judged metric: its name, which way is better, and whether one measurement is exact.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Criterion {
    /// Metric name, as printed by the evaluate command.
    pub name: String,
    /// Which way the metric improves.
    #[serde(with = "direction_wire")]
    pub direction: Direction,
    /// `deterministic = true`: the metric has no noise, so comparing two means is allowed
    /// (the aggregate path of `docs/campaign.md#bootstrap`).
    #[serde(default)]
    pub deterministic: bool,
}

/// A guardrail: a metric that may not get worse by more than `margin`, nor pass `floor`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Guardrail {
    /// Metric name.
    pub name: String,
    /// Which way the metric improves.
    #[serde(with = "direction_wire")]
    pub direction: Direction,
    /// How much worse it may get, in the metric's units (0 when not configured).
    #[serde(default)]
    pub margin: f64,
    /// Hard limit on the candidate's value: below it for `higher`, above it for `lower`.
    #[serde(default)]
    pub floor: Option<f64>,
    /// See [`Criterion::deterministic`].
    #[serde(default)]
    pub deterministic: bool,
}

impl Guardrail {
    /// The guardrail as a criterion (name, direction, determinism).
    pub fn criterion(&self) -> Criterion {
        Criterion {
            name: self.name.clone(),
            direction: self.direction,
            deterministic: self.deterministic,
        }
    }

    /// Whether `value` is past the floor (equal is not past).
    pub fn past_floor(&self, value: f64) -> bool {
        match self.floor {
            Some(floor) => self.direction.gain(value, floor) < 0.0,
            None => false,
        }
    }
}

/// One side of a case: a candidate's measurements under the current evaluator.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Side {
    /// The candidate's id (shown as `candidate#<id>`).
    pub id: u64,
    /// Metric → mean over the successful measurements. A metric with no successful
    /// measurement is absent.
    #[serde(default)]
    pub means: BTreeMap<String, f64>,
    /// Metric → unit id → mean contribution (`docs/campaign.md#units`).
    #[serde(default)]
    pub units: BTreeMap<String, BTreeMap<String, f64>>,
    /// Metric → the values of the paired samples, the i-th next to the other side's i-th.
    #[serde(default)]
    pub samples: BTreeMap<String, Vec<f64>>,
}

impl Side {
    /// The mean of `metric`, when present and finite.
    pub fn mean(&self, metric: &str) -> Option<f64> {
        self.means.get(metric).copied().filter(|v| v.is_finite())
    }
}

/// A rule's answer: the outcome and a one-line reason.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Judgement {
    /// `keep`, `interesting`, `discard` or `crash`.
    #[serde(with = "verdict_wire")]
    pub outcome: Verdict,
    /// One line saying why.
    pub reason: String,
}

impl Judgement {
    /// A judgement with this outcome and reason.
    pub fn new(outcome: Verdict, reason: impl Into<String>) -> Self {
        Self {
            outcome,
            reason: reason.into(),
        }
    }
}

/// `Direction` on the wire: `"higher"` / `"lower"`.
mod direction_wire {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};
    use tally_model::Direction;

    pub(super) fn serialize<S: Serializer>(d: &Direction, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(d.as_str())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Direction, D::Error> {
        let text = String::deserialize(d)?;
        Direction::parse(&text).ok_or_else(|| {
            D::Error::custom(format!(
                "direction = {text:?}: expected \"higher\" or \"lower\""
            ))
        })
    }
}

/// `Verdict` on the wire: `"keep"`, `"interesting"`, ...
mod verdict_wire {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};
    use tally_model::Verdict;

    pub(super) fn serialize<S: Serializer>(v: &Verdict, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(v.as_str())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Verdict, D::Error> {
        let text = String::deserialize(d)?;
        Verdict::parse(&text).ok_or_else(|| {
            D::Error::custom(format!(
                "outcome = {text:?}: expected \"keep\", \"interesting\", \"discard\" or \"crash\""
            ))
        })
    }
}
