//! The top-level keys of `tally.toml` (`docs/campaign.md#tally-toml`): `name`, `evaluate`,
//! `evaluate_timeout`, `link` and `evaluation_slots`, each checked on its own.

use serde_json::{Map, Value};
use tally_plugin::ConfigProblem;

use super::values::{bad, is_repo_relative};

/// `name`: a non-empty string.
pub(super) fn name(root: &Map<String, Value>, p: &mut Vec<ConfigProblem>) -> String {
    match root.get("name") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
        Some(v) => {
            p.push(bad(
                "name",
                v,
                "expected a non-empty string naming the campaign",
            ));
            String::new()
        }
        None => {
            p.push(ConfigProblem::missing(
                "name",
                "missing: add `name = \"my-campaign\"`",
            ));
            String::new()
        }
    }
}

/// `evaluate`: the argv of the benchmark.
pub(super) fn evaluate(root: &Map<String, Value>, p: &mut Vec<ConfigProblem>) -> Vec<String> {
    match root.get("evaluate") {
        Some(Value::Array(items))
            if !items.is_empty()
                && items.iter().all(Value::is_string)
                && !items[0].as_str().unwrap_or("").is_empty() =>
        {
            items
                .iter()
                .map(|v| v.as_str().unwrap_or_default().to_string())
                .collect()
        }
        Some(v) => {
            p.push(bad(
                "evaluate",
                v,
                "expected a non-empty list of strings (an argv, e.g. [\"./evaluate.sh\"]; \
                 use [\"sh\", \"-c\", \"...\"] for a shell)",
            ));
            Vec::new()
        }
        None => {
            p.push(ConfigProblem::missing(
                "evaluate",
                "missing: add `evaluate = [\"./evaluate.sh\"]`, the command that prints METRIC lines",
            ));
            Vec::new()
        }
    }
}

/// `evaluate_timeout`: seconds per sample (default 600).
pub(super) fn evaluate_timeout(root: &Map<String, Value>, p: &mut Vec<ConfigProblem>) -> f64 {
    match root.get("evaluate_timeout") {
        None => 600.0,
        Some(v) => match v.as_f64() {
            Some(s) if s > 0.0 && s.is_finite() => s,
            _ => {
                p.push(bad(
                    "evaluate_timeout",
                    v,
                    "expected a positive number of seconds per sample",
                ));
                600.0
            }
        },
    }
}

/// `link`: repo-relative paths made available in every checkout.
pub(super) fn link(root: &Map<String, Value>, p: &mut Vec<ConfigProblem>) -> Vec<String> {
    match root.get("link") {
        None => Vec::new(),
        Some(Value::Array(items)) => {
            let mut out = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let key = format!("link[{i}]");
                match item.as_str() {
                    Some(s) if is_repo_relative(s) => out.push(s.trim_end_matches('/').to_string()),
                    _ => p.push(bad(
                        &key,
                        item,
                        "expected a repo-relative path inside the repository (no leading `/`, no `..`)",
                    )),
                }
            }
            out
        }
        Some(v) => {
            p.push(bad("link", v, "expected a list of repo-relative paths"));
            Vec::new()
        }
    }
}

/// `evaluation_slots`: how many evaluations of the campaign may run at once, 1 to
/// 64. More than 1 needs a PostgreSQL store or the Slurm executor, which `tally run` checks
/// (`docs/campaign.md#tally-toml`, `docs/team.md#workers`, `docs/team.md#slurm-slots`).
pub(super) fn evaluation_slots(root: &Map<String, Value>, p: &mut Vec<ConfigProblem>) -> u32 {
    match root.get("evaluation_slots") {
        None => 1,
        Some(v) => match v.as_u64() {
            Some(n @ 1..=64) => n as u32,
            _ => {
                p.push(bad(
                    "evaluation_slots",
                    v,
                    "expected a whole number from 1 to 64: how many `tally run` workers may \
                     evaluate at once (more than 1 needs a PostgreSQL store or the Slurm \
                     executor); set 1",
                ));
                1
            }
        },
    }
}
