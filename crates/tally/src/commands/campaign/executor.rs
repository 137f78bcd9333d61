//! The runner `[executor]` picks (`docs/team.md#executor`): [`CampaignRunner`] is the local
//! worktree runner or the Slurm runner, built from the settings, behind the one
//! [`SampleRunner`] the engine takes.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use tally_config::{ExecutorSettings, Settings, SlurmSettings};
use tally_runner::{
    Attempt, CancelToken, CheckOutcome, CheckRequest, Git, SampleRequest, SampleRunner,
    SlurmOptions, SlurmRunner, WorktreeRunner, default_worktree_root, worktree_root_in,
};

/// The runner of a campaign.
#[derive(Debug)]
pub enum CampaignRunner {
    /// `kind = "local"`: process groups on this machine.
    Local(WorktreeRunner),
    /// `kind = "slurm"`: one batch job per attempt.
    Slurm(SlurmRunner),
}

impl CampaignRunner {
    /// Builds the runner `settings.executor` names for the repository `git`, for the worker of
    /// evaluation slot `slot`: slot 0 checks out under the campaign's worktree root, slot N under
    /// `worker-N/` inside it, so that a worker that starts prunes only what a killed predecessor
    /// on its own slot left (`docs/team.md#workers`).
    pub fn build(git: &Git, settings: &Settings, slot: u32) -> anyhow::Result<Self> {
        let accountant = Arc::new(crate::evidence::Accountant);
        match &settings.executor {
            ExecutorSettings::Local => {
                let root = slot_root(default_worktree_root(git.root(), &settings.name)?, slot);
                Ok(Self::Local(WorktreeRunner::new(
                    git.clone(),
                    &root,
                    accountant,
                )?))
            }
            ExecutorSettings::Slurm(slurm) => {
                check_sbatch()?;
                let root = match &slurm.workdir {
                    Some(dir) => worktree_root_in(Path::new(dir), git.root(), &settings.name),
                    None => default_worktree_root(git.root(), &settings.name)?,
                };
                let root = slot_root(root, slot);
                let runner = SlurmRunner::new(git.clone(), &root, accountant, options(slurm))
                    .with_context(|| {
                        format!("[executor] workdir: cannot use {}", root.display())
                    })?;
                Ok(Self::Slurm(runner))
            }
        }
    }

    /// Where its checkouts go.
    pub fn worktree_root(&self) -> &Path {
        match self {
            Self::Local(runner) => runner.worktree_root(),
            Self::Slurm(runner) => runner.worktree_root(),
        }
    }
}

impl SampleRunner for CampaignRunner {
    fn run_checks(&self, request: &CheckRequest, cancel: &CancelToken) -> CheckOutcome {
        match self {
            Self::Local(runner) => runner.run_checks(request, cancel),
            Self::Slurm(runner) => runner.run_checks(request, cancel),
        }
    }

    fn run_attempt(&self, request: &SampleRequest, attempt: u32, cancel: &CancelToken) -> Attempt {
        match self {
            Self::Local(runner) => runner.run_attempt(request, attempt, cancel),
            Self::Slurm(runner) => runner.run_attempt(request, attempt, cancel),
        }
    }

    fn adopts_attempts(&self) -> bool {
        match self {
            Self::Local(runner) => runner.adopts_attempts(),
            Self::Slurm(runner) => runner.adopts_attempts(),
        }
    }
}

/// The checkouts' root of evaluation slot `slot` under a campaign's `root`.
fn slot_root(root: PathBuf, slot: u32) -> PathBuf {
    if slot == 0 {
        root
    } else {
        root.join(format!("worker-{slot}"))
    }
}

fn options(slurm: &SlurmSettings) -> SlurmOptions {
    SlurmOptions {
        partition: slurm.partition.clone(),
        gres: slurm.gres.clone(),
        time_limit: slurm.time_limit.clone(),
        cpus: slurm.cpus,
        mem: slurm.mem.clone(),
        extra_args: slurm.extra_args.clone(),
    }
}

/// Refuses a Slurm executor on a machine without `sbatch`, before any sample is made.
fn check_sbatch() -> anyhow::Result<()> {
    match std::process::Command::new("sbatch")
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .output()
    {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => anyhow::bail!(
            "tally.toml: [executor] kind = \"slurm\", but `sbatch --version` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
        Err(err) => anyhow::bail!(
            "tally.toml: [executor] kind = \"slurm\", but `sbatch` could not be run ({err}); \
             run tally on a machine with Slurm's clients, or set kind = \"local\""
        ),
    }
}
