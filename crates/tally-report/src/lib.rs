//! `tally-report`: every surface tally prints — terminal text, Markdown and JSON — rendered from
//! typed values the caller hands over; commands only wire (parse, call the libraries, hand the
//! results here, print what comes back).
//!
//! - Sections of a surface ([`SectionOutput`], as the engine ran them), three ways: terminal text
//!   ([`terminal`]: comfy-table tables that fit [`WIDTH`] columns, no colour), Markdown
//!   ([`markdown`]: GitHub pipe tables, `- ` lists, figures as `label: value unit`) and JSON
//!   ([`json`]: the `sections` array of `tally status --json`, where a table block is
//!   `{"table": {"columns": [...], "rows": [[...]]}}`). A section that rendered nothing is left
//!   out; one that failed prints as one line, `<provider>: failed: <error>`, so the rest of the
//!   report still shows.
//! - The campaign commands' reports around them: [`status`] (`tally status`: header lines, and the
//!   `--json` object streamed into the caller's writer), [`brief`] (`tally brief`: the campaign's
//!   `brief.md`, read by the caller, and the campaign context), [`candidate`] (`tally candidate
//!   show`) and [`plugins`] (`tally plugins`), text and `--json` each.
//! - The evidence reports of `tally trace` ([`evidence`]), from `tally-evidence`'s results: the
//!   `account` text and its streamed `--json` object, the `shares` and `align` texts and objects,
//!   and the JSON shapes and units they share.
//!
//! JSON is written by serde, from structs whose fields are declared in the key order the output
//! promises (alphabetical for the campaign commands and `shares`/`align`, the contract's order
//! for `trace account`), except where a module says why not (the candidates of `status --json`
//! are streamed with fixed keys for speed; `plugins` keeps provider infos as `serde_json::Value`s).
//! The bytes are what the commands have always printed.
//!
//! What this crate does not do: no I/O — it returns `String`s or writes into the `io::Write` the
//! caller gives, and never writes to stdout or stderr itself; it never reads the clock, a file or
//! the environment; it does not choose, run or order sections (the engine does, by the surface's
//! list), and it reorders no list it is given — the `account` text's two orders (the busiest
//! iterations, ties by iteration ref; unmeasured activities grouped by reason) are documented in
//! [`evidence::account_text`]. It starts no threads of its own: the `account` JSON renders its
//! long lists on the caller's rayon pool, as the evidence core's own work does.

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
