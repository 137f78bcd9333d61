//! The providers a campaign runs with, built from `Settings` and the [`Registry`]: the verdict
//! rule (and whether it confirms keeps), the stop rule, the active fact sources, and the section
//! lists of each surface. The config reader has already checked every parameter and, when no
//! `exec` provider is involved, that every fact the stop rule reads is supplied; building repeats
//! that last check with what external fact sources `describe`d.

use tally_config::{ProviderChoice, SectionChoice, Settings};
use tally_plugin::{
    ConfigProblem, FactInfo, FactSource, ProviderInfo, Registry, Section, StopRule, Surface,
    VerdictRule, unsupplied_facts,
};

/// An active fact source.
pub struct ActiveSource {
    /// Its provider name.
    pub name: String,
    /// What it declares (its facts with units).
    pub info: ProviderInfo,
    /// The source.
    pub source: Box<dyn FactSource>,
}

/// A section chosen for a surface, ready to render.
pub struct ChosenSection {
    /// Its provider name.
    pub provider: String,
    /// Its order (for JSON; the list is already in display order).
    pub order: u32,
    /// The section, or why it could not be built.
    pub section: Result<Box<dyn Section>, String>,
}

/// Everything a campaign's config selects, built.
pub struct Providers {
    /// The verdict rule.
    pub verdict: Box<dyn VerdictRule>,
    /// `confirm = true` on the verdict rule: re-measure a keep before it becomes the head.
    pub confirm: bool,
    /// The stop rule.
    pub stop: Box<dyn StopRule>,
    /// The active fact sources, in config order.
    pub fact_sources: Vec<ActiveSource>,
    /// The registry, for sections and `tally plugins`.
    pub registry: Registry,
}

impl Providers {
    /// Builds every provider `settings` chooses; every problem at once.
    pub fn build(settings: &Settings, registry: Registry) -> Result<Self, Vec<ConfigProblem>> {
        let mut problems = Vec::new();
        let verdict = build_one(
            &settings.verdict_rule,
            registry.verdict_rule(&settings.verdict_rule.provider),
            &mut problems,
        );
        let stop = build_one(
            &settings.stop_rule,
            registry.stop_rule(&settings.stop_rule.provider),
            &mut problems,
        );
        let mut fact_sources = Vec::new();
        for choice in &settings.fact_sources {
            let entry = registry.fact_source(&choice.provider);
            if let Some(source) = build_one(choice, entry, &mut problems) {
                // An external source says what it supplies only once built (`describe`).
                let info = match source.described() {
                    Some(described) => described.clone(),
                    None => entry.map(|e| e.info.clone()).expect("built from an entry"),
                };
                fact_sources.push(ActiveSource {
                    name: choice.provider.clone(),
                    info,
                    source,
                });
            }
        }
        if let Some(stop) = &stop {
            let supplied: Vec<&FactInfo> =
                fact_sources.iter().flat_map(|s| &s.info.facts).collect();
            problems.extend(unsupplied_facts(
                &settings.stop_rule.key,
                &stop.wanted_facts(),
                &supplied,
                &registry,
            ));
        }
        let (Some(verdict), Some(stop)) = (verdict, stop) else {
            return Err(problems);
        };
        if !problems.is_empty() {
            return Err(problems);
        }
        Ok(Self {
            verdict,
            confirm: settings
                .verdict_rule
                .params
                .bool("confirm")
                .unwrap_or(false),
            stop,
            fact_sources,
            registry,
        })
    }

    /// Every fact the active sources and the host supply, with units.
    pub fn fact_info(&self) -> Vec<FactInfo> {
        let mut infos: Vec<FactInfo> = tally_plugin::host_facts();
        for source in &self.fact_sources {
            infos.extend(source.info.facts.iter().cloned());
        }
        if crate::facts::has_total_usd(self) {
            infos.push(FactInfo {
                name: crate::facts::TOTAL_USD.into(),
                unit: "USD".into(),
                doc: "gpu_usd + agent_usd, supplied by the host while both sources are active"
                    .into(),
            });
        }
        infos
    }

    /// The sections of a surface, in display order: the explicit list, or every installed
    /// section shown there sorted by (order, name) minus `exclude` (`docs/campaign.md#sections`).
    pub fn sections(&self, choice: &SectionChoice, surface: Surface) -> Vec<ChosenSection> {
        match choice {
            SectionChoice::Explicit(list) => list
                .iter()
                .map(|c| {
                    let entry = self.registry.section(&c.provider);
                    ChosenSection {
                        provider: c.provider.clone(),
                        order: entry.and_then(|e| e.info.order).unwrap_or(0),
                        section: match entry {
                            Some(e) => (e.build)(&c.params).map_err(|p| join(&p)),
                            None => Err(format!("no section provider `{}`", c.provider)),
                        },
                    }
                })
                .collect(),
            SectionChoice::Default { exclude } => {
                let mut entries: Vec<_> = self
                    .registry
                    .sections
                    .iter()
                    .filter(|e| e.info.surfaces.contains(&surface))
                    .filter(|e| !exclude.contains(&e.info.name))
                    .collect();
                entries.sort_by(|a, b| {
                    (a.info.order, &a.info.name).cmp(&(b.info.order, &b.info.name))
                });
                entries
                    .into_iter()
                    .map(|e| {
                        let params = tally_plugin::check_params(
                            &e.info.params,
                            &serde_json::Map::new(),
                            &e.info.name,
                            &[],
                            &mut Vec::new(),
                        );
                        ChosenSection {
                            provider: e.info.name.clone(),
                            order: e.info.order.unwrap_or(0),
                            section: (e.build)(&params).map_err(|p| join(&p)),
                        }
                    })
                    .collect()
            }
        }
    }
}

fn join(problems: &[ConfigProblem]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

fn build_one<T: ?Sized>(
    choice: &ProviderChoice,
    entry: Option<&tally_plugin::Entry<T>>,
    problems: &mut Vec<ConfigProblem>,
) -> Option<Box<T>> {
    // Unknown providers were reported by the config reader already.
    let entry = entry?;
    match (entry.build)(&choice.params) {
        Ok(built) => Some(built),
        Err(mut p) => {
            problems.append(&mut p);
            None
        }
    }
}
