//! The resolved `[implementer]` table (`docs/implementers.md#config`): which coding agent runs,
//! with which argv and limits, what it may not change and what it costs.

use std::collections::BTreeMap;

/// The placeholders an implementer argv may use (`docs/implementers.md#placeholders`).
pub const PLACEHOLDERS: &[&str] = &[
    "prompt",
    "brief_file",
    "model",
    "worktree",
    "run",
    "session_id",
    "deadline",
    "log_dir",
];

/// The `{name}` placeholders in one argv element (a name is letters, digits and `_`; other
/// braces, such as JSON, are literal text).
pub fn placeholders(arg: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = arg;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close)
                if close > 0
                    && after[..close]
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_') =>
            {
                found.push(&after[..close]);
                rest = &after[close + 1..];
            }
            _ => rest = after,
        }
    }
    found
}

/// What the agent's standard input is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StdinMode {
    /// `/dev/null`.
    Null,
    /// The brief, piped and then closed.
    Brief,
}

/// Whether anything else may run while an implementer works.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overlap {
    /// Nothing else (no evaluation, no other implementer) runs while an implementer works.
    Serial,
    /// Evaluations and other implementers run meanwhile (evaluations still one at a time).
    Parallel,
}

/// USD per million tokens for one model.
#[derive(Clone, Debug, PartialEq)]
pub struct Prices {
    /// Input tokens.
    pub input: f64,
    /// Cached input tokens (defaults to `input`).
    pub cached_input: f64,
    /// Output tokens.
    pub output: f64,
}

/// `[implementer]`, checked, defaults and the preset filled in.
#[derive(Clone, Debug, PartialEq)]
pub struct ImplementerSettings {
    /// The preset named, if any.
    pub preset: Option<String>,
    /// The executable whose `--version` describes the harness (the argv's first element).
    pub exe: String,
    /// The argv with its placeholders (the preset's unless `command` replaced it).
    pub command: Vec<String>,
    /// Fills `{model}`.
    pub model: Option<String>,
    /// What standard input is.
    pub stdin: StdinMode,
    /// Seconds a run may take.
    pub timeout_s: f64,
    /// Seconds before the timeout when the wrap-up file appears.
    pub wrap_up_s: f64,
    /// Seconds a working agent has, once the campaign stops, between its wrap-up file and the
    /// SIGTERM (`docs/implementers.md#stop-grace`).
    pub stop_grace_s: f64,
    /// Implementers at once.
    pub max_concurrent: u32,
    /// Whether evaluations and other implementers run meanwhile.
    pub overlap: Overlap,
    /// Commits measured per run.
    pub max_measured: u32,
    /// Default attempts per idea.
    pub attempts: u32,
    /// Extra runs of an idea whose run ended unfinished with commits, each started from that
    /// run's last commit (`docs/implementers.md#requeue`).
    pub requeue_unfinished: u32,
    /// Globs a commit may not change (configured ones and the defaults, see
    /// [`ImplementerSettings::protect`]).
    pub protect: Vec<String>,
    /// Globs never captured as unsaved work (configured ones and the preset's).
    pub ignore: Vec<String>,
    /// Variables added to the agent's environment.
    pub env: BTreeMap<String, String>,
    /// Inherited variables removed from the agent's environment (`*` ends a prefix).
    pub clear_env: Vec<String>,
    /// The usage format: claude, codex, gemini, aider, pi, file or none.
    pub usage: String,
    /// USD per million tokens, by model.
    pub prices: BTreeMap<String, Prices>,
}

#[cfg(test)]
mod tests {
    use super::placeholders;

    #[test]
    fn placeholders_are_braced_names_and_other_braces_are_text() {
        assert_eq!(placeholders("--brief={brief_file}"), vec!["brief_file"]);
        assert_eq!(
            placeholders("{run}-{session_id}"),
            vec!["run", "session_id"]
        );
        assert!(placeholders(r#"{"autoMemory": false}"#).is_empty());
        assert!(placeholders("{} and {").is_empty());
        assert_eq!(placeholders("{{model}}"), vec!["model"]);
    }
}
