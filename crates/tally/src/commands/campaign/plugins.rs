//! `tally plugins [--json]`: every capability, its providers (built-in and external), their
//! parameters with types, defaults and docs, the facts they supply with units, and what the
//! current campaign selects (when there is a valid `tally.toml`), external providers listed as
//! their `describe` answers present them; then the implementer presets ([`presets`]).

use tally_plugin::{Capability, ProviderInfo, Surface, host_facts};
use tally_report::plugins::{self, CapabilityProviders, PluginsView};

use super::context::{Loaded, Workspace};
use super::presets;
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
    let loaded = Workspace::discover(options)
        .ok()
        .and_then(|w| w.load().ok());
    let preset: Option<Option<String>> = loaded.as_ref().map(|l| {
        l.settings
            .implementer
            .as_ref()
            .and_then(|i| i.preset.clone())
    });
    let selected: Option<Selection> = loaded.as_ref().map(selection);
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

    let capabilities = Capability::ALL
        .iter()
        .map(|&cap| CapabilityProviders {
            capability: cap,
            providers: registry
                .infos(cap)
                .into_iter()
                .map(|info| (info, is_selected(cap, &info.name)))
                // The campaign's external providers, as their `describe` answers say.
                .chain(external(cap).into_iter().map(|info| (info, Some(true))))
                .collect(),
        })
        .collect();
    let mut host_facts = host_facts();
    // `total_usd` while the campaign has both of its parts (docs/implementers.md#agent-usage).
    if let Some(total) = loaded.as_ref().and_then(|l| {
        l.providers
            .fact_info()
            .into_iter()
            .find(|f| f.name == tally_engine::TOTAL_USD)
    }) {
        host_facts.push(total);
    }
    let view = PluginsView {
        capabilities,
        host_facts: &host_facts,
        campaign_loaded: selected.is_some(),
    };
    if args.json {
        let mut value: serde_json::Value =
            serde_json::from_str(&plugins::json(&view)).expect("the plugin list is JSON");
        value["implementer_presets"] = presets::json(preset.as_ref().map(Option::as_deref));
        let mut text = serde_json::to_string_pretty(&value).expect("the plugin list serialises");
        text.push('\n');
        printer::out(&text)?;
    } else {
        let mut text = plugins::text(&view);
        text.push_str(&presets::text(preset.as_ref().and_then(Option::as_deref)));
        printer::out(&text)?;
    }
    Ok(Status::Success)
}
