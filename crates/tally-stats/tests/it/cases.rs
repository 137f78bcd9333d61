//! Builders for verdict cases used by the rule tests.

use std::collections::BTreeMap;

use tally_model::Direction;
use tally_stats::{Criterion, Guardrail, Side, VerdictCase};

/// A case with no guardrails and empty sides (candidate#2 against bar candidate#1).
pub fn case(name: &str, direction: Direction) -> VerdictCase {
    VerdictCase {
        primary: Criterion {
            name: name.to_owned(),
            direction,
            deterministic: false,
        },
        guardrails: Vec::new(),
        candidate: Side {
            id: 2,
            ..Side::default()
        },
        bar: Side {
            id: 1,
            ..Side::default()
        },
    }
}

/// A guardrail with a margin and an optional floor.
pub fn guardrail(name: &str, direction: Direction, margin: f64, floor: Option<f64>) -> Guardrail {
    Guardrail {
        name: name.to_owned(),
        direction,
        margin,
        floor,
        deterministic: false,
    }
}

/// Sets `metric`'s paired samples on a side, and its mean to their mean.
pub fn paired(side: &mut Side, metric: &str, values: &[f64]) {
    side.samples.insert(metric.to_owned(), values.to_vec());
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    side.means.insert(metric.to_owned(), mean);
}

/// Sets `metric`'s units on a side, and its mean to their sum.
pub fn units(side: &mut Side, metric: &str, contributions: &[(&str, f64)]) {
    let map: BTreeMap<String, f64> = contributions
        .iter()
        .map(|(id, v)| ((*id).to_owned(), *v))
        .collect();
    side.means.insert(metric.to_owned(), map.values().sum());
    side.units.insert(metric.to_owned(), map);
}

/// Sets `metric`'s mean on a side (aggregate only).
pub fn mean(side: &mut Side, metric: &str, value: f64) {
    side.means.insert(metric.to_owned(), value);
}
