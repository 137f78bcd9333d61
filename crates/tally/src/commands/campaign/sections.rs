//! The engine's section outputs in the shape the report renderers take.

use tally_engine::StatusReport;
use tally_report::SectionOutput;

/// The sections of a report, ready for `tally_report::{terminal, markdown, json}`.
pub fn outputs(report: &StatusReport) -> Vec<SectionOutput> {
    report
        .sections
        .iter()
        .map(|s| SectionOutput::new(s.provider.clone(), s.order, s.result.clone()))
        .collect()
}
