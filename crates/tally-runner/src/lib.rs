//! `tally-runner`: evaluates one revision, really — a fresh git worktree, the evaluate command in
//! its own process group with a timeout and cancellation, `METRIC` lines and the units file
//! parsed, the evidence file kept and accounted, the outcome classified into one sentence, the
//! checkout removed. Plus the run lock that keeps one `tally run` per campaign.
//!
//! Entry points: [`SampleRunner`] (the trait the engine takes) with [`WorktreeRunner`] (real) and
//! [`ScriptedRunner`] (fake, for tests); [`SampleRequest`] in, [`Attempt`]s out; [`CancelToken`]
//! for Ctrl-C; [`prune_leftovers`] and [`RunLock`] at the start of `tally run`;
//! [`become_child_subreaper`] once in the binary's `main`. The contract for evaluate scripts is
//! `docs/evaluate-protocol.md`.
//!
//! Architecture invariant: this is an adapter — it knows git, processes and files (and reads
//! evidence artifacts through `tally-evidence`), and nothing of the store, verdicts or
//! configuration files (the engine hands it plain values). The API is synchronous: blocking
//! calls, helper threads inside, no async runtime. Linux only (process groups are swept through
//! `/proc`).

mod cancel;
mod error;
pub mod evidence;
pub mod git;
mod group;
pub mod lock;
pub mod metric;
pub mod outcome;
mod proc_scan;
mod sample;
mod scripted;
pub mod units;
pub mod worktree;

pub use cancel::CancelToken;
pub use error::RunnerError;
pub use evidence::Evidence;
pub use git::{CommitId, Git};
pub use group::become_child_subreaper;
pub use lock::{LockHolder, RunLock, run_lock_path};
pub use outcome::{Failure, Outcome};
pub use sample::{
    Attempt, EvaluateCommand, EvidenceFile, LogFiles, SampleRequest, SampleRunner, Side,
    WorktreeRunner,
};
pub use scripted::{ScriptedAttempt, ScriptedRunner};
pub use units::Units;
pub use worktree::{Checkout, Pruned, default_worktree_root, prune_leftovers, validate_links};
