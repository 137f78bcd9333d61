//! Capability `fact_source`: named numbers about a campaign (`docs/campaign.md#facts`), gathered only when
//! some rule or section wants them.

use serde::{Deserialize, Serialize};

use crate::error::ProviderError;
use crate::problem::ConfigProblem;
use crate::registry::{ProviderInfo, Registry};
use crate::view::{CampaignData, Facts};

/// A fact a source declares.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FactInfo {
    /// Its name (`gpu_usd`).
    pub name: String,
    /// Its unit (`h`, `USD`, `runs`).
    pub unit: String,
    /// One line.
    pub doc: String,
}

/// A fact source.
pub trait FactSource: Send + Sync {
    /// Gathers the wanted facts (a subset of what the source declares) at time `now_s` (seconds
    /// since the Unix epoch).
    fn gather(
        &self,
        data: &CampaignData,
        wanted: &[String],
        now_s: f64,
    ) -> Result<Facts, ProviderError>;

    /// How much `fact` is expected to grow with the next evaluation, if the source can say
    /// (`hold_at` with `reserve = true` uses it). `None`: no projection.
    fn project(&self, data: &CampaignData, fact: &str) -> Result<Option<f64>, ProviderError> {
        let _ = (data, fact);
        Ok(None)
    }

    /// What this built provider says about itself beyond its registry entry: an external
    /// provider's own name, doc, parameters and the facts it supplies (with units), learnt from
    /// its `describe` answer. `None` (the default) for built-ins, whose
    /// [`Entry::info`](crate::Entry) says it all.
    fn described(&self) -> Option<&ProviderInfo> {
        None
    }
}

/// The host's sum of the two money facts, supplied while both parts are
/// (`docs/campaign.md#facts`).
pub const TOTAL_USD: &str = "total_usd";

/// What `total_usd` adds up: `gpu_hours`'s and `agent_usage`'s USD.
pub const TOTAL_USD_PARTS: [&str; 2] = ["gpu_usd", "agent_usd"];

/// The facts the host (the campaign engine) always supplies (`docs/campaign.md#facts`): name, unit and
/// one line, in the order `tally plugins` lists them.
pub const HOST_FACTS: &[(&str, &str, &str)] = &[
    ("runs", "runs", "judged candidates, the baseline excluded"),
    ("keeps", "runs", "candidates kept, the baseline excluded"),
    (
        "without_keep",
        "runs",
        "judged candidates since the last keep (or the baseline)",
    ),
    ("hours", "h", "hours since the first evaluation started"),
    (
        "head",
        "",
        "the primary metric's mean at the head (absent before the baseline is measured)",
    ),
    (
        "evaluations",
        "evaluations",
        "evaluations that took measurements",
    ),
];

/// [`HOST_FACTS`] as [`FactInfo`]s.
pub fn host_facts() -> Vec<FactInfo> {
    HOST_FACTS
        .iter()
        .map(|(name, unit, doc)| FactInfo {
            name: (*name).into(),
            unit: (*unit).into(),
            doc: (*doc).into(),
        })
        .collect()
}

/// The problems of a stop rule at `stop_key` that reads facts (`wanted`) no one supplies: not the
/// host ([`HOST_FACTS`]) and none of the active sources' facts (`supplied`). Each says which
/// installed source would supply it, or that none does.
pub fn unsupplied_facts(
    stop_key: &str,
    wanted: &[String],
    supplied: &[&FactInfo],
    registry: &Registry,
) -> Vec<ConfigProblem> {
    let mut problems = Vec::new();
    for fact in wanted {
        if HOST_FACTS.iter().any(|(name, _, _)| name == fact)
            || supplied.iter().any(|f| &f.name == fact)
        {
            continue;
        }
        if fact == TOTAL_USD {
            let missing: Vec<&str> = TOTAL_USD_PARTS
                .iter()
                .filter(|part| !supplied.iter().any(|f| f.name == **part))
                .map(|part| {
                    if *part == "gpu_usd" {
                        "gpu_hours"
                    } else {
                        "agent_usage"
                    }
                })
                .collect();
            if !missing.is_empty() {
                problems.push(ConfigProblem::missing(
                    format!("{stop_key}.hold_at.{fact}"),
                    format!(
                        "`total_usd` is the host's gpu_usd + agent_usd; add a [[plugins.fact_source]] table with provider = {}",
                        missing.iter().map(|m| format!("\"{m}\"")).collect::<Vec<_>>().join(" and one with provider = ")
                    ),
                ));
            }
            continue;
        }
        let hint = match registry.supplier_of(fact) {
            Some(info) => format!(
                "add a [[plugins.fact_source]] table with provider = \"{}\"",
                info.name
            ),
            None => format!(
                "no installed fact source supplies it; the host supplies {}",
                HOST_FACTS
                    .iter()
                    .map(|(n, _, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        problems.push(ConfigProblem::missing(
            format!("{stop_key}.hold_at.{fact}"),
            format!("no active fact source supplies `{fact}`; {hint}"),
        ));
    }
    problems
}
