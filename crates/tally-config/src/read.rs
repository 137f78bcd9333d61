//! Reading `tally.toml`: TOML syntax first (one error with its line and column), then every key
//! checked against `docs/campaign.md#tally-toml` and the chosen providers' declared parameters, with all
//! problems collected and reported together, one line each, at their dotted keys.

use serde_json::{Map, Value};
use tally_model::{Direction, Role};
use tally_plugin::problem::{did_you_mean, join_key, show_value};
use tally_plugin::{Capability, ConfigProblem, Registry, check_params};

use crate::settings::{MetricSpec, ProviderChoice, SectionChoice, Settings};

/// Why `tally.toml` could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Not valid TOML.
    #[error("line {line}, column {column}: {message}")]
    Syntax {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The parser's message.
        message: String,
    },
    /// Valid TOML with problems; all of them.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Problems(Vec<ConfigProblem>),
}

const TOP_KEYS: &[&str] = &[
    "name",
    "evaluate",
    "evaluate_timeout",
    "link",
    "evaluation_slots",
    "metrics",
    "plugins",
    "status",
    "brief",
];
const METRIC_KEYS: &[&str] = &[
    "name",
    "direction",
    "role",
    "margin",
    "floor",
    "repeats",
    "deterministic",
];
const PLUGIN_KEYS: &[&str] = &["verdict_rule", "stop_rule", "fact_source"];
const SURFACE_KEYS: &[&str] = &["sections", "exclude"];

/// Parses and validates `tally.toml` text against the registry's providers.
pub fn parse_settings(text: &str, registry: &Registry) -> Result<Settings, ConfigError> {
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let (line, column) = e
            .span()
            .map(|span| line_column(text, span.start))
            .unwrap_or((1, 1));
        ConfigError::Syntax {
            line,
            column,
            message: e.message().trim().to_string(),
        }
    })?;
    let root = match toml_to_json(toml::Value::Table(table)) {
        Value::Object(map) => map,
        _ => unreachable!("a TOML document is a table"),
    };
    let mut p = Vec::new();
    for key in root.keys() {
        if !TOP_KEYS.contains(&key.as_str()) {
            p.push(ConfigProblem::unknown_key("", key, TOP_KEYS));
        }
    }

    let name = match root.get("name") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
        Some(v) => {
            p.push(bad(
                "name",
                v,
                "expected a non-empty string naming the campaign",
            ));
            String::new()
        }
        None => {
            p.push(ConfigProblem::missing(
                "name",
                "missing: add `name = \"my-campaign\"`",
            ));
            String::new()
        }
    };

    let evaluate = match root.get("evaluate") {
        Some(Value::Array(items))
            if !items.is_empty()
                && items.iter().all(Value::is_string)
                && !items[0].as_str().unwrap_or("").is_empty() =>
        {
            items
                .iter()
                .map(|v| v.as_str().unwrap_or_default().to_string())
                .collect()
        }
        Some(v) => {
            p.push(bad(
                "evaluate",
                v,
                "expected a non-empty list of strings (an argv, e.g. [\"./evaluate.sh\"]; \
                 use [\"sh\", \"-c\", \"...\"] for a shell)",
            ));
            Vec::new()
        }
        None => {
            p.push(ConfigProblem::missing(
                "evaluate",
                "missing: add `evaluate = [\"./evaluate.sh\"]`, the command that prints METRIC lines",
            ));
            Vec::new()
        }
    };

    let evaluate_timeout_s = match root.get("evaluate_timeout") {
        None => 600.0,
        Some(v) => match v.as_f64() {
            Some(s) if s > 0.0 && s.is_finite() => s,
            _ => {
                p.push(bad(
                    "evaluate_timeout",
                    v,
                    "expected a positive number of seconds per sample",
                ));
                600.0
            }
        },
    };

    let link = match root.get("link") {
        None => Vec::new(),
        Some(Value::Array(items)) => {
            let mut out = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let key = format!("link[{i}]");
                match item.as_str() {
                    Some(s) if is_repo_relative(s) => out.push(s.trim_end_matches('/').to_string()),
                    _ => p.push(bad(
                        &key,
                        item,
                        "expected a repo-relative path inside the repository (no leading `/`, no `..`)",
                    )),
                }
            }
            out
        }
        Some(v) => {
            p.push(bad("link", v, "expected a list of repo-relative paths"));
            Vec::new()
        }
    };

    let evaluation_slots = match root.get("evaluation_slots") {
        None => 1,
        Some(v) if v.as_u64() == Some(1) => 1,
        Some(v) => {
            p.push(bad(
                "evaluation_slots",
                v,
                "tally runs one evaluation at a time (GPU benchmarks must not share the device); set 1",
            ));
            1
        }
    };

    let metrics = read_metrics(root.get("metrics"), &mut p);

    let plugins = match root.get("plugins") {
        None => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(v) => {
            p.push(bad("plugins", v, "expected a table"));
            Map::new()
        }
    };
    for key in plugins.keys() {
        if !PLUGIN_KEYS.contains(&key.as_str()) {
            p.push(ConfigProblem::unknown_key("plugins", key, PLUGIN_KEYS));
        }
    }
    let verdict_rule = read_provider(
        plugins.get("verdict_rule"),
        "plugins.verdict_rule",
        Some("bootstrap"),
        Capability::VerdictRule,
        registry,
        &mut p,
    );
    let stop_rule = read_provider(
        plugins.get("stop_rule"),
        "plugins.stop_rule",
        Some("limits"),
        Capability::StopRule,
        registry,
        &mut p,
    );
    let fact_sources = match plugins.get("fact_source") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                read_provider(
                    Some(item),
                    &format!("plugins.fact_source[{i}]"),
                    None,
                    Capability::FactSource,
                    registry,
                    &mut p,
                )
            })
            .collect(),
        Some(v) => {
            p.push(bad(
                "plugins.fact_source",
                v,
                "expected an array of tables: [[plugins.fact_source]]",
            ));
            Vec::new()
        }
    };

    let status = read_surface(root.get("status"), "status", registry, &mut p);
    let brief = read_surface(root.get("brief"), "brief", registry, &mut p);

    if !p.is_empty() {
        return Err(ConfigError::Problems(p));
    }
    Ok(Settings {
        name,
        evaluate,
        evaluate_timeout_s,
        link,
        evaluation_slots,
        metrics,
        verdict_rule,
        stop_rule,
        fact_sources,
        status,
        brief,
    })
}

fn read_metrics(value: Option<&Value>, p: &mut Vec<ConfigProblem>) -> Vec<MetricSpec> {
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

/// Reads a provider table: its `provider` name (or the default) and its checked parameters.
fn read_provider(
    value: Option<&Value>,
    prefix: &str,
    default: Option<&str>,
    capability: Capability,
    registry: &Registry,
    p: &mut Vec<ConfigProblem>,
) -> ProviderChoice {
    let empty = Map::new();
    let table = match value {
        None => &empty,
        Some(Value::Object(t)) => t,
        Some(v) => {
            p.push(bad(prefix, v, "expected a table with `provider = \"...\"`"));
            &empty
        }
    };
    let provider = match (table.get("provider"), default) {
        (Some(Value::String(s)), _) => s.clone(),
        (None, Some(d)) => d.to_string(),
        (Some(v), _) => {
            p.push(bad(
                &join_key(prefix, "provider"),
                v,
                "expected a provider name",
            ));
            String::new()
        }
        (None, None) => {
            p.push(ConfigProblem::missing(
                join_key(prefix, "provider"),
                format!(
                    "missing: choose a {} provider ({})",
                    capability.as_str(),
                    registry.names(capability).join(", ")
                ),
            ));
            String::new()
        }
    };
    let info = registry
        .infos(capability)
        .into_iter()
        .find(|i| i.name == provider);
    let params = match info {
        Some(info) => check_params(&info.params, table, prefix, &["provider"], p),
        None => {
            if !provider.is_empty() {
                let names = registry.names(capability);
                let hint = match did_you_mean(&provider, &names) {
                    Some(s) => format!("did you mean \"{s}\"?"),
                    None => format!("installed: {}", names.join(", ")),
                };
                p.push(ConfigProblem::new(
                    join_key(prefix, "provider"),
                    Some(format!("{provider:?}")),
                    format!("unknown {} provider; {hint}", capability.as_str()),
                ));
            }
            tally_plugin::Params::default()
        }
    };
    ProviderChoice {
        provider,
        key: prefix.to_string(),
        params,
        table_json: Value::Object(table.clone()).to_string(),
    }
}

fn read_surface(
    value: Option<&Value>,
    prefix: &str,
    registry: &Registry,
    p: &mut Vec<ConfigProblem>,
) -> SectionChoice {
    let table = match value {
        None => return SectionChoice::Default { exclude: vec![] },
        Some(Value::Object(t)) => t,
        Some(v) => {
            p.push(bad(
                prefix,
                v,
                "expected a table with `sections` or `exclude`",
            ));
            return SectionChoice::Default { exclude: vec![] };
        }
    };
    for key in table.keys() {
        if !SURFACE_KEYS.contains(&key.as_str()) {
            p.push(ConfigProblem::unknown_key(prefix, key, SURFACE_KEYS));
        }
    }
    let names = registry.names(Capability::Section);
    match (table.get("sections"), table.get("exclude")) {
        (Some(_), Some(_)) => {
            p.push(ConfigProblem::missing(
                prefix,
                "set either `sections` (the exact list) or `exclude` (the default list minus some), not both",
            ));
            SectionChoice::Default { exclude: vec![] }
        }
        (Some(Value::Array(items)), None) => SectionChoice::Explicit(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    let key = format!("{prefix}.sections[{i}]");
                    let item = match item {
                        Value::String(s) => {
                            Value::Object(Map::from_iter([("provider".into(), s.clone().into())]))
                        }
                        other => other.clone(),
                    };
                    read_provider(Some(&item), &key, None, Capability::Section, registry, p)
                })
                .collect(),
        ),
        (Some(v), None) => {
            p.push(bad(
                &join_key(prefix, "sections"),
                v,
                "expected a list of section tables, e.g. [{ provider = \"latency\", rows = 8 }]",
            ));
            SectionChoice::Default { exclude: vec![] }
        }
        (None, Some(Value::Array(items))) => {
            let mut exclude = Vec::new();
            for (i, item) in items.iter().enumerate() {
                match item.as_str() {
                    Some(s) if names.contains(&s) => exclude.push(s.to_string()),
                    _ => {
                        let hint = item
                            .as_str()
                            .and_then(|s| did_you_mean(s, &names))
                            .map(|s| format!("did you mean \"{s}\"?"))
                            .unwrap_or_else(|| format!("installed: {}", names.join(", ")));
                        p.push(bad(
                            &format!("{prefix}.exclude[{i}]"),
                            item,
                            &format!("not an installed section; {hint}"),
                        ));
                    }
                }
            }
            SectionChoice::Default { exclude }
        }
        (None, Some(v)) => {
            p.push(bad(
                &join_key(prefix, "exclude"),
                v,
                "expected a list of section names",
            ));
            SectionChoice::Default { exclude: vec![] }
        }
        (None, None) => SectionChoice::Default { exclude: vec![] },
    }
}

fn bad(key: &str, value: &Value, message: &str) -> ConfigProblem {
    ConfigProblem::new(key, Some(show_value(value)), message)
}

fn valid_metric_name(s: &str) -> bool {
    !s.is_empty() && !s.contains('=') && !s.chars().any(char::is_whitespace)
}

fn is_repo_relative(s: &str) -> bool {
    !s.is_empty() && !s.starts_with('/') && !s.split('/').any(|part| part == "..") && s != "."
}

fn line_column(text: &str, offset: usize) -> (usize, usize) {
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
