//! Reading `tally.toml`: TOML syntax first (one error with its line and column), then every key
//! checked against `docs/campaign.md#tally-toml` and the chosen providers' declared parameters and
//! value checks, with all problems collected and reported together, one line each, at their
//! dotted keys. One module per table: [`top`] (the top-level keys), [`metrics`], [`plugins`],
//! [`surfaces`] (`[status]`, `[brief]`), [`implementer`], [`checks`], [`executor`].

mod checks;
mod executor;
mod implementer;
mod metrics;
mod plugins;
mod surfaces;
mod top;
mod values;

use serde_json::Value;
use tally_plugin::{ConfigProblem, Registry};

use crate::settings::Settings;
pub use values::toml_to_json;

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
    "implementer",
    "checks",
    "executor",
];
/// Parses and validates `tally.toml` text against the registry's providers.
pub fn parse_settings(text: &str, registry: &Registry) -> Result<Settings, ConfigError> {
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let (line, column) = e
            .span()
            .map(|span| values::line_column(text, span.start))
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
    let name = top::name(&root, &mut p);
    let evaluate = top::evaluate(&root, &mut p);
    let evaluate_timeout_s = top::evaluate_timeout(&root, &mut p);
    let link = top::link(&root, &mut p);
    let evaluation_slots = top::evaluation_slots(&root, &mut p);
    let metrics = metrics::read_metrics(root.get("metrics"), &mut p);
    let plugins = plugins::read_plugins(&root, registry, &mut p);
    let status = surfaces::read_surface(root.get("status"), "status", registry, &mut p);
    let brief = surfaces::read_surface(root.get("brief"), "brief", registry, &mut p);
    let implementer = implementer::read_implementer(&root, &evaluate, &link, &mut p);
    let checks = checks::read_checks(&root, evaluate_timeout_s, &mut p);
    let executor = executor::read_executor(&root, &mut p);
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
        verdict_rule: plugins.verdict_rule,
        stop_rule: plugins.stop_rule,
        fact_sources: plugins.fact_sources,
        status,
        brief,
        implementer,
        checks,
        executor,
    })
}
