//! The `agent_usage` fact source (`docs/implementers.md#agent-usage`): how many implementer runs
//! the campaign has had, the tokens they used and what they cost, and the projection of the next
//! launch's cost (the mean cost per run) that `hold_at` with `reserve` uses before a launch.
//!
//! It reads the ended runs of the view (`CampaignData::agent_runs`); a run that never started
//! (`not_started`) ran no agent and is left out. A run whose tokens or cost is unknown makes that
//! fact unknown — the source fails naming the run and the command that records its cost — and
//! is never read as zero.

use tally_plugin::{
    AgentRunView, CampaignData, Entry, FactInfo, FactSource, Facts, ProviderError, ProviderInfo,
};

use crate::checks::Checks;

const NAME: &str = "agent_usage";

/// `agent_usage` (it has no parameters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AgentUsage;

fn facts() -> Vec<FactInfo> {
    vec![
        FactInfo {
            name: "agent_runs".into(),
            unit: "runs".into(),
            doc: "implementer runs that ran an agent and ended".into(),
        },
        FactInfo {
            name: "agent_tokens".into(),
            unit: "tokens".into(),
            doc: "tokens those runs used (input, output and cached)".into(),
        },
        FactInfo {
            name: "agent_usd".into(),
            unit: "USD".into(),
            doc: "what those runs cost, in USD".into(),
        },
    ]
}

/// The registry entry of `agent_usage`.
pub(crate) fn entry() -> Entry<dyn FactSource> {
    Entry {
        check: None,
        info: ProviderInfo::builtin(
            NAME,
            "counts the implementer runs, their tokens and their cost",
            Vec::new(),
        )
        .with_facts(facts()),
        build: |params| {
            Checks::new(params).finish()?;
            Ok(Box::new(AgentUsage))
        },
    }
}

/// The runs that ran an agent.
fn ran(data: &CampaignData) -> impl Iterator<Item = &AgentRunView> {
    data.agent_runs.iter().filter(|r| r.end != "not_started")
}

fn unknown_cost(run: &AgentRunView) -> ProviderError {
    ProviderError::new(
        NAME,
        format!(
            "run#{0} reported no cost; record it with `tally implementer usage run#{0} --usd X`",
            run.run
        ),
    )
}

impl AgentUsage {
    /// Σ USD of the runs; the first run with an unknown cost fails it.
    pub fn usd(data: &CampaignData) -> Result<f64, ProviderError> {
        ran(data).try_fold(0.0, |sum, r| {
            r.usd.map(|x| sum + x).ok_or_else(|| unknown_cost(r))
        })
    }

    /// Σ tokens of the runs; the first run with unknown tokens fails it.
    pub fn tokens(data: &CampaignData) -> Result<f64, ProviderError> {
        ran(data).try_fold(0.0, |sum, r| {
            r.tokens.map(|n| sum + n as f64).ok_or_else(|| {
                ProviderError::new(NAME, format!("run#{} reported no tokens", r.run))
            })
        })
    }
}

impl FactSource for AgentUsage {
    fn gather(
        &self,
        data: &CampaignData,
        wanted: &[String],
        _now_s: f64,
    ) -> Result<Facts, ProviderError> {
        let mut facts = Facts::new();
        for fact in wanted {
            let value = match fact.as_str() {
                "agent_runs" => ran(data).count() as f64,
                "agent_tokens" => Self::tokens(data)?,
                "agent_usd" => Self::usd(data)?,
                _ => continue,
            };
            facts.insert(fact.clone(), value);
        }
        Ok(facts)
    }

    /// Before a launch: `agent_usd` grows by the mean cost of a run so far, `agent_runs` by 1;
    /// no projection before the first run.
    fn project(&self, data: &CampaignData, fact: &str) -> Result<Option<f64>, ProviderError> {
        let runs = ran(data).count();
        match fact {
            "agent_runs" => Ok(Some(1.0)),
            "agent_usd" if runs > 0 => Ok(Some(Self::usd(data)? / runs as f64)),
            "agent_tokens" if runs > 0 => Ok(Some(Self::tokens(data)? / runs as f64)),
            _ => Ok(None),
        }
    }
}
