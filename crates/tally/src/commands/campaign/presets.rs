//! The implementer presets in `tally plugins` (`docs/implementers.md#presets`): each shipped
//! preset with its executable, argv, stdin, usage format, ignored globs and cleared variables,
//! `*` marking the one the campaign's `[implementer]` names; as text after the capabilities, and
//! as the `implementer_presets` list of the `--json` object.

use serde_json::{Value, json};
use tally_config::presets;

/// The text block, starting with a blank line.
pub fn text(selected: Option<&str>) -> String {
    let mut text = String::from("\nimplementer presets ([implementer] preset = \"NAME\")\n");
    for p in presets() {
        let mark = if selected == Some(p.name.as_str()) {
            "*"
        } else {
            " "
        };
        text.push_str(&format!("{mark} {}: {}\n", p.name, p.description));
        text.push_str(&format!("      argv: {}\n", p.command.join(" ")));
        text.push_str(&format!("      stdin {}, usage {}", p.stdin, p.usage));
        if !p.ignore.is_empty() {
            text.push_str(&format!(", ignores {}", p.ignore.join(" ")));
        }
        if !p.clear_env.is_empty() {
            text.push_str(&format!(", clears {}", p.clear_env.join(" ")));
        }
        text.push('\n');
    }
    text
}

/// The `implementer_presets` list: `[{"clear_env", "command", "description", "exe", "ignore",
/// "name", "selected", "stdin", "usage"}]` (`selected` is null when no campaign was read).
pub fn json(selected: Option<Option<&str>>) -> Value {
    Value::Array(
        presets()
            .into_iter()
            .map(|p| {
                let is = selected.map(|s| s == Some(p.name.as_str()));
                let mut v = serde_json::to_value(&p).expect("a preset serialises");
                v["selected"] = json!(is);
                v
            })
            .collect(),
    )
}
