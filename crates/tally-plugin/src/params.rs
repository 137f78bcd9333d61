//! Typed provider parameters: what a provider declares ([`ParamSpec`]) and what it gets
//! ([`Params`]), checked against its `tally.toml` table with every problem reported at its dotted
//! key (wrong type, missing required, unknown parameter with a did-you-mean).
//!
//! Values travel as JSON values (TOML tables convert losslessly for the types used here), which is
//! also what external providers receive.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::problem::{ConfigProblem, join_key, show_value};

/// The type of a parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParamKind {
    /// A whole number (TOML integer).
    Integer,
    /// Any number (TOML integer or float).
    Number,
    /// `true` or `false`.
    Boolean,
    /// A string.
    String,
    /// A list of strings.
    StringList,
    /// A table of anything (passed through, e.g. `hold_at = { gpu_usd = 50 }`).
    Table,
}

impl ParamKind {
    /// How the kind is named in messages and in `tally plugins`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Integer => "integer",
            Self::Number => "number",
            Self::Boolean => "boolean",
            Self::String => "string",
            Self::StringList => "list of strings",
            Self::Table => "table",
        }
    }

    /// The name with its article, for messages (`an integer`, `a table`).
    pub fn with_article(self) -> String {
        match self {
            Self::Integer => "an integer".into(),
            other => format!("a {}", other.name()),
        }
    }

    fn accepts(self, value: &Value) -> bool {
        match self {
            Self::Integer => value.is_i64() || value.is_u64(),
            Self::Number => value.is_number(),
            Self::Boolean => value.is_boolean(),
            Self::String => value.is_string(),
            Self::StringList => value
                .as_array()
                .is_some_and(|items| items.iter().all(Value::is_string)),
            Self::Table => value.is_object(),
        }
    }
}

/// One declared parameter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ParamSpec {
    /// The key in the provider's table.
    pub name: String,
    /// Its type.
    pub kind: ParamKind,
    /// The default when the key is absent; `None` with `required = false` means "unset".
    #[serde(default)]
    pub default: Option<Value>,
    /// Whether the key must be given.
    #[serde(default)]
    pub required: bool,
    /// One line for `tally plugins` and docs.
    pub doc: String,
}

impl ParamSpec {
    /// An optional parameter with a default.
    pub fn optional(name: &str, kind: ParamKind, default: Value, doc: &str) -> Self {
        Self {
            name: name.into(),
            kind,
            default: Some(default),
            required: false,
            doc: doc.into(),
        }
    }
    /// An optional parameter without a default (unset unless given).
    pub fn unset(name: &str, kind: ParamKind, doc: &str) -> Self {
        Self {
            name: name.into(),
            kind,
            default: None,
            required: false,
            doc: doc.into(),
        }
    }
    /// A required parameter.
    pub fn required(name: &str, kind: ParamKind, doc: &str) -> Self {
        Self {
            name: name.into(),
            kind,
            default: None,
            required: true,
            doc: doc.into(),
        }
    }
}

/// Checked parameter values (defaults filled in), keyed by name.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Params {
    values: BTreeMap<String, Value>,
    #[serde(skip)]
    prefix: String,
}

impl Params {
    /// Params from already-checked values (tests, external providers).
    pub fn from_values(prefix: &str, values: BTreeMap<String, Value>) -> Self {
        Self {
            values,
            prefix: prefix.into(),
        }
    }
    /// The dotted key of a parameter, for messages.
    pub fn key(&self, name: &str) -> String {
        join_key(&self.prefix, name)
    }
    /// A raw value.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.values.get(name)
    }
    /// A number (integers widen).
    pub fn f64(&self, name: &str) -> Option<f64> {
        self.values.get(name).and_then(Value::as_f64)
    }
    /// A non-negative integer.
    pub fn u64(&self, name: &str) -> Option<u64> {
        self.values.get(name).and_then(Value::as_u64)
    }
    /// A boolean.
    pub fn bool(&self, name: &str) -> Option<bool> {
        self.values.get(name).and_then(Value::as_bool)
    }
    /// A string.
    pub fn str(&self, name: &str) -> Option<&str> {
        self.values.get(name).and_then(Value::as_str)
    }
    /// A list of strings.
    pub fn strings(&self, name: &str) -> Option<Vec<String>> {
        self.values
            .get(name)
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
    }
    /// A table.
    pub fn table(&self, name: &str) -> Option<&Map<String, Value>> {
        self.values.get(name).and_then(Value::as_object)
    }
    /// All values (what an external provider receives).
    pub fn values(&self) -> &BTreeMap<String, Value> {
        &self.values
    }
}

/// Checks `table` (a provider's `tally.toml` table, `provider` key excluded) against `specs`.
/// Keys named in `host_keys` belong to the host (e.g. `provider`, `command`) and are skipped.
/// Every problem is pushed; the returned params are usable only when none was pushed.
pub fn check_params(
    specs: &[ParamSpec],
    table: &Map<String, Value>,
    prefix: &str,
    host_keys: &[&str],
    problems: &mut Vec<ConfigProblem>,
) -> Params {
    let known: Vec<&str> = specs
        .iter()
        .map(|s| s.name.as_str())
        .chain(host_keys.iter().copied())
        .collect();
    let mut values = BTreeMap::new();
    for (key, value) in table {
        if host_keys.contains(&key.as_str()) {
            continue;
        }
        let Some(spec) = specs.iter().find(|s| &s.name == key) else {
            problems.push(ConfigProblem::unknown_key(prefix, key, &known));
            continue;
        };
        if !spec.kind.accepts(value) {
            problems.push(ConfigProblem::new(
                join_key(prefix, key),
                Some(show_value(value)),
                format!("expected {} ({})", spec.kind.with_article(), spec.doc),
            ));
            continue;
        }
        values.insert(key.clone(), value.clone());
    }
    for spec in specs {
        if values.contains_key(&spec.name) || table.contains_key(&spec.name) {
            continue;
        }
        if spec.required {
            problems.push(ConfigProblem::missing(
                join_key(prefix, &spec.name),
                format!(
                    "missing required parameter: add `{} = <{}>` ({})",
                    spec.name,
                    spec.kind.name(),
                    spec.doc
                ),
            ));
        } else if let Some(default) = &spec.default {
            values.insert(spec.name.clone(), default.clone());
        }
    }
    Params {
        values,
        prefix: prefix.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn specs() -> Vec<ParamSpec> {
        vec![
            ParamSpec::optional("gpus", ParamKind::Integer, json!(1), "GPUs per evaluation"),
            ParamSpec::required("usd_per_gpu_hour", ParamKind::Number, "price"),
        ]
    }

    #[test]
    fn defaults_fill_in_and_types_are_checked() {
        let mut problems = Vec::new();
        let table = json!({"usd_per_gpu_hour": 2}).as_object().unwrap().clone();
        let p = check_params(
            &specs(),
            &table,
            "plugins.fact_source[0]",
            &["provider"],
            &mut problems,
        );
        assert!(problems.is_empty());
        assert_eq!(p.u64("gpus"), Some(1));
        assert_eq!(p.f64("usd_per_gpu_hour"), Some(2.0));
    }

    #[test]
    fn every_problem_is_reported_at_its_key() {
        let mut problems = Vec::new();
        let table = json!({"provider": "gpu_hours", "gpus": "two", "usd_per_gpu_houre": 2})
            .as_object()
            .unwrap()
            .clone();
        check_params(
            &specs(),
            &table,
            "plugins.fact_source[0]",
            &["provider"],
            &mut problems,
        );
        let lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            vec![
                "plugins.fact_source[0].gpus = \"two\": expected an integer (GPUs per evaluation)",
                "plugins.fact_source[0].usd_per_gpu_houre: unknown key; did you mean `usd_per_gpu_hour`?",
                "plugins.fact_source[0].usd_per_gpu_hour: missing required parameter: add `usd_per_gpu_hour = <number>` (price)",
            ]
        );
    }
}
