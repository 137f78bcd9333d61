//! `[implementer]` (`docs/implementers.md#config`): a preset or a `command` argv whose
//! placeholders are all known, the limits, the protected and ignored globs, the added
//! environment, the usage format and the price table. Absent: no implementers.

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use tally_plugin::ConfigProblem;
use tally_plugin::problem::join_key;

use super::values::{bad, is_repo_relative};
use crate::implementer::{
    ImplementerSettings, Overlap, PLACEHOLDERS, Prices, StdinMode, placeholders,
};
use crate::presets::{PRESET_NAMES, preset};

const KEYS: &[&str] = &[
    "preset",
    "command",
    "model",
    "stdin",
    "timeout",
    "wrap_up",
    "stop_grace",
    "max_concurrent",
    "overlap",
    "max_measured",
    "attempts",
    "requeue_unfinished",
    "protect",
    "ignore",
    "env",
    "usage",
    "prices",
];
const USAGE_FORMATS: &[&str] = &["claude", "codex", "gemini", "aider", "pi", "file", "none"];
const PRICE_KEYS: &[&str] = &["input", "cached_input", "output"];
const PREFIX: &str = "implementer";

fn key(k: &str) -> String {
    join_key(PREFIX, k)
}

/// `[implementer]`, or `None` when the table is absent (or too broken to resolve).
pub(super) fn read_implementer(
    root: &Map<String, Value>,
    evaluate: &[String],
    link: &[String],
    p: &mut Vec<ConfigProblem>,
) -> Option<ImplementerSettings> {
    let value = root.get(PREFIX)?;
    let Some(table) = value.as_object() else {
        p.push(bad(PREFIX, value, "expected a table: [implementer]"));
        return None;
    };
    for k in table.keys() {
        if !KEYS.contains(&k.as_str()) {
            p.push(ConfigProblem::unknown_key(PREFIX, k, KEYS));
        }
    }
    let chosen = match table.get("preset") {
        None => None,
        Some(v) => match v.as_str().and_then(preset) {
            Some(found) => Some(found),
            None => {
                p.push(bad(
                    &key("preset"),
                    v,
                    &format!(
                        "unknown preset; expected one of: {} (or a `command` argv)",
                        PRESET_NAMES.join(", ")
                    ),
                ));
                return None;
            }
        },
    };
    let command = match (table.get("command"), &chosen) {
        (Some(v), _) => read_command(v, p)?,
        (None, Some(found)) => found.command.clone(),
        (None, None) => {
            p.push(ConfigProblem::missing(
                key("preset"),
                format!(
                    "missing: set `preset` ({}) or `command = [\"sh\", \"agent.sh\", \"{{brief_file}}\"]`",
                    PRESET_NAMES.join(", ")
                ),
            ));
            return None;
        }
    };
    let model = match table.get("model") {
        None => None,
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
        Some(v) => {
            p.push(bad(&key("model"), v, "expected a non-empty model name"));
            None
        }
    };
    if model.is_none()
        && !table.contains_key("model")
        && command.iter().any(|a| a.contains("{model}"))
    {
        let whose = match (&chosen, table.contains_key("command")) {
            (Some(found), false) => format!("the {} preset's argv", found.name),
            _ => "`command`".to_string(),
        };
        p.push(ConfigProblem::missing(
            key("model"),
            format!("missing: {whose} uses {{model}}; add `model = \"...\"`"),
        ));
    }
    let stdin = match table.get("stdin").map(|v| (v, v.as_str())) {
        None => match chosen.as_ref().map(|c| c.stdin.as_str()) {
            Some("brief") => StdinMode::Brief,
            _ => StdinMode::Null,
        },
        Some((_, Some("null"))) => StdinMode::Null,
        Some((_, Some("brief"))) => StdinMode::Brief,
        Some((v, _)) => {
            p.push(bad(
                &key("stdin"),
                v,
                "expected \"null\" (no input) or \"brief\" (the brief piped, then closed)",
            ));
            StdinMode::Null
        }
    };
    let timeout_s = seconds(table, "timeout", 1800.0, p);
    let wrap_up_s = match table.get("wrap_up") {
        None => (timeout_s / 6.0).min(300.0),
        Some(v) => match v.as_f64() {
            Some(s) if s >= 0.0 && s < timeout_s => s,
            _ => {
                p.push(bad(
                    &key("wrap_up"),
                    v,
                    &format!(
                        "expected seconds before the timeout, at least 0 and less than `timeout` ({timeout_s})"
                    ),
                ));
                0.0
            }
        },
    };
    let stop_grace_s = match table.get("stop_grace") {
        None => 300.0,
        Some(v) => match v.as_f64() {
            Some(s) if s >= 0.0 && s.is_finite() => s,
            _ => {
                p.push(bad(
                    &key("stop_grace"),
                    v,
                    "expected seconds an agent has after a stop before it is terminated, a number ≥ 0",
                ));
                300.0
            }
        },
    };
    let max_concurrent = count(table, "max_concurrent", 1, p);
    let overlap = match table.get("overlap").map(|v| (v, v.as_str())) {
        None | Some((_, Some("serial"))) => Overlap::Serial,
        Some((_, Some("parallel"))) => Overlap::Parallel,
        Some((v, _)) => {
            p.push(bad(
                &key("overlap"),
                v,
                "expected \"serial\" (nothing else runs while an implementer works) or \"parallel\"",
            ));
            Overlap::Serial
        }
    };
    if overlap == Overlap::Serial && max_concurrent > 1 {
        p.push(ConfigProblem::new(
            key("max_concurrent"),
            Some(max_concurrent.to_string()),
            "more than one implementer at once needs `overlap = \"parallel\"` (serial runs nothing beside an implementer)",
        ));
    }
    let max_measured = count(table, "max_measured", 5, p);
    let attempts = count(table, "attempts", 2, p);
    let requeue_unfinished = match table.get("requeue_unfinished") {
        None => 1,
        Some(v) => match v.as_u64() {
            Some(n) if n <= u64::from(u32::MAX) => n as u32,
            _ => {
                p.push(bad(
                    &key("requeue_unfinished"),
                    v,
                    "expected a whole number ≥ 0 (extra runs of an unfinished idea; 0 turns requeueing off)",
                ));
                1
            }
        },
    };
    let mut protect = vec!["tally.toml".to_string(), "brief.md".to_string()];
    for arg in evaluate {
        let path = arg.strip_prefix("./").unwrap_or(arg);
        if !arg.starts_with('-') && !arg.contains(['=', ' ']) && is_repo_relative(path) {
            protect.push(path.to_string());
        }
    }
    protect.extend(link.iter().cloned());
    protect.extend(globs(table, "protect", p));
    let mut seen = std::collections::BTreeSet::new();
    protect.retain(|g| seen.insert(g.clone()));
    let mut ignore = chosen
        .as_ref()
        .map(|c| c.ignore.clone())
        .unwrap_or_default();
    ignore.extend(globs(table, "ignore", p));
    let env = read_env(table.get("env"), p);
    let usage = match table.get("usage") {
        None => chosen
            .as_ref()
            .map_or_else(|| "file".to_string(), |c| c.usage.clone()),
        Some(v) => match v.as_str() {
            Some(s) if USAGE_FORMATS.contains(&s) => s.to_string(),
            _ => {
                p.push(bad(
                    &key("usage"),
                    v,
                    &format!("expected one of: {}", USAGE_FORMATS.join(", ")),
                ));
                "none".to_string()
            }
        },
    };
    let prices = read_prices(table.get("prices"), p);
    Some(ImplementerSettings {
        preset: chosen.as_ref().map(|c| c.name.clone()),
        exe: command.first().cloned().unwrap_or_default(),
        command,
        model,
        stdin,
        timeout_s,
        wrap_up_s,
        stop_grace_s,
        max_concurrent,
        overlap,
        max_measured,
        attempts,
        requeue_unfinished,
        protect,
        ignore,
        env,
        clear_env: chosen.map(|c| c.clear_env).unwrap_or_default(),
        usage,
        prices,
    })
}

/// `command`: a non-empty argv whose `{name}` placeholders are all known.
fn read_command(v: &Value, p: &mut Vec<ConfigProblem>) -> Option<Vec<String>> {
    let argv: Vec<String> = match v {
        Value::Array(items)
            if !items.is_empty()
                && items.iter().all(Value::is_string)
                && !items[0].as_str().unwrap_or("").is_empty() =>
        {
            items
                .iter()
                .map(|i| i.as_str().unwrap_or_default().to_string())
                .collect()
        }
        _ => {
            p.push(bad(
                &key("command"),
                v,
                "expected a non-empty list of strings (an argv, e.g. [\"sh\", \"agent.sh\", \"{brief_file}\"])",
            ));
            return None;
        }
    };
    for (i, arg) in argv.iter().enumerate() {
        for name in placeholders(arg) {
            if !PLACEHOLDERS.contains(&name) {
                p.push(ConfigProblem::new(
                    format!("{}[{i}]", key("command")),
                    Some(format!("{arg:?}")),
                    format!(
                        "unknown placeholder {{{name}}}; expected one of: {}",
                        PLACEHOLDERS
                            .iter()
                            .map(|n| format!("{{{n}}}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
        }
    }
    Some(argv)
}

/// The longest `timeout` a run may have: 30 days (a deadline must stay a time the clock and
/// the store can hold).
const MAX_TIMEOUT_S: f64 = 30.0 * 24.0 * 3600.0;

fn seconds(table: &Map<String, Value>, k: &str, default: f64, p: &mut Vec<ConfigProblem>) -> f64 {
    match table.get(k) {
        None => default,
        Some(v) => match v.as_f64() {
            Some(s) if s > 0.0 && s <= MAX_TIMEOUT_S => s,
            _ => {
                p.push(bad(
                    &key(k),
                    v,
                    "expected a positive number of seconds, at most 2592000 (30 days)",
                ));
                default
            }
        },
    }
}

fn count(table: &Map<String, Value>, k: &str, default: u32, p: &mut Vec<ConfigProblem>) -> u32 {
    match table.get(k) {
        None => default,
        Some(v) => match v.as_u64() {
            Some(n) if n >= 1 && n <= u64::from(u32::MAX) => n as u32,
            _ => {
                p.push(bad(&key(k), v, "expected a whole number ≥ 1"));
                default
            }
        },
    }
}

/// `protect` / `ignore`: repo-relative globs.
fn globs(table: &Map<String, Value>, k: &str, p: &mut Vec<ConfigProblem>) -> Vec<String> {
    let Some(v) = table.get(k) else {
        return Vec::new();
    };
    let Some(items) = v.as_array() else {
        p.push(bad(
            &key(k),
            v,
            "expected a list of repo-relative globs, e.g. [\"bench/**\"]",
        ));
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        match item.as_str() {
            Some(s) if is_repo_relative(s) => out.push(s.to_string()),
            _ => p.push(bad(
                &format!("{}[{i}]", key(k)),
                item,
                "expected a repo-relative glob (no leading `/`, no `..`), e.g. \"bench/**\"",
            )),
        }
    }
    out
}

/// `env`: names to string values; `TALLY_*` is tally's own.
fn read_env(value: Option<&Value>, p: &mut Vec<ConfigProblem>) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    let Some(v) = value else {
        return env;
    };
    let Some(table) = v.as_object() else {
        p.push(bad(
            &key("env"),
            v,
            "expected a table of variables, e.g. env = { ANTHROPIC_BASE_URL = \"https://gw.example\" }",
        ));
        return env;
    };
    for (name, value) in table {
        let at = format!("{}.{name}", key("env"));
        let valid_name = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid_name {
            p.push(ConfigProblem::missing(
                at,
                "not a variable name: use letters, digits and `_`, not starting with a digit",
            ));
        } else if name.starts_with("TALLY_") {
            p.push(ConfigProblem::missing(
                at,
                "reserved: tally sets the TALLY_* variables of an implementer itself",
            ));
        } else if let Some(s) = value.as_str() {
            env.insert(name.clone(), s.to_string());
        } else {
            p.push(bad(&at, value, "expected a string"));
        }
    }
    env
}

/// `[implementer.prices."model"]`: USD per million tokens.
fn read_prices(value: Option<&Value>, p: &mut Vec<ConfigProblem>) -> BTreeMap<String, Prices> {
    let mut prices = BTreeMap::new();
    let Some(v) = value else {
        return prices;
    };
    let Some(table) = v.as_object() else {
        p.push(bad(
            &key("prices"),
            v,
            "expected tables of USD per million tokens: [implementer.prices.\"model\"] with input and output",
        ));
        return prices;
    };
    for (model, entry) in table {
        let at = format!("{}.{model:?}", key("prices"));
        let Some(entry) = entry.as_object() else {
            p.push(bad(&at, entry, "expected a table with input and output"));
            continue;
        };
        for k in entry.keys() {
            if !PRICE_KEYS.contains(&k.as_str()) {
                p.push(ConfigProblem::unknown_key(&at, k, PRICE_KEYS));
            }
        }
        let mut read = |k: &str| -> Option<f64> {
            match entry.get(k) {
                None => None,
                Some(v) => match v.as_f64() {
                    Some(x) if x >= 0.0 && x.is_finite() => Some(x),
                    _ => {
                        p.push(bad(
                            &join_key(&at, k),
                            v,
                            "expected USD per million tokens, a number ≥ 0",
                        ));
                        None
                    }
                },
            }
        };
        let input = read("input");
        let cached_input = read("cached_input");
        let output = read("output");
        for (k, found) in [("input", input), ("output", output)] {
            if found.is_none() && !entry.contains_key(k) {
                p.push(ConfigProblem::missing(
                    join_key(&at, k),
                    "missing: USD per million tokens",
                ));
            }
        }
        if let (Some(input), Some(output)) = (input, output) {
            prices.insert(
                model.clone(),
                Prices {
                    input,
                    cached_input: cached_input.unwrap_or(input),
                    output,
                },
            );
        }
    }
    prices
}
