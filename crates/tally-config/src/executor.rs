//! Where samples run (`[executor]`, `docs/team.md#executor`): on this machine (the default), or
//! as Slurm batch jobs with the options each job is submitted with.

/// `[executor]`, resolved.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum ExecutorSettings {
    /// Each sample runs on this machine in its own process group (`kind = "local"`, or no table).
    #[default]
    Local,
    /// Each sample is a Slurm batch job (`kind = "slurm"`).
    Slurm(SlurmSettings),
}

/// The options of `kind = "slurm"`; each `None` leaves the choice to Slurm's defaults.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct SlurmSettings {
    /// `--partition`.
    pub partition: Option<String>,
    /// `--gres` (`gpu:1`).
    pub gres: Option<String>,
    /// `--time`, in one of Slurm's forms (`30`, `10:00`, `1:00:00`, `1-00:00:00`).
    pub time_limit: Option<String>,
    /// `--cpus-per-task`.
    pub cpus: Option<u32>,
    /// `--mem` (`16G`, `4000M`).
    pub mem: Option<String>,
    /// More `sbatch` arguments, as written (`["--account=perf", "--qos=high"]`).
    pub extra_args: Vec<String>,
    /// A directory every node sees (checkouts, job scripts and job output go there); `None`:
    /// the local cache directory tally uses for worktrees.
    pub workdir: Option<String>,
}
