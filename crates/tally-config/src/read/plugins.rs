//! `[plugins]` (`docs/campaign.md#tally-toml`): the verdict rule, the stop rule and the fact
//! sources, each a provider table checked against the provider's declared parameters and then
//! by the provider's own value checks; and, when every chosen provider can be built without
//! effects, whether each fact the stop rule reads is supplied by someone.

use serde_json::{Map, Value};
use tally_plugin::problem::{did_you_mean, join_key};
use tally_plugin::{Capability, ConfigProblem, FactInfo, Registry, check_params, unsupplied_facts};

use super::values::bad;
use crate::settings::ProviderChoice;

const PLUGIN_KEYS: &[&str] = &["verdict_rule", "stop_rule", "fact_source"];
/// The three provider choices of `[plugins]`.
pub(super) struct Plugins {
    pub verdict_rule: ProviderChoice,
    pub stop_rule: ProviderChoice,
    pub fact_sources: Vec<ProviderChoice>,
}

/// `[plugins]`, every problem at once.
pub(super) fn read_plugins(
    root: &Map<String, Value>,
    registry: &Registry,
    p: &mut Vec<ConfigProblem>,
) -> Plugins {
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
        p,
    );
    // Whether the facts the stop rule reads are supplied is known only when the stop rule and
    // the fact sources are well-formed.
    let before = p.len();
    let stop_rule = read_provider(
        plugins.get("stop_rule"),
        "plugins.stop_rule",
        Some("limits"),
        Capability::StopRule,
        registry,
        p,
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
                    p,
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

    let plugins = Plugins {
        verdict_rule,
        stop_rule,
        fact_sources,
    };
    if p.len() == before {
        p.extend(unsupplied_facts_of(&plugins, registry));
    }
    plugins
}

/// The facts the stop rule reads that neither the host nor a chosen fact source supplies, when
/// that can be known without effects: the stop rule and every fact source are providers that
/// build without starting anything (an external source says what it supplies only when asked;
/// the engine checks those when it builds them).
fn unsupplied_facts_of(plugins: &Plugins, registry: &Registry) -> Vec<ConfigProblem> {
    let Some(stop_entry) = registry.stop_rule(&plugins.stop_rule.provider) else {
        return Vec::new();
    };
    let mut supplied: Vec<&FactInfo> = Vec::new();
    for choice in &plugins.fact_sources {
        match registry.fact_source(&choice.provider) {
            Some(entry) if entry.builds_without_effects() => supplied.extend(&entry.info.facts),
            _ => return Vec::new(),
        }
    }
    if !stop_entry.builds_without_effects() {
        return Vec::new();
    }
    match (stop_entry.build)(&plugins.stop_rule.params) {
        Ok(stop) => unsupplied_facts(
            &plugins.stop_rule.key,
            &stop.wanted_facts(),
            &supplied,
            registry,
        ),
        Err(_) => Vec::new(),
    }
}

/// Reads a provider table: its `provider` name (or the default) and its checked parameters.
pub(super) fn read_provider(
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
        Some(info) => {
            let before = p.len();
            let params = check_params(&info.params, table, prefix, &["provider"], p);
            // The provider's own checks of the values (ranges, combinations), with every other
            // problem; a key that already has a problem is not reported twice.
            for problem in registry.value_problems(capability, &provider, &params) {
                if !p[before..].iter().any(|q| q.key == problem.key) {
                    p.push(problem);
                }
            }
            params
        }
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
