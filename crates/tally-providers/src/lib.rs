//! `tally-providers`: every provider tally ships, registered in one place ([`builtins`]), and the
//! `exec` provider that runs an out-of-tree provider as a subprocess (`docs/campaign.md#external-providers`).
//!
//! | capability | providers |
//! |---|---|
//! | `verdict_rule` | `bootstrap` (default), `min_speedup`, `exec` |
//! | `stop_rule` | `limits` (default), `exec` |
//! | `fact_source` | `gpu_hours`, `agent_usage`, `exec` |
//! | `section` | `headline` (100), `goal` (110), `evaluations` (170), `latency` (175), `candidates` (180), `exec` |
//!
//! Each provider declares its parameters with [`ParamSpec`](tally_plugin::ParamSpec)s (the
//! config reader checks types, required keys and unknown keys) and checks their values in its
//! build function (ranges, non-empty lists), returning every
//! [`ConfigProblem`](tally_plugin::ConfigProblem) at its dotted key. Adding a provider means
//! adding one module and one line to [`builtins`]; no engine code changes.
//!
//! This crate deliberately does not read the store, the clock or `tally.toml`: providers see
//! only the views of `tally-plugin`, and the engine decides when to call them. Only `exec`
//! starts processes (through `tally-process`); everything else is pure. Verdict statistics are
//! `tally-stats`'s, wrapped, never re-implemented here.

mod agent_usage;
mod checks;
mod exec;
mod gpu_hours;
mod limits;
mod section;
mod verdict;

use tally_plugin::Registry;

pub use agent_usage::AgentUsage;
pub use gpu_hours::GpuHours;
pub use limits::Limits;

/// The registry of every built-in provider, plus `exec` for each capability.
pub fn builtins() -> Registry {
    let mut registry = Registry::default();
    registry.verdict_rules.push(verdict::bootstrap_entry());
    registry.verdict_rules.push(verdict::min_speedup_entry());
    registry.verdict_rules.push(exec::verdict_rule_entry());
    registry.stop_rules.push(limits::entry());
    registry.stop_rules.push(exec::stop_rule_entry());
    registry.fact_sources.push(gpu_hours::entry());
    registry.fact_sources.push(agent_usage::entry());
    registry.fact_sources.push(exec::fact_source_entry());
    registry.sections.extend(section::entries());
    registry.sections.push(exec::section_entry());
    registry
}

pub use tally_plugin::host_facts;
