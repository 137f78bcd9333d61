//! Small helpers of the readers: a problem with the value shown, the shapes of names and paths,
//! positions in the text, and TOML values as JSON.

use serde_json::Value;
use tally_plugin::ConfigProblem;
use tally_plugin::problem::show_value;

/// A problem at `key` showing `value`.
pub(super) fn bad(key: &str, value: &Value, message: &str) -> ConfigProblem {
    ConfigProblem::new(key, Some(show_value(value)), message)
}

/// A name as printed in `METRIC <name>=<value>`: no `=`, no whitespace.
pub(super) fn valid_metric_name(s: &str) -> bool {
    !s.is_empty() && !s.contains('=') && !s.chars().any(char::is_whitespace)
}

/// A path inside the repository: not absolute, no `..`, not `.`.
pub(super) fn is_repo_relative(s: &str) -> bool {
    !s.is_empty() && !s.starts_with('/') && !s.split('/').any(|part| part == "..") && s != "."
}

/// The 1-based line and column of a byte offset.
pub(super) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// TOML to JSON (dates become their TOML text).
pub fn toml_to_json(value: toml::Value) -> Value {
    match value {
        toml::Value::String(s) => Value::String(s),
        toml::Value::Integer(i) => Value::from(i),
        toml::Value::Float(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
        toml::Value::Boolean(b) => Value::Bool(b),
        toml::Value::Datetime(d) => Value::String(d.to_string()),
        toml::Value::Array(items) => Value::Array(items.into_iter().map(toml_to_json).collect()),
        toml::Value::Table(t) => {
            Value::Object(t.into_iter().map(|(k, v)| (k, toml_to_json(v))).collect())
        }
    }
}
