//! The built-in sections (`docs/campaign.md#sections`, `docs/campaign.md#latency`): `headline` (100), `goal` (110),
//! `evaluations` (170), `latency` (175) and `candidates` (180), each declaring its surfaces,
//! order and parameters, and rendering a title and blocks from the campaign view and facts.
//!
//! Sections return structure only; how a table looks in a terminal, in Markdown or in JSON is
//! `tally-report`'s business. A section with nothing to say returns `None` and is left out.

mod candidates;
mod cells;
mod evaluations;
mod goal;
mod headline;
mod latency;

use tally_plugin::{Entry, Section};

/// Every built-in section, in order.
pub(crate) fn entries() -> Vec<Entry<dyn Section>> {
    vec![
        headline::entry(),
        goal::entry(),
        evaluations::entry(),
        latency::entry(),
        candidates::entry(),
    ]
}
