//! Launching one implementer (`docs/implementers.md#runs`, `docs/implementers.md#gating`): the
//! first ready idea with attempts left and no run in progress, the stop rule asked with the
//! launch's projection, then the run's directory, brief, row and detached worktree at the base —
//! everything the agent's thread needs, prepared on the loop's thread so worktree adds and
//! removals never race.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use anyhow::Context;
use tally_config::ImplementerSettings;
use tally_model::{Campaign, CampaignState, UnixMillis};
use tally_process::CancelToken;
use tally_runner::CommitId;
use tally_store::{Idea, IdeaState, ImplementerStore, NewRun, Run};

use super::super::context::{Loaded, Workspace};
use super::{
    Briefed, agent, allowed, breaker, brief_text, needs_identity, requeue, run_dir, used, uuid,
};
use crate::printer;

/// What the launch gate answered.
pub enum Gate {
    /// No idea can be launched now (none ready, the campaign stopped or without a head).
    Nothing,
    /// The stop rule held or stopped the campaign before the launch.
    Refused(tally_engine::RunEnd),
    /// Launch on this idea.
    Go(Box<Idea>),
}

/// The idea to launch next, if the campaign, the ideas and the stop rule allow one: the first
/// `ready` idea with attempts left and no run in progress; the stop rule is asked only when
/// there is one.
pub fn gate(
    loaded: &Loaded,
    store: &dyn ImplementerStore,
    engine: &tally_engine::Engine<'_>,
    cancel: &CancelToken,
) -> anyhow::Result<Gate> {
    let Some(settings) = loaded.settings.implementer.as_ref() else {
        return Ok(Gate::Nothing);
    };
    let Some(campaign) = store.campaign_by_name(&loaded.settings.name)? else {
        return Ok(Gate::Nothing);
    };
    // A held campaign may launch again: the stop rule, asked below, says whether.
    if campaign.state == CampaignState::Stopped || campaign.head.is_none() || cancel.is_cancelled()
    {
        return Ok(Gate::Nothing);
    }
    let runs = store.list_runs(campaign.id)?;
    let in_progress = |idea: &Idea| {
        runs.iter()
            .any(|r| r.started.idea == idea.number && r.settled.is_none())
    };
    // Attempts left, or a requeue of an unfinished run due (docs/implementers.md#requeue).
    let Some(idea) = store.list_ideas(campaign.id)?.into_iter().find(|i| {
        i.state == IdeaState::Ready
            && (used(i, &runs) < allowed(i, Some(settings))
                || requeue::next(i.number, &runs, settings.requeue_unfinished).is_some())
            && !in_progress(i)
    }) else {
        return Ok(Gate::Nothing);
    };
    if let Some(reason) = breaker::tripped(&campaign, &runs, UnixMillis::now()) {
        store.set_campaign_state(
            campaign.id,
            CampaignState::Held,
            Some(&reason),
            UnixMillis::now(),
        )?;
        return Ok(Gate::Refused(tally_engine::RunEnd::Held(reason)));
    }
    // The stop rule before every launch, as before every evaluation (docs/implementers.md#gating).
    Ok(match engine.before_launch()? {
        Some(end) => Gate::Refused(end),
        None => Gate::Go(Box::new(idea)),
    })
}

/// A launched run: its row and what its agent's thread needs, owned.
#[derive(Clone)]
pub struct Prepared {
    /// The campaign at the launch.
    pub campaign: Campaign,
    /// The run's row.
    pub run: Run,
    /// The idea it works on.
    pub idea: Idea,
    /// The worktree could not be made: the run ends without an agent, with this error.
    pub failed: Option<String>,
    dir: PathBuf,
    text: String,
    tag: String,
    revision: String,
    deadline_s: i64,
    identity: bool,
    settings: ImplementerSettings,
    stop: agent::StopRequest,
}

/// Records the run and makes its directory, brief and worktree (`docs/implementers.md#runs`).
pub fn prepare(
    workspace: &Workspace,
    loaded: &Loaded,
    store: &dyn ImplementerStore,
    idea: Idea,
    campaign_brief: &str,
) -> anyhow::Result<Prepared> {
    let settings = loaded
        .settings
        .implementer
        .as_ref()
        .context("a launch needs an [implementer] table")?;
    let campaign = store
        .campaign_by_name(&loaded.settings.name)?
        .context("the campaign is not registered")?;
    let Briefed {
        text,
        base,
        revision,
        start,
    } = brief_text(loaded, store, &campaign, &idea, campaign_brief)?;
    let runs = store.list_runs(campaign.id)?;
    let number = runs.iter().map(|r| r.number).max().unwrap_or(0) + 1;
    let dir = run_dir(workspace, &campaign.name, number)?;
    if dir.exists() {
        // A directory of an earlier store's run of the same number: not ours to keep.
        let _ = workspace.git.worktree_remove_force(&dir.join("worktree"));
        std::fs::remove_dir_all(&dir)
            .with_context(|| format!("{}: cannot remove", dir.display()))?;
        let _ = workspace.git.worktree_prune();
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    let brief_file = dir.join("brief.md");
    std::fs::write(&brief_file, &text)?;
    std::fs::set_permissions(&brief_file, std::fs::Permissions::from_mode(0o444))?;
    let tag = uuid();
    let started = UnixMillis::now();
    let deadline = UnixMillis(started.0 + (settings.timeout_s * 1000.0) as i64);
    let run = store.start_run(
        campaign.id,
        &NewRun {
            idea: idea.number,
            base,
            tag: tag.clone(),
            run_dir: dir.display().to_string(),
            started,
            deadline,
        },
    )?;
    let commit = CommitId::parse(&start)
        .context("the worktree's start (the base candidate's revision or a run's last commit) is not a commit id")?;
    printer::note(&format!(
        "run#{} started: idea#{} {:?} at {base}",
        run.number, idea.number, idea.title
    ));
    let failed = workspace
        .git
        .worktree_add_detached(&dir.join("worktree"), &commit)
        .err()
        .map(|e| format!("cannot create the worktree: {e}"));
    Ok(Prepared {
        campaign,
        run,
        idea,
        failed,
        dir,
        text,
        tag,
        revision,
        deadline_s: deadline.0 / 1000,
        identity: needs_identity(workspace),
        settings: settings.clone(),
        stop: agent::StopRequest::default(),
    })
}

impl Prepared {
    /// Runs the agent to its end (in the calling thread; `tally run` gives each its own).
    pub fn run_agent(&self, cancel: &CancelToken) -> agent::Ended {
        agent::run(
            &agent::Launch {
                run: self.run.number,
                settings: &self.settings,
                run_dir: &self.dir,
                worktree: &self.dir.join("worktree"),
                brief_file: &self.dir.join("brief.md"),
                brief: &self.text,
                tag: &self.tag,
                session_id: &uuid(),
                base: &self.revision,
                deadline_s: self.deadline_s,
                identity: self.identity,
            },
            cancel,
            &self.stop,
        )
    }

    /// Asks the working agent to stop: the campaign stopped for `why`
    /// (`docs/implementers.md#stop-grace`).
    pub fn stop(&self, why: &str) {
        self.stop.stop(&self.dir, why, self.settings.stop_grace_s);
    }
}
