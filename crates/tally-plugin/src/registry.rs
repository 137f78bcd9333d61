//! The provider registry: per capability, the providers that can be chosen by name in
//! `tally.toml`, each with its [`ProviderInfo`] and a `build` function from checked [`Params`].
//!
//! The registry is plain data: built-ins are registered in one place (`tally-providers`), so
//! adding a provider touches no engine code. No linker tricks, no global state.

use serde::Serialize;

use crate::fact::{FactInfo, FactSource};
use crate::params::{ParamSpec, Params};
use crate::problem::ConfigProblem;
use crate::section::{Section, Surface};
use crate::stop::StopRule;
use crate::verdict::VerdictRule;

/// The four capabilities.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Capability {
    /// Judges candidates.
    VerdictRule,
    /// Go / hold / stop before every evaluation.
    StopRule,
    /// Supplies named facts.
    FactSource,
    /// Status and brief content.
    Section,
}

impl Capability {
    /// All four, in the order `tally plugins` lists them.
    pub const ALL: [Capability; 4] = [
        Self::VerdictRule,
        Self::StopRule,
        Self::FactSource,
        Self::Section,
    ];
    /// The `tally.toml` spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::VerdictRule => "verdict_rule",
            Self::StopRule => "stop_rule",
            Self::FactSource => "fact_source",
            Self::Section => "section",
        }
    }
}

/// What a provider says about itself (`describe`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProviderInfo {
    /// The name chosen in `tally.toml` (`provider = "..."`).
    pub name: String,
    /// One line.
    pub doc: String,
    /// Its parameters.
    pub params: Vec<ParamSpec>,
    /// Facts it supplies (fact sources).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub facts: Vec<FactInfo>,
    /// Surfaces it is shown in (sections).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub surfaces: Vec<Surface>,
    /// Its place among sections (built-ins leave gaps of 10).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order: Option<u32>,
    /// Built into tally, or an external executable.
    pub builtin: bool,
}

impl ProviderInfo {
    /// A built-in provider's info.
    pub fn builtin(name: &str, doc: &str, params: Vec<ParamSpec>) -> Self {
        Self {
            name: name.into(),
            doc: doc.into(),
            params,
            facts: Vec::new(),
            surfaces: Vec::new(),
            order: None,
            builtin: true,
        }
    }
    /// With the facts it supplies.
    pub fn with_facts(mut self, facts: Vec<FactInfo>) -> Self {
        self.facts = facts;
        self
    }
    /// With its surfaces and order.
    pub fn shown(mut self, surfaces: &[Surface], order: u32) -> Self {
        self.surfaces = surfaces.to_vec();
        self.order = Some(order);
        self
    }
}

/// A build function: checked params in, a provider out (or problems at their dotted keys).
pub type Build<T> = fn(&Params) -> Result<Box<T>, Vec<ConfigProblem>>;

/// A value check: checked params in, the problems `build` would report, without building (no
/// process started, no I/O).
pub type Check = fn(&Params) -> Vec<ConfigProblem>;

/// One registered provider.
pub struct Entry<T: ?Sized> {
    /// What it says about itself.
    pub info: ProviderInfo,
    /// How to build it.
    pub build: Build<T>,
    /// How `tally.toml`'s reader checks its parameters' values next to every other problem.
    /// `None` when `build` does nothing but check and construct (every built-in provider): the
    /// reader then builds it and keeps only the problems. A provider whose build has effects
    /// (`exec` asks its command to `describe` itself) gives a check without them.
    pub check: Option<Check>,
}

impl<T: ?Sized> Entry<T> {
    /// The problems of `params`' values, as building would report them, without effects.
    pub fn value_problems(&self, params: &Params) -> Vec<ConfigProblem> {
        match self.check {
            Some(check) => check(params),
            None => (self.build)(params).err().unwrap_or_default(),
        }
    }

    /// Whether the reader may build it: its build has no effect beyond checking.
    pub fn builds_without_effects(&self) -> bool {
        self.check.is_none()
    }
}

/// Every provider that can be chosen, per capability.
#[derive(Default)]
pub struct Registry {
    /// Verdict rules.
    pub verdict_rules: Vec<Entry<dyn VerdictRule>>,
    /// Stop rules.
    pub stop_rules: Vec<Entry<dyn StopRule>>,
    /// Fact sources.
    pub fact_sources: Vec<Entry<dyn FactSource>>,
    /// Sections.
    pub sections: Vec<Entry<dyn Section>>,
}

fn find<'a, T: ?Sized>(entries: &'a [Entry<T>], name: &str) -> Option<&'a Entry<T>> {
    entries.iter().find(|e| e.info.name == name)
}

impl Registry {
    /// A verdict rule by name.
    pub fn verdict_rule(&self, name: &str) -> Option<&Entry<dyn VerdictRule>> {
        find(&self.verdict_rules, name)
    }
    /// A stop rule by name.
    pub fn stop_rule(&self, name: &str) -> Option<&Entry<dyn StopRule>> {
        find(&self.stop_rules, name)
    }
    /// A fact source by name.
    pub fn fact_source(&self, name: &str) -> Option<&Entry<dyn FactSource>> {
        find(&self.fact_sources, name)
    }
    /// A section by name.
    pub fn section(&self, name: &str) -> Option<&Entry<dyn Section>> {
        find(&self.sections, name)
    }
    /// The infos of one capability's providers, in registration order.
    pub fn infos(&self, capability: Capability) -> Vec<&ProviderInfo> {
        match capability {
            Capability::VerdictRule => self.verdict_rules.iter().map(|e| &e.info).collect(),
            Capability::StopRule => self.stop_rules.iter().map(|e| &e.info).collect(),
            Capability::FactSource => self.fact_sources.iter().map(|e| &e.info).collect(),
            Capability::Section => self.sections.iter().map(|e| &e.info).collect(),
        }
    }
    /// The names of one capability's providers (for did-you-mean).
    pub fn names(&self, capability: Capability) -> Vec<&str> {
        self.infos(capability)
            .into_iter()
            .map(|i| i.name.as_str())
            .collect()
    }
    /// The problems of the values of provider `name`'s `params` (see [`Entry::value_problems`]);
    /// none for an unknown provider (the reader reports that itself).
    pub fn value_problems(
        &self,
        capability: Capability,
        name: &str,
        params: &Params,
    ) -> Vec<ConfigProblem> {
        match capability {
            Capability::VerdictRule => self.verdict_rule(name).map(|e| e.value_problems(params)),
            Capability::StopRule => self.stop_rule(name).map(|e| e.value_problems(params)),
            Capability::FactSource => self.fact_source(name).map(|e| e.value_problems(params)),
            Capability::Section => self.section(name).map(|e| e.value_problems(params)),
        }
        .unwrap_or_default()
    }
    /// The fact source that would supply `fact`, if any is registered.
    pub fn supplier_of(&self, fact: &str) -> Option<&ProviderInfo> {
        self.fact_sources
            .iter()
            .map(|e| &e.info)
            .find(|info| info.facts.iter().any(|f| f.name == fact))
    }
}
