//! `[checks]` (`docs/campaign.md#checks`): a non-empty `commands` list, each entry an argv or a
//! `{ name, argv }` table with unique names, and a positive `timeout` (default: the
//! `evaluate_timeout`). Absent: no checks.

use serde_json::{Map, Value};
use tally_plugin::ConfigProblem;

use super::values::bad;
use crate::checks::{CheckSpec, ChecksSettings};

const KEYS: &[&str] = &["commands", "timeout"];
const ENTRY_KEYS: &[&str] = &["name", "argv"];
const ARGV_HINT: &str = "expected a non-empty argv, a list of strings such as [\"cargo\", \"test\"] \
                         (use [\"sh\", \"-c\", \"...\"] for a shell)";

/// `[checks]`, or `None` when the table is absent (or too broken to resolve).
pub(super) fn read_checks(
    root: &Map<String, Value>,
    evaluate_timeout_s: f64,
    p: &mut Vec<ConfigProblem>,
) -> Option<ChecksSettings> {
    let value = root.get("checks")?;
    let Some(table) = value.as_object() else {
        p.push(bad("checks", value, "expected a table: [checks]"));
        return None;
    };
    for k in table.keys() {
        if !KEYS.contains(&k.as_str()) {
            p.push(ConfigProblem::unknown_key("checks", k, KEYS));
        }
    }
    let timeout_s = match table.get("timeout") {
        None => evaluate_timeout_s,
        Some(v) => match v.as_f64() {
            Some(s) if s > 0.0 && s.is_finite() => s,
            _ => {
                p.push(bad(
                    "checks.timeout",
                    v,
                    "expected a positive number of seconds per check command",
                ));
                evaluate_timeout_s
            }
        },
    };
    let items = match table.get("commands") {
        Some(Value::Array(items)) if !items.is_empty() => items,
        Some(v) => {
            p.push(bad(
                "checks.commands",
                v,
                "expected a non-empty list of commands, e.g. [[\"cargo\", \"test\"]]; remove [checks] to run none",
            ));
            return None;
        }
        None => {
            p.push(ConfigProblem::missing(
                "checks.commands",
                "missing: add `commands = [[\"cargo\", \"test\"]]`, the commands a candidate must pass",
            ));
            return None;
        }
    };
    let mut commands: Vec<CheckSpec> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let key = format!("checks.commands[{i}]");
        let Some(spec) = read_entry(&key, item, p) else {
            continue;
        };
        if commands.iter().any(|c| c.name == spec.name) {
            p.push(ConfigProblem::new(
                key,
                Some(format!("{:?}", spec.name)),
                "another check has this name; give each entry its own `name`",
            ));
            continue;
        }
        commands.push(spec);
    }
    Some(ChecksSettings {
        commands,
        timeout_s,
    })
}

/// One entry: an argv, or `{ name = "...", argv = [...] }`.
fn read_entry(key: &str, item: &Value, p: &mut Vec<ConfigProblem>) -> Option<CheckSpec> {
    match item {
        Value::Array(_) => {
            let argv = argv(key, item, p)?;
            Some(CheckSpec {
                name: argv.join(" "),
                argv,
            })
        }
        Value::Object(entry) => {
            for k in entry.keys() {
                if !ENTRY_KEYS.contains(&k.as_str()) {
                    p.push(ConfigProblem::unknown_key(key, k, ENTRY_KEYS));
                }
            }
            let argv = match entry.get("argv") {
                Some(v) => argv(&format!("{key}.argv"), v, p),
                None => {
                    p.push(ConfigProblem::missing(
                        format!("{key}.argv"),
                        "missing: add `argv = [\"cargo\", \"test\"]`",
                    ));
                    None
                }
            };
            let name = match entry.get("name") {
                None => argv.as_ref().map(|a| a.join(" ")),
                Some(Value::String(s)) if !s.trim().is_empty() => Some(s.trim().to_string()),
                Some(v) => {
                    p.push(bad(&format!("{key}.name"), v, "expected a non-empty name"));
                    None
                }
            };
            Some(CheckSpec {
                name: name?,
                argv: argv?,
            })
        }
        v => {
            p.push(bad(
                key,
                v,
                "expected an argv such as [\"cargo\", \"test\"] or a table { name = \"unit\", argv = [...] }",
            ));
            None
        }
    }
}

fn argv(key: &str, v: &Value, p: &mut Vec<ConfigProblem>) -> Option<Vec<String>> {
    match v {
        Value::Array(items)
            if !items.is_empty()
                && items.iter().all(Value::is_string)
                && !items[0].as_str().unwrap_or("").is_empty() =>
        {
            Some(
                items
                    .iter()
                    .map(|v| v.as_str().unwrap_or_default().to_string())
                    .collect(),
            )
        }
        v => {
            p.push(bad(key, v, ARGV_HINT));
            None
        }
    }
}
