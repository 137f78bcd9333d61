//! The resolved `[checks]` table (`docs/campaign.md#checks`): the correctness commands every
//! candidate must pass in its checkout before any timed sample, and their time limit.

/// One check: a name for messages and the argv it runs (no shell).
#[derive(Clone, Debug, PartialEq)]
pub struct CheckSpec {
    /// The entry's `name`, else its argv joined with spaces.
    pub name: String,
    /// The argv, run in the candidate's checkout.
    pub argv: Vec<String>,
}

/// `[checks]`; absent from `tally.toml`: no checks.
#[derive(Clone, Debug, PartialEq)]
pub struct ChecksSettings {
    /// The commands, in file order; the first failure ends the candidate.
    pub commands: Vec<CheckSpec>,
    /// Seconds each command may take before its process group is killed.
    pub timeout_s: f64,
}

impl ChecksSettings {
    /// What identifies these checks in the store: canonical JSON of the names and argvs (not the
    /// timeout). A candidate that passed checks of the same key is not checked again.
    pub fn key(&self) -> String {
        let commands: Vec<serde_json::Value> = self
            .commands
            .iter()
            .map(|c| serde_json::json!([c.name, c.argv]))
            .collect();
        serde_json::Value::Array(commands).to_string()
    }
}
