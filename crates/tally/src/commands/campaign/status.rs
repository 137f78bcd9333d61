//! `tally status [--json]`: the status sections as terminal tables, or one JSON object with the
//! campaign, head, facts, every candidate with its measurements, and the sections
//! (`docs/campaign.md#commands`), with the `runs` section of implementer runs when there are any
//! (`docs/implementers.md#history`) and their `anomalies` (`docs/implementers.md#anomalies`).

use tally_plugin::Surface;
use tally_report::status::{self, StatusView};

use super::context::Session;
use crate::cli::{CampaignOptions, StatusArgs};
use crate::exit::Status;
use crate::printer;

/// Runs the command.
pub fn run(args: &StatusArgs, options: &CampaignOptions) -> anyhow::Result<Status> {
    let session = Session::open_read_only(options)?;
    // Which configuration is in force: the working tree's, and `tally run` refuses while its
    // evaluation differs from the committed one.
    if let Some(what) = session.workspace.uncommitted_evaluation(&session.loaded)? {
        printer::note(&format!(
            "note: {what}: `tally run` refuses until it is committed (the other keys of tally.toml \
             are read from the working tree)"
        ));
    }
    let engine = session.engine();
    let mut report = engine.status(Surface::Status)?;
    if let Some(ideas) = session.store.with_ideas() {
        let campaign = engine.campaign()?;
        let summaries = super::implement::history::summaries(ideas, &campaign)?;
        report
            .sections
            .extend(super::implement::history::runs_section(&summaries));
        report.sections.extend(super::implement::anomalies::section(
            &ideas.list_runs(campaign.id)?,
        ));
    }
    let printed = print(args, &report);
    // The process ends after this command: freeing 100,000 measurements one allocation at a
    // time would add ~30 ms to a 10,000-candidate status for nothing.
    std::mem::forget(report);
    printed
}

fn print(args: &StatusArgs, report: &tally_engine::StatusReport) -> anyhow::Result<Status> {
    let view = StatusView {
        data: &report.data,
        facts: &report.facts,
        fact_errors: &report.fact_errors,
        sections: &report.sections,
    };
    if args.json {
        printer::out_streamed(|out| status::write_json(out, &view))?;
    } else {
        printer::out(&status::text(&view))?;
    }
    Ok(Status::Success)
}
