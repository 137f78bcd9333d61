//! The implementer presets shipped in the binary (`docs/implementers.md#presets`): one TOML file
//! per coding-agent CLI under `presets/`, compiled in, giving the argv (with placeholders), how
//! the brief reaches the agent, which usage format its output has, which files it leaves in the
//! worktree and which inherited variables must be cleared for it.

use serde::{Deserialize, Serialize};

/// One preset, as `presets/<name>.toml` writes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Preset {
    /// The preset's name (the file's stem; filled in when loaded).
    #[serde(default)]
    pub name: String,
    /// One line for `tally plugins`.
    pub description: String,
    /// The executable looked up on `PATH`.
    pub exe: String,
    /// The argv, with placeholders.
    pub command: Vec<String>,
    /// `null` or `brief` (pipe the brief, then close).
    pub stdin: String,
    /// Which usage format the agent's output has.
    pub usage: String,
    /// Globs never captured as unsaved work.
    pub ignore: Vec<String>,
    /// Inherited variables removed from the agent's environment (`*` ends a prefix).
    pub clear_env: Vec<String>,
}

const SOURCES: &[(&str, &str)] = &[
    ("claude", include_str!("../presets/claude.toml")),
    ("codex", include_str!("../presets/codex.toml")),
    ("gemini", include_str!("../presets/gemini.toml")),
    ("aider", include_str!("../presets/aider.toml")),
    ("pi", include_str!("../presets/pi.toml")),
];

/// The preset names, in the order `tally plugins` lists them.
pub const PRESET_NAMES: &[&str] = &["claude", "codex", "gemini", "aider", "pi"];

/// Every shipped preset, in [`PRESET_NAMES`] order.
pub fn presets() -> Vec<Preset> {
    SOURCES
        .iter()
        .map(|(name, text)| {
            let mut preset: Preset = toml::from_str(text)
                .unwrap_or_else(|e| panic!("shipped preset {name} does not parse: {e}"));
            preset.name = (*name).to_string();
            preset
        })
        .collect()
}

/// The preset called `name`.
pub fn preset(name: &str) -> Option<Preset> {
    presets().into_iter().find(|p| p.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::implementer::{PLACEHOLDERS, placeholders};

    #[test]
    fn every_shipped_preset_parses_and_uses_only_known_placeholders() {
        let all = presets();
        assert_eq!(
            all.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
            PRESET_NAMES
        );
        for p in &all {
            assert_eq!(p.command[0], p.exe, "{}", p.name);
            assert!(["null", "brief"].contains(&p.stdin.as_str()), "{}", p.name);
            assert_eq!(p.usage, p.name, "each preset reads its own usage format");
            for arg in &p.command {
                for name in placeholders(arg) {
                    assert!(PLACEHOLDERS.contains(&name), "{}: {{{name}}}", p.name);
                }
            }
        }
    }
}
