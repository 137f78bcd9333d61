//! `[status]` and `[brief]` (`docs/campaign.md#sections`): which sections a surface shows, either
//! the exact list (each a provider table) or the default list minus some.

use serde_json::{Map, Value};
use tally_plugin::problem::{did_you_mean, join_key};
use tally_plugin::{Capability, ConfigProblem, Registry};

use super::plugins::read_provider;
use super::values::bad;
use crate::settings::SectionChoice;

const SURFACE_KEYS: &[&str] = &["sections", "exclude"];

/// One surface's table.
pub(super) fn read_surface(
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
