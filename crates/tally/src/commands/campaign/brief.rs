//! `tally brief [--idea N]`: the implementer brief as Markdown — `brief.md`, the campaign context
//! (head and its scores, the bar, the metrics and their directions, the budget left), where the
//! head's GPU time went, the sections of the `run` surface (so `latency` appears there) and the
//! `runs` section of earlier implementer runs; with `--idea N`, exactly what a launch on that
//! idea writes: tally's rules, that, and the idea (`docs/implementers.md#brief`).

use tally_engine::Engine;
use tally_plugin::Surface;
use tally_report::brief::{self, BriefView};
use tally_store::ImplementerStore;

use super::context::{Loaded, Session, Workspace};
use super::idea::{find_idea, idea_store};
use super::implement;
use crate::cli::{BriefArgs, CampaignOptions};
use crate::exit::Status;
use crate::printer;

/// What `tally brief` prints: `brief.md`, the context and the `run`-surface sections.
pub fn campaign_brief(
    workspace: &Workspace,
    loaded: &Loaded,
    engine: &Engine<'_>,
    ideas: Option<&dyn ImplementerStore>,
) -> anyhow::Result<String> {
    let mut report = engine.status(Surface::Run)?;
    report.sections.insert(
        0,
        super::gpu_time::head_gpu_section(workspace.root(), &report.data),
    );
    if let Some(ideas) = ideas {
        let summaries = implement::history::summaries(ideas, &engine.campaign()?)?;
        report
            .sections
            .extend(implement::history::runs_section(&summaries));
    }
    let brief_md = std::fs::read_to_string(workspace.root().join("brief.md")).ok();
    Ok(brief::markdown(&BriefView {
        brief_md: brief_md.as_deref(),
        name: &loaded.settings.name,
        data: &report.data,
        facts: &report.facts,
        sections: &report.sections,
    }))
}

/// Runs the command.
pub fn run(args: &BriefArgs, options: &CampaignOptions) -> anyhow::Result<Status> {
    let session = Session::open_read_only(options)?;
    let engine = session.engine();
    let text = campaign_brief(
        &session.workspace,
        &session.loaded,
        &engine,
        session.store.with_ideas(),
    )?;
    match &args.idea {
        None => printer::out(&text)?,
        Some(id) => {
            let campaign = engine.campaign()?;
            let idea = find_idea(idea_store(&session)?, &campaign, id)?;
            let implement::Briefed { text: brief, .. } = implement::brief_text(
                &session.loaded,
                idea_store(&session)?,
                &campaign,
                &idea,
                &text,
            )?;
            printer::out(&brief)?;
        }
    }
    Ok(Status::Success)
}
