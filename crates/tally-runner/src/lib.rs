//! `tally-runner`: evaluates one revision, really — a fresh git worktree, the evaluate command in
//! its own process group with a timeout and cancellation, `METRIC` lines and the units file
//! parsed, the evidence file kept and accounted, the outcome classified into one sentence, the
//! checkout removed. Plus the run lock that keeps one `tally run` per campaign.
//!
//! Entry points: [`WorktreeRunner`] (real, on this machine), [`SlurmRunner`] (real, one Slurm
//! batch job per attempt) and [`ScriptedRunner`] (fake, for tests), the implementations of `tally-contract`'s [`SampleRunner`] (re-exported here with
//! [`SampleRequest`], [`Attempt`], [`CancelToken`] and the rest of the sample's contract);
//! [`prune_leftovers`] and [`RunLock`] at the start of `tally run`; [`become_child_subreaper`]
//! once in the binary's `main`. The contract for evaluate scripts is
//! `docs/evaluate-protocol.md`.
//!
//! Architecture invariant: this is an adapter — it knows git, processes and files, and nothing
//! of the store, verdicts, configuration files (the engine hands it plain values) or the
//! evidence format (it keeps the artifact and asks the [`EvidenceAccountant`] it was given). The API is synchronous: blocking
//! calls, helper threads inside, no async runtime. Linux only: processes are driven by
//! `tally-process`.

mod checks;
mod error;
mod evidence;
pub mod git;
pub mod handover;
pub mod lock;
pub mod metric;
pub mod outcome;
pub mod report;
mod sample;
mod scripted;
pub mod slurm;
pub mod units;
pub mod worktree;

pub use error::RunnerError;
pub use git::Git;
pub use lock::{LockHolder, RunLock, run_lock_path};
pub use sample::{WorktreeRunner, become_child_subreaper};
pub use scripted::{ScriptedAttempt, ScriptedRunner};
pub use slurm::{Settled, SlurmOptions, SlurmRunner};
pub use tally_contract::{
    Attempt, CancelToken, CheckCommand, CheckOutcome, CheckRequest, CommitId, EvaluateCommand,
    Evidence, EvidenceAccountant, EvidenceFile, Failure, LogFiles, Outcome, SampleRequest,
    SampleRunner,
};
pub use tally_model::Side;
pub use units::Units;
pub use worktree::{
    Checkout, Pruned, default_worktree_root, prune_leftovers, prune_leftovers_keeping,
    validate_links, worktree_root_in,
};
