//! The `limits` stop rule (`docs/campaign.md#stop-rules`, the default): `target`, `max_runs`, `max_hours`,
//! `plateau` stop the campaign; `hold_at` holds it when a fact reaches its limit, or — with
//! `reserve` — when the fact plus its source's projection of the next evaluation would.
//!
//! Holds are checked before stops, and a fact that could not be read holds the campaign (it is
//! never read as zero). The rule reads only the facts it is handed: it does not gather them, know
//! where they come from, or check that an active source supplies each `hold_at` fact (the engine
//! does that when it loads the config).

use serde_json::{Map, Value, json};
use tally_plugin::{
    ConfigProblem, Entry, FactReading, ParamKind, ParamSpec, Params, ProviderError, ProviderInfo,
    StopDecision, StopInput, StopRule,
};
use tally_stats::format_sig4;

use crate::checks::Checks;

/// The `limits` stop rule with checked parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Limits {
    /// Stop when the head's primary reaches it.
    pub target: Option<f64>,
    /// Stop after this many judged candidates (baseline excluded), nothing in flight.
    pub max_runs: Option<u64>,
    /// Stop this many hours after the first evaluation.
    pub max_hours: Option<f64>,
    /// Stop after this many judged candidates without a keep.
    pub plateau: Option<u64>,
    /// Hold when a fact reaches its limit, sorted by fact name.
    pub hold_at: Vec<(String, f64)>,
    /// Hold when the fact plus its projected growth would reach the limit.
    pub reserve: bool,
}

fn specs() -> Vec<ParamSpec> {
    vec![
        ParamSpec::unset(
            "target",
            ParamKind::Number,
            "stop when the head's primary metric reaches this value",
        ),
        ParamSpec::unset(
            "max_runs",
            ParamKind::Integer,
            "stop after this many judged candidates (baseline excluded), once nothing is in flight",
        ),
        ParamSpec::unset(
            "max_hours",
            ParamKind::Number,
            "stop this many hours after the first evaluation",
        ),
        ParamSpec::unset(
            "plateau",
            ParamKind::Integer,
            "stop after this many judged candidates without a keep",
        ),
        ParamSpec::unset(
            "hold_at",
            ParamKind::Table,
            "hold when a fact reaches its limit, e.g. { gpu_usd = 50 }",
        ),
        ParamSpec::optional(
            "reserve",
            ParamKind::Boolean,
            json!(true),
            "hold_at also holds when the fact plus the next evaluation's projected growth would reach the limit",
        ),
    ]
}

/// The registry entry of `limits`.
pub(crate) fn entry() -> Entry<dyn StopRule> {
    Entry {
        check: None,
        info: ProviderInfo::builtin(
            "limits",
            "stops at a target, a number of runs, hours or a plateau; holds when a fact reaches a limit",
            specs(),
        ),
        build: |params| Ok(Box::new(Limits::from_params(params)?)),
    }
}

impl Limits {
    /// Checks and reads the parameters (absent ones are unset; `reserve` defaults to true).
    pub fn from_params(params: &Params) -> Result<Self, Vec<ConfigProblem>> {
        let mut checks = Checks::new(params);
        let target = checks.number("target", |_| true, "a number");
        let max_runs = checks.integer("max_runs", 1, u64::MAX, "a whole number of runs ≥ 1");
        let max_hours = checks.number("max_hours", |h| h > 0.0, "a number of hours > 0");
        let plateau = checks.integer("plateau", 1, u64::MAX, "a whole number of runs ≥ 1");
        let mut hold_at = Vec::new();
        match params.get("hold_at") {
            None => {}
            Some(Value::Object(table)) => {
                for (fact, limit) in table {
                    match limit.as_f64().filter(|x| x.is_finite()) {
                        Some(x) => hold_at.push((fact.clone(), x)),
                        None => checks.problem_at(
                            "hold_at",
                            fact,
                            limit,
                            &format!(
                                "expected a number: the value of `{fact}` that holds the campaign"
                            ),
                        ),
                    }
                }
            }
            Some(_) => checks.problem(
                "hold_at",
                "expected a table of fact = limit, e.g. { gpu_usd = 50 }",
            ),
        }
        hold_at.sort_by(|a, b| a.0.cmp(&b.0));
        let reserve = match params.get("reserve") {
            None => true,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                checks.problem("reserve", "expected true or false");
                true
            }
        };
        checks.finish()?;
        Ok(Self {
            target,
            max_runs,
            max_hours,
            plateau,
            hold_at,
            reserve,
        })
    }

    /// Reads a stop-rule table as the campaign summary carries it (`{"provider": "limits", ...}`);
    /// `None` when it is another provider's or does not check.
    pub fn from_table(table: &Value) -> Option<Self> {
        let table = table.as_object()?;
        if table.get("provider").and_then(Value::as_str) != Some("limits") {
            return None;
        }
        let values: Map<String, Value> = table
            .iter()
            .filter(|(k, _)| k.as_str() != "provider")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let params = Params::from_values("plugins.stop_rule", values.into_iter().collect());
        Self::from_params(&params).ok()
    }

    /// The host facts each configured stop limit reads, as `(limit, fact)`.
    fn stop_facts(&self) -> Vec<(&'static str, &'static str)> {
        let mut out = Vec::new();
        if self.target.is_some() {
            out.push(("target", "head"));
        }
        if self.max_runs.is_some() {
            out.push(("max_runs", "runs"));
        }
        if self.max_hours.is_some() {
            out.push(("max_hours", "hours"));
        }
        if self.plateau.is_some() {
            out.push(("plateau", "without_keep"));
        }
        out
    }

    /// Why the campaign holds, if it does (`hold_at`, then stop limits whose fact failed).
    fn hold(&self, input: &StopInput) -> Option<String> {
        for (fact, limit) in &self.hold_at {
            let (value, projection) = match input.facts.get(fact) {
                None => {
                    return Some(format!(
                        "hold_at: {fact} unknown: no active fact source supplied it"
                    ));
                }
                Some(FactReading::Failed(error)) => {
                    return Some(format!("hold_at: {fact} unknown: {error}"));
                }
                Some(FactReading::Value { value, projection }) => (*value, *projection),
            };
            if value >= *limit {
                return Some(format!(
                    "hold_at: {fact} {value:.2} reached {}",
                    show_limit(*limit)
                ));
            }
            if let Some(expected) = projection.filter(|_| self.reserve)
                && value + expected >= *limit
            {
                return Some(format!(
                    "hold_at: {fact} {value:.2} + {expected:.2} expected would reach {}",
                    show_limit(*limit)
                ));
            }
        }
        for (limit, fact) in self.stop_facts() {
            match input.facts.get(fact) {
                Some(FactReading::Failed(error)) => {
                    return Some(format!("{limit}: {fact} unknown: {error}"));
                }
                None if fact != "head" => {
                    return Some(format!(
                        "{limit}: {fact} unknown: the host did not supply it"
                    ));
                }
                _ => {}
            }
        }
        None
    }

    /// Why the campaign stops, if it does, in the order of `docs/campaign.md#stop-rules`.
    fn stop(&self, input: &StopInput) -> Option<String> {
        let value = |fact: &str| match input.facts.get(fact) {
            Some(FactReading::Value { value, .. }) => Some(*value),
            _ => None,
        };
        if let (Some(target), Some(head)) = (self.target, value("head")) {
            let (reached, sign) = if input.primary.direction == "lower" {
                (head <= target, '≤')
            } else {
                (head >= target, '≥')
            };
            if reached {
                return Some(format!(
                    "target: {} {} {sign} {}",
                    input.primary.name,
                    format_sig4(head),
                    show_limit(target)
                ));
            }
        }
        if let (Some(max), Some(runs)) = (self.max_runs, value("runs"))
            && runs >= max as f64
            && !input.in_flight
        {
            return Some(format!("max_runs: {max} runs"));
        }
        if let (Some(max), Some(hours)) = (self.max_hours, value("hours"))
            && hours >= max
        {
            return Some(format!(
                "max_hours: {}h since the first evaluation",
                show_limit(max)
            ));
        }
        if let (Some(max), Some(without)) = (self.plateau, value("without_keep"))
            && without >= max as f64
        {
            return Some(format!("plateau: {max} runs without a keep"));
        }
        None
    }
}

impl StopRule for Limits {
    fn wanted_facts(&self) -> Vec<String> {
        let mut wanted: Vec<String> = self
            .stop_facts()
            .into_iter()
            .map(|(_, fact)| fact.to_string())
            .collect();
        for (fact, _) in &self.hold_at {
            if !wanted.contains(fact) {
                wanted.push(fact.clone());
            }
        }
        wanted
    }

    fn check(&self, input: &StopInput) -> Result<StopDecision, ProviderError> {
        Ok(if let Some(reason) = self.hold(input) {
            StopDecision::Hold(reason)
        } else if let Some(reason) = self.stop(input) {
            StopDecision::Stop(reason)
        } else {
            StopDecision::Go
        })
    }
}

/// A limit as the user wrote it: `50`, `0.5`, `1.25`.
pub(crate) fn show_limit(x: f64) -> String {
    format!("{x}")
}
