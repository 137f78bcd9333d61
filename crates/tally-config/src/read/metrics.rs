//! `[[metrics]]` (`docs/campaign.md#metrics`): name, direction, role, margin, floor, repeats and
//! `deterministic` of each metric, and exactly one primary.

use serde_json::{Map, Value};
use tally_model::{Direction, Role};
use tally_plugin::ConfigProblem;
use tally_plugin::problem::{join_key, show_value};

use super::values::{bad, valid_metric_name};
use crate::settings::MetricSpec;

const METRIC_KEYS: &[&str] = &[
    "name",
    "direction",
    "role",
    "margin",
    "floor",
    "repeats",
    "deterministic",
];
/// Every metric, in order.
pub(super) fn read_metrics(value: Option<&Value>, p: &mut Vec<ConfigProblem>) -> Vec<MetricSpec> {
    let items = match value {
        Some(Value::Array(items)) if !items.is_empty() => items,
        Some(v @ Value::Array(_)) | Some(v) => {
            p.push(bad(
                "metrics",
                v,
                "expected at least one [[metrics]] table with name and direction",
            ));
            return Vec::new();
        }
        None => {
            p.push(ConfigProblem::missing(
                "metrics",
                "missing: add a [[metrics]] table with `name`, `direction` and `role = \"primary\"`",
            ));
            return Vec::new();
        }
    };
    let mut metrics = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let prefix = format!("metrics[{i}]");
        let Some(table) = item.as_object() else {
            p.push(bad(&prefix, item, "expected a table"));
            continue;
        };
        for key in table.keys() {
            if !METRIC_KEYS.contains(&key.as_str()) {
                p.push(ConfigProblem::unknown_key(&prefix, key, METRIC_KEYS));
            }
        }
        let name = match table.get("name") {
            Some(Value::String(s)) if valid_metric_name(s) => s.clone(),
            Some(v) => {
                p.push(bad(
                    &join_key(&prefix, "name"),
                    v,
                    "expected a non-empty name without `=` or spaces (as printed in `METRIC <name>=<value>`)",
                ));
                continue;
            }
            None => {
                p.push(ConfigProblem::missing(
                    join_key(&prefix, "name"),
                    "missing: every metric needs a name",
                ));
                continue;
            }
        };
        let direction = match table.get("direction") {
            Some(v) => match v.as_str().and_then(Direction::parse) {
                Some(d) => d,
                None => {
                    p.push(bad(
                        &join_key(&prefix, "direction"),
                        v,
                        "expected \"higher\" or \"lower\"",
                    ));
                    Direction::Higher
                }
            },
            None => {
                p.push(ConfigProblem::missing(
                    join_key(&prefix, "direction"),
                    "missing: add `direction = \"higher\"` or `\"lower\"`",
                ));
                Direction::Higher
            }
        };
        let role = match table.get("role") {
            None => Role::Watch,
            Some(v) => v.as_str().and_then(Role::parse).unwrap_or_else(|| {
                p.push(bad(
                    &join_key(&prefix, "role"),
                    v,
                    "expected \"primary\", \"guardrail\" or \"watch\"",
                ));
                Role::Watch
            }),
        };
        let margin = number(table, &prefix, "margin", p, |m| m >= 0.0, "a number ≥ 0");
        if margin.is_some() && role != Role::Guardrail {
            p.push(ConfigProblem::new(
                join_key(&prefix, "margin"),
                table.get("margin").map(show_value),
                "only a guardrail has a margin; set `role = \"guardrail\"` or remove it",
            ));
        }
        let floor = number(table, &prefix, "floor", p, |_| true, "a number");
        let repeats = match table.get("repeats") {
            None => 1,
            Some(v) => match v.as_u64() {
                Some(n @ 1..=1000) => n as u32,
                _ => {
                    p.push(bad(
                        &join_key(&prefix, "repeats"),
                        v,
                        "expected a whole number of pairs from 1 to 1000",
                    ));
                    1
                }
            },
        };
        let deterministic = match table.get("deterministic") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(v) => {
                p.push(bad(
                    &join_key(&prefix, "deterministic"),
                    v,
                    "expected true or false",
                ));
                false
            }
        };
        if metrics.iter().any(|m: &MetricSpec| m.name == name) {
            p.push(ConfigProblem::new(
                join_key(&prefix, "name"),
                Some(format!("{name:?}")),
                "duplicate metric name; each metric appears once",
            ));
            continue;
        }
        metrics.push(MetricSpec {
            name,
            direction,
            role,
            margin,
            floor,
            repeats,
            deterministic,
        });
    }
    let primaries = metrics.iter().filter(|m| m.role == Role::Primary).count();
    if primaries != 1 && !metrics.is_empty() {
        p.push(ConfigProblem::missing(
            "metrics",
            format!(
                "exactly one metric must have `role = \"primary\"` (found {primaries}); \
                 multi-track campaigns are not supported"
            ),
        ));
    }
    metrics
}

fn number(
    table: &Map<String, Value>,
    prefix: &str,
    key: &str,
    p: &mut Vec<ConfigProblem>,
    ok: impl Fn(f64) -> bool,
    expected: &str,
) -> Option<f64> {
    let v = table.get(key)?;
    match v.as_f64() {
        Some(x) if x.is_finite() && ok(x) => Some(x),
        _ => {
            p.push(bad(
                &join_key(prefix, key),
                v,
                &format!("expected {expected}"),
            ));
            None
        }
    }
}
