//! `tally brief`: the implementer brief as Markdown — `brief.md`, the campaign context (head and
//! its scores, the bar, the metrics and their directions, the budget left) and the sections of
//! the `run` surface (so `latency` appears there).

use tally_plugin::Surface;
use tally_report::brief::{self, BriefView};

use super::context::Session;
use crate::cli::{BriefArgs, CampaignOptions};
use crate::exit::Status;
use crate::printer;

/// Runs the command.
pub fn run(_args: &BriefArgs, options: &CampaignOptions) -> anyhow::Result<Status> {
    let session = Session::open_read_only(options)?;
    let engine = session.engine();
    let workspace = &session.workspace;
    let loaded = &session.loaded;
    let report = engine.status(Surface::Run)?;
    let brief_md = std::fs::read_to_string(workspace.root().join("brief.md")).ok();
    printer::out(&brief::markdown(&BriefView {
        brief_md: brief_md.as_deref(),
        name: &loaded.settings.name,
        data: &report.data,
        facts: &report.facts,
        sections: &report.sections,
    }))?;
    Ok(Status::Success)
}
