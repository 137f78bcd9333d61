//! `tally campaign resume`: a held or stopped campaign becomes active again.

use super::context::Session;
use crate::cli::{CampaignCommand, CampaignOptions};
use crate::exit::Status;
use crate::printer;

/// Runs one `tally campaign` subcommand.
pub fn run(command: &CampaignCommand, options: &CampaignOptions) -> anyhow::Result<Status> {
    let CampaignCommand::Resume(_) = command;
    let session = Session::open(options)?;
    let engine = session.engine();
    let before = engine.campaign()?;
    let after = engine.resume()?;
    printer::out_line(&format!(
        "campaign `{}`: {} → {}",
        after.name, before.state, after.state
    ))?;
    Ok(Status::Success)
}
