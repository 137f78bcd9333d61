//! `tally plugins`: every capability and its providers — parameters with types, defaults and
//! docs, the facts they supply with units, the surfaces and order of sections, whether the
//! campaign selects each (`*`) — then the facts the host always supplies; as text, or as the
//! pretty-printed `--json` object `{"campaign_loaded", "capabilities": [{"capability",
//! "providers"}], "host_facts"}`.
//!
//! Keys print in alphabetical order at every level, as the command has always printed them (it
//! built a `serde_json::Value`, whose keys sort): a provider is its contract info
//! ([`ProviderInfo`], the shape of an external provider's `describe` answer, so a field added
//! there is listed too) as a `Value`, with `selected` added. Capabilities and providers keep the
//! order they are given in.

use serde::Serialize;
use serde_json::Value;
use tally_plugin::{Capability, FactInfo, ProviderInfo, Surface};

/// What `tally plugins` lists.
#[derive(Clone, Debug)]
pub struct PluginsView<'a> {
    /// Every capability, in the order to list them, with its providers.
    pub capabilities: Vec<CapabilityProviders<'a>>,
    /// The facts the host always supplies.
    pub host_facts: &'a [FactInfo],
    /// Whether a valid `tally.toml` was read (otherwise nothing is marked selected).
    pub campaign_loaded: bool,
}

/// One capability's providers: the installed ones, then the campaign's external ones.
#[derive(Clone, Debug)]
pub struct CapabilityProviders<'a> {
    /// The capability.
    pub capability: Capability,
    /// Each provider with whether the campaign selects it (`None` when no campaign was read).
    pub providers: Vec<(&'a ProviderInfo, Option<bool>)>,
}

/// The text: per capability its name and one entry per provider (`*` marks the selected ones),
/// a blank line after each; then the host facts, and a note when no campaign was read.
pub fn text(plugins: &PluginsView<'_>) -> String {
    let mut text = String::new();
    for cap in &plugins.capabilities {
        text.push_str(&format!("{}\n", cap.capability.as_str()));
        for (info, selected) in &cap.providers {
            render_provider(&mut text, info, *selected);
        }
        text.push('\n');
    }
    text.push_str("host facts (always supplied)\n");
    for f in plugins.host_facts {
        text.push_str(&format!("  {} [{}] {}\n", f.name, unit(&f.unit), f.doc));
    }
    if !plugins.campaign_loaded {
        text.push_str("\n(no valid tally.toml here: `*` marks what a campaign selects)\n");
    }
    text
}

/// The `--json` object, pretty-printed, ending with a newline.
pub fn json(plugins: &PluginsView<'_>) -> String {
    let value = PluginsJson {
        campaign_loaded: plugins.campaign_loaded,
        capabilities: plugins
            .capabilities
            .iter()
            .map(|cap| CapabilityJson {
                capability: cap.capability.as_str(),
                providers: cap
                    .providers
                    .iter()
                    .map(|(info, selected)| {
                        let mut v = serde_json::to_value(info).expect("provider info serialises");
                        v["selected"] = serde_json::json!(selected);
                        v
                    })
                    .collect(),
            })
            .collect(),
        host_facts: serde_json::to_value(plugins.host_facts).expect("fact info serialises"),
    };
    let mut text = serde_json::to_string_pretty(&value).expect("the plugin list serialises");
    text.push('\n');
    text
}

#[derive(Serialize)]
struct PluginsJson<'a> {
    campaign_loaded: bool,
    capabilities: Vec<CapabilityJson<'a>>,
    /// `[{"doc", "name", "unit"}]`, as a `Value` so the keys sort.
    host_facts: Value,
}

#[derive(Serialize)]
struct CapabilityJson<'a> {
    capability: &'a str,
    providers: Vec<Value>,
}

fn render_provider(text: &mut String, info: &ProviderInfo, selected: Option<bool>) {
    let mark = if selected == Some(true) { "*" } else { " " };
    let origin = if info.builtin { "" } else { " (external)" };
    text.push_str(&format!("{mark} {}{origin}: {}\n", info.name, info.doc));
    if let Some(order) = info.order {
        let surfaces: Vec<&str> = info
            .surfaces
            .iter()
            .map(|s| match s {
                Surface::Status => "status",
                Surface::Run => "brief",
            })
            .collect();
        text.push_str(&format!(
            "      order {order}, shown in {}\n",
            surfaces.join(", ")
        ));
    }
    for p in &info.params {
        let default = match (&p.default, p.required) {
            (_, true) => "required".to_string(),
            (Some(d), _) => format!("default {d}"),
            (None, _) => "unset".to_string(),
        };
        text.push_str(&format!(
            "      {} ({}, {default}): {}\n",
            p.name,
            p.kind.name(),
            p.doc
        ));
    }
    for f in &info.facts {
        text.push_str(&format!(
            "      fact {} [{}]: {}\n",
            f.name,
            unit(&f.unit),
            f.doc
        ));
    }
}

fn unit(u: &str) -> &str {
    if u.is_empty() { "-" } else { u }
}
