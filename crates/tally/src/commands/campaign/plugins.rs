//! `tally plugins [--json]`: every capability, its providers (built-in and external), their
//! parameters with types, defaults and docs, the facts they supply with units, and what the
//! current campaign selects (when there is a valid `tally.toml`).

use serde_json::{Value, json};
use tally_plugin::{Capability, ProviderInfo, host_facts};

use super::context::Workspace;
use crate::cli::PluginsArgs;
use crate::exit::Status;
use crate::printer;

/// Runs the command.
pub fn run(args: &PluginsArgs) -> anyhow::Result<Status> {
    let registry = tally_providers::builtins();
    // What the campaign selects, when there is one to read (not an error otherwise).
    let selected: Option<Vec<(Capability, String)>> = Workspace::discover(&args.campaign)
        .ok()
        .and_then(|w| w.load().ok())
        .map(|loaded| {
            let s = &loaded.settings;
            let mut v = vec![
                (Capability::VerdictRule, s.verdict_rule.provider.clone()),
                (Capability::StopRule, s.stop_rule.provider.clone()),
            ];
            v.extend(
                s.fact_sources
                    .iter()
                    .map(|f| (Capability::FactSource, f.provider.clone())),
            );
            let report_sections = loaded
                .providers
                .sections(&s.status, tally_plugin::Surface::Status);
            v.extend(
                report_sections
                    .into_iter()
                    .map(|c| (Capability::Section, c.provider)),
            );
            v
        });
    let is_selected = |cap: Capability, name: &str| {
        selected
            .as_ref()
            .map(|list| list.iter().any(|(c, n)| *c == cap && n == name))
    };

    if args.json {
        let capabilities: Vec<Value> = Capability::ALL
            .iter()
            .map(|cap| {
                let providers: Vec<Value> = registry
                    .infos(*cap)
                    .into_iter()
                    .map(|info| {
                        let mut v = serde_json::to_value(info).expect("provider info serialises");
                        v["selected"] = json!(is_selected(*cap, &info.name));
                        v
                    })
                    .collect();
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
