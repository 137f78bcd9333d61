//! The runner `[executor]` picks (`docs/team.md#executor`): [`CampaignRunner`] is the local
//! worktree runner or the Slurm runner, built from the settings, behind the one
//! [`SampleRunner`] the engine takes.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use tally_config::{ExecutorSettings, Settings, SlurmSettings};
use tally_runner::{
    Attempt, CancelToken, Git, SampleRequest, SampleRunner, SlurmOptions, SlurmRunner,
    WorktreeRunner, default_worktree_root, worktree_root_in,
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
    /// Builds the runner `settings.executor` names for the repository `git`.
    pub fn build(git: &Git, settings: &Settings) -> anyhow::Result<Self> {
        let accountant = Arc::new(crate::evidence::Accountant);
        match &settings.executor {
            ExecutorSettings::Local => {
                let root = default_worktree_root(git.root(), &settings.name)?;
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
    fn run_attempt(&self, request: &SampleRequest, attempt: u32, cancel: &CancelToken) -> Attempt {
        match self {
            Self::Local(runner) => runner.run_attempt(request, attempt, cancel),
            Self::Slurm(runner) => runner.run_attempt(request, attempt, cancel),
        }
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
