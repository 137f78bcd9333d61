//! The `exec` provider (`docs/campaign.md#external-providers`): any capability implemented by an executable that
//! speaks the subprocess protocol of `docs/plugins.md` — one JSON request on stdin, one JSON
//! response on stdout, per call.
//!
//! Building an `exec` provider runs its `describe` once: the answer gives its name, doc and
//! parameters (the `params` table is checked against them, defaults filled in, problems at
//! `plugins.<capability>.params.<key>`), a fact source's facts (and which it `projects`), a stop
//! rule's wanted facts (`wants`), a section's surfaces and order. A provider that cannot be
//! described is a config problem at `command`. After that every call is a fresh process; any
//! failure — it would not start, exited non-zero, timed out, printed nonsense or the wrong
//! shape — is a [`ProviderError`] naming the provider as `exec <command>`, never a panic.

mod process;
mod wire;

use serde::Serialize;
use serde_json::{Map, Value, json};
use tally_plugin::problem::show_value;
use tally_plugin::{
    CampaignData, Capability, ConfigProblem, Entry, FactSource, Facts, Judgement, ParamKind,
    ParamSpec, Params, ProviderError, ProviderInfo, Rendered, Section, SectionInput, StopDecision,
    StopInput, StopRule, VerdictCase, VerdictRule, check_params,
};

use crate::checks::Checks;
use wire::{CampaignInput, GatherFields, ProjectFields, RenderFields, Request};

/// The longest `timeout_s` accepted (a day).
const MAX_TIMEOUT_S: f64 = 86_400.0;

fn info(capability: Capability) -> ProviderInfo {
    ProviderInfo::builtin(
        "exec",
        &format!(
            "a {} implemented by an external command speaking tally's JSON protocol (docs/plugins.md)",
            capability.as_str().replace('_', " ")
        ),
        vec![
            ParamSpec::required(
                "command",
                ParamKind::StringList,
                "the argv to run, e.g. [\"./my-provider.py\", \"--flag\"] (no shell)",
            ),
            ParamSpec::optional(
                "timeout_s",
                ParamKind::Number,
                json!(10),
                "seconds one call may take before the process is killed",
            ),
            ParamSpec::optional(
                "params",
                ParamKind::Table,
                json!({}),
                "the provider's own parameters, checked against its describe answer and passed through",
            ),
        ],
    )
}

/// The registry entry of `exec` as a verdict rule.
pub(crate) fn verdict_rule_entry() -> Entry<dyn VerdictRule> {
    Entry {
        info: info(Capability::VerdictRule),
        build: |params| Ok(Box::new(Exec::build(params, Capability::VerdictRule)?)),
        check: Some(|params| Checked::of(params).err().unwrap_or_default()),
    }
}

/// The registry entry of `exec` as a stop rule.
pub(crate) fn stop_rule_entry() -> Entry<dyn StopRule> {
    Entry {
        info: info(Capability::StopRule),
        build: |params| Ok(Box::new(Exec::build(params, Capability::StopRule)?)),
        check: Some(|params| Checked::of(params).err().unwrap_or_default()),
    }
}

/// The registry entry of `exec` as a fact source.
pub(crate) fn fact_source_entry() -> Entry<dyn FactSource> {
    Entry {
        info: info(Capability::FactSource),
        build: |params| Ok(Box::new(Exec::build(params, Capability::FactSource)?)),
        check: Some(|params| Checked::of(params).err().unwrap_or_default()),
    }
}

/// The registry entry of `exec` as a section.
pub(crate) fn section_entry() -> Entry<dyn Section> {
    Entry {
        info: info(Capability::Section),
        build: |params| Ok(Box::new(Exec::build(params, Capability::Section)?)),
        check: Some(|params| Checked::of(params).err().unwrap_or_default()),
    }
}

/// A built external provider: its command, and what its `describe` said.
#[derive(Debug)]
pub(crate) struct Exec {
    /// `exec <command joined by spaces>`: how errors name it.
    label: String,
    command: Vec<String>,
    timeout_s: f64,
    capability: Capability,
    /// The `params` table, checked, defaults filled in.
    params: Value,
    info: ProviderInfo,
    wants: Vec<String>,
    projects: Vec<String>,
}

/// The parameters of `exec`, checked (no process started).
struct Checked {
    command: Vec<String>,
    timeout_s: f64,
    given: Map<String, Value>,
}

impl Checked {
    fn of(params: &Params) -> Result<Self, Vec<ConfigProblem>> {
        let mut checks = Checks::new(params);
        let command = params.strings("command").unwrap_or_default();
        if command.first().is_none_or(|program| program.is_empty()) {
            checks.problem(
                "command",
                "expected a non-empty argv, e.g. [\"./my-provider.py\"]",
            );
        }
        let timeout_s = checks
            .number(
                "timeout_s",
                |t| t > 0.0 && t <= MAX_TIMEOUT_S,
                "a number of seconds > 0 and at most 86400",
            )
            .unwrap_or(10.0);
        let given = params.table("params").cloned().unwrap_or_default();
        checks.finish()?;
        Ok(Self {
            command,
            timeout_s,
            given,
        })
    }
}

impl Exec {
    /// Checks the parameters and asks the command to `describe` itself.
    fn build(params: &Params, capability: Capability) -> Result<Self, Vec<ConfigProblem>> {
        let Checked {
            command,
            timeout_s,
            given,
        } = Checked::of(params)?;
        let mut exec = Self {
            label: format!("exec {}", command.join(" ")),
            command,
            timeout_s,
            capability,
            params: Value::Object(given.clone()),
            info: ProviderInfo::builtin("exec", "", vec![]),
            wants: vec![],
            projects: vec![],
        };
        let described = exec
            .call("describe", json!({}))
            .and_then(|result| wire::description(result).map_err(|m| exec.error(m)))
            .map_err(|e| {
                vec![ConfigProblem::new(
                    params.key("command"),
                    params.get("command").map(show_value),
                    format!(
                        "{e}; check that the command runs and answers `describe` for a {} (docs/plugins.md)",
                        capability.as_str()
                    ),
                )]
            })?;
        let mut problems = Vec::new();
        let checked = check_params(
            &described.params,
            &given,
            &params.key("params"),
            &[],
            &mut problems,
        );
        if capability == Capability::FactSource && described.facts.is_empty() {
            problems.push(ConfigProblem::missing(
                params.key("command"),
                format!(
                    "{}: its describe answer lists no facts; a fact source lists the facts it supplies",
                    exec.label
                ),
            ));
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        exec.params = Value::Object(checked.values().clone().into_iter().collect::<Map<_, _>>());
        exec.wants = described.wants;
        exec.projects = described.projects;
        exec.info = ProviderInfo {
            name: described.name,
            doc: described.doc,
            params: described.params,
            facts: described.facts,
            surfaces: described.surfaces,
            order: described.order,
            builtin: false,
        };
        Ok(exec)
    }

    fn error(&self, message: impl Into<String>) -> ProviderError {
        ProviderError::new(self.label.clone(), message)
    }

    /// One call: the request out, the `ok` result back.
    fn call<I: Serialize>(&self, method: &str, input: I) -> Result<Value, ProviderError> {
        let request = Request {
            protocol: wire::PROTOCOL,
            capability: self.capability,
            method,
            params: &self.params,
            input,
        };
        let bytes = serde_json::to_vec(&request)
            .map_err(|e| self.error(format!("could not encode the `{method}` request: {e}")))?;
        let output =
            process::run(&self.command, bytes, self.timeout_s).map_err(|m| self.error(m))?;
        wire::response(&output.stdout)
            .map_err(|m| self.error(format!("{m}{}", process::stderr_tail(&output.stderr))))
    }

    fn campaign_input<'a, X: Serialize>(data: &'a CampaignData, extra: X) -> CampaignInput<'a, X> {
        CampaignInput {
            campaign: &data.campaign,
            candidates: &data.candidates,
            measurements: &data.measurements,
            extra,
        }
    }
}

impl VerdictRule for Exec {
    fn decide(&self, case: &VerdictCase) -> Result<Judgement, ProviderError> {
        wire::judgement(self.call("decide", case)?).map_err(|m| self.error(m))
    }

    fn described(&self) -> Option<&ProviderInfo> {
        Some(&self.info)
    }
}

impl StopRule for Exec {
    fn wanted_facts(&self) -> Vec<String> {
        self.wants.clone()
    }

    fn check(&self, input: &StopInput) -> Result<StopDecision, ProviderError> {
        wire::decision(self.call("check", wire::CheckInput::new(input))?).map_err(|m| self.error(m))
    }

    fn described(&self) -> Option<&ProviderInfo> {
        Some(&self.info)
    }
}

impl FactSource for Exec {
    fn gather(
        &self,
        data: &CampaignData,
        wanted: &[String],
        now_s: f64,
    ) -> Result<Facts, ProviderError> {
        let fields = GatherFields { wanted, now: now_s };
        let result = self.call("gather", Self::campaign_input(data, fields))?;
        wire::facts(result, wanted).map_err(|m| self.error(m))
    }

    fn project(&self, data: &CampaignData, fact: &str) -> Result<Option<f64>, ProviderError> {
        if !self.projects.iter().any(|p| p == fact) {
            return Ok(None);
        }
        let result = self.call(
            "project",
            Self::campaign_input(data, ProjectFields { fact }),
        )?;
        wire::projection(result).map_err(|m| self.error(m))
    }

    fn described(&self) -> Option<&ProviderInfo> {
        Some(&self.info)
    }
}

impl Section for Exec {
    fn render(&self, input: &SectionInput<'_>) -> Result<Option<Rendered>, ProviderError> {
        let fields = RenderFields {
            facts: input.facts,
            surface: input.surface,
        };
        let result = self.call("render", Self::campaign_input(input.data, fields))?;
        wire::rendered(result).map_err(|m| self.error(m))
    }

    fn described(&self) -> Option<&ProviderInfo> {
        Some(&self.info)
    }
}
