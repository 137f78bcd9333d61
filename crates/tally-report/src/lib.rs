//! `tally-report`: the rendered sections of a surface, printed three ways — terminal text
//! ([`terminal`]: comfy-table tables that fit [`WIDTH`] columns, no colour), Markdown
//! ([`markdown`]: for implementer briefs; GitHub pipe tables, `- ` lists, figures as
//! `label: value unit`) and JSON ([`json`]: the `sections` array of `tally status --json`, where a
//! table block is `{"table": {"columns": [...], "rows": [[...]]}}`).
//!
//! A section that rendered nothing is left out; one that failed prints as one line,
//! `<provider>: failed: <error>`, so the rest of the report still shows. This crate is pure: it
//! does not choose, order or run sections (the engine does, by the surface's list), and it never
//! writes to stdout itself — callers print the strings.
//!
//! [`evidence`] renders the reports of `tally trace` from `tally-evidence`'s results: the
//! `account` text and its streamed `--json` object (whose long lists are rendered on the caller's
//! rayon pool, as the evidence core's own work is), the `shares` and `align` texts and objects,
//! and the JSON shapes and units they share.
//!
//! [`status`] renders `tally status` around its sections: the text's header lines and the
//! `--json` object, streamed into the caller's writer; [`brief`] renders `tally brief` around
//! the `run` surface's sections: the campaign's `brief.md` (read by the caller) and the campaign
//! context; [`candidate`] renders `tally candidate show` and [`plugins`] `tally plugins` (text
//! and `--json` each).

pub mod brief;
pub mod candidate;
pub mod evidence;
mod json;
mod markdown;
pub mod plugins;
pub mod status;
mod terminal;

use tally_plugin::ProviderError;

pub use json::json;
pub use markdown::markdown;
/// The input of the section renderers, as the engine produces it (defined in the contract).
pub use tally_plugin::SectionOutput;
pub use terminal::{WIDTH, terminal};

/// The one line a failed section prints: `<provider>: failed: <error>`, where the provider is
/// the one the error names (`exec ./my-section.py`), or the section's own name.
pub fn failed_line(section: &str, error: &ProviderError) -> String {
    let provider = if error.provider.is_empty() {
        section
    } else {
        error.provider.as_str()
    };
    format!("{provider}: failed: {}", error.message)
}
