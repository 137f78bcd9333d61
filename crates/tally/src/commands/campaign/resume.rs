//! `tally campaign resume`: a held or stopped campaign becomes active again.

use super::context::{NoRunner, Workspace, engine};
use super::progress::Progress;
use crate::cli::{CampaignCommand, CampaignOptions};
use crate::exit::Status;
use crate::printer;

/// Runs one `tally campaign` subcommand.
pub fn run(command: &CampaignCommand, options: &CampaignOptions) -> anyhow::Result<Status> {
    let CampaignCommand::Resume(_) = command;
    let workspace = Workspace::discover(options)?;
    let loaded = workspace.load()?;
    let store = workspace.open_store()?;
    let progress = Progress::new();
    let engine = engine(&workspace, &store, &NoRunner, &loaded, &progress);
    let before = engine.campaign()?;
    let after = engine.resume()?;
    printer::out_line(&format!(
        "campaign `{}`: {} → {}",
        after.name, before.state, after.state
    ))?;
    Ok(Status::Success)
}
