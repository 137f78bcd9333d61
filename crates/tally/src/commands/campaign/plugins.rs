//! `tally plugins [--json]`: every capability, its providers (built-in and external), their
//! parameters with types, defaults and docs, the facts they supply with units, and what the
//! current campaign selects (when there is a valid `tally.toml`), external providers listed as
//! their `describe` answers present them.

use serde_json::{Value, json};
use tally_plugin::{Capability, ProviderInfo, Surface, host_facts};

use super::context::{Loaded, Workspace};
use crate::cli::{CampaignOptions, PluginsArgs};
use crate::exit::Status;
use crate::printer;

/// What the campaign's `tally.toml` selects: (capability, provider name) pairs, and the external
/// providers it built, as they describe themselves.
struct Selection {
    chosen: Vec<(Capability, String)>,
    external: Vec<(Capability, ProviderInfo)>,
}

fn selection(loaded: &Loaded) -> Selection {
    let s = &loaded.settings;
    let built = &loaded.providers;
    let mut chosen = vec![
        (Capability::VerdictRule, s.verdict_rule.provider.clone()),
        (Capability::StopRule, s.stop_rule.provider.clone()),
    ];
    chosen.extend(
        s.fact_sources
            .iter()
            .map(|f| (Capability::FactSource, f.provider.clone())),
    );
    let mut external: Vec<(Capability, ProviderInfo)> = Vec::new();
    let mut add = |cap: Capability, info: Option<&ProviderInfo>| {
        if let Some(info) = info
            && !external
                .iter()
                .any(|(c, i)| *c == cap && i.name == info.name)
        {
            external.push((cap, info.clone()));
        }
    };
    add(Capability::VerdictRule, built.verdict.described());
    add(Capability::StopRule, built.stop.described());
    for source in &built.fact_sources {
        add(
            Capability::FactSource,
            source
                .source
                .described()
                .or(Some(&source.info))
                .filter(|i| !i.builtin),
        );
    }
    for (choice, surface) in [(&s.status, Surface::Status), (&s.brief, Surface::Run)] {
        for section in built.sections(choice, surface) {
            if let Ok(built) = &section.section {
                add(Capability::Section, built.described());
            }
            chosen.push((Capability::Section, section.provider));
        }
    }
    Selection { chosen, external }
}

/// Runs the command.
pub fn run(args: &PluginsArgs, options: &CampaignOptions) -> anyhow::Result<Status> {
    let registry = tally_providers::builtins();
    // What the campaign selects, when there is one to read (not an error otherwise).
    let selected: Option<Selection> = Workspace::discover(options)
        .ok()
        .and_then(|w| w.load().ok())
        .map(|loaded| selection(&loaded));
    let external = |cap: Capability| -> Vec<&ProviderInfo> {
        selected.as_ref().map_or_else(Vec::new, |s| {
            s.external
                .iter()
                .filter(|(c, _)| *c == cap)
                .map(|(_, info)| info)
                .collect()
        })
    };
    let is_selected = |cap: Capability, name: &str| {
        selected
            .as_ref()
            .map(|s| s.chosen.iter().any(|(c, n)| *c == cap && n == name))
    };

    if args.json {
        let capabilities: Vec<Value> = Capability::ALL
            .iter()
            .map(|cap| {
                let mut providers: Vec<Value> = registry
                    .infos(*cap)
                    .into_iter()
                    .map(|info| {
                        let mut v = serde_json::to_value(info).expect("provider info serialises");
                        v["selected"] = json!(is_selected(*cap, &info.name));
                        v
                    })
                    .collect();
                // The campaign's external providers, as their `describe` answers say.
                providers.extend(external(*cap).into_iter().map(|info| {
                    let mut v = serde_json::to_value(info).expect("provider info serialises");
                    v["selected"] = json!(true);
                    v
                }));
                json!({"capability": cap.as_str(), "providers": providers})
            })
            .collect();
        let value = json!({
            "capabilities": capabilities,
            "host_facts": host_facts(),
            "campaign_loaded": selected.is_some(),
        });
        printer::out_line(&serde_json::to_string_pretty(&value)?)?;
        return Ok(Status::Success);
    }

    let mut text = String::new();
    for cap in Capability::ALL {
        text.push_str(&format!("{}\n", cap.as_str()));
        for info in registry.infos(cap) {
            render_provider(&mut text, info, is_selected(cap, &info.name));
        }
        for info in external(cap) {
            render_provider(&mut text, info, Some(true));
        }
        text.push('\n');
    }
    text.push_str("host facts (always supplied)\n");
    for f in host_facts() {
        text.push_str(&format!("  {} [{}] {}\n", f.name, unit(&f.unit), f.doc));
    }
    if selected.is_none() {
        text.push_str("\n(no valid tally.toml here: `*` marks what a campaign selects)\n");
    }
    printer::out(&text)?;
    Ok(Status::Success)
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
                tally_plugin::Surface::Status => "status",
                tally_plugin::Surface::Run => "brief",
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
