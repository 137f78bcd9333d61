//! `tally-process`: the one place tally drives processes — spawn a command in a process group of
//! its own (or in the caller's), feed its stdin, drain its stdout and stderr concurrently into
//! log files, callbacks or memory, wait with a deadline and a [`CancelToken`], kill the group,
//! reap it, and sweep what survived, escapees carrying the run's marker included.
//!
//! Entry points: [`run_in_group`] (the evaluate command's whole policy: the runner's attempts);
//! [`Spawned`], the handle it is built from, for callers with another policy (the exec provider
//! runs a provider in the caller's group and gives up on its stdout at the deadline);
//! [`run_in_group_with_grace`] for an implementer (SIGTERM at the deadline, SIGKILL after a
//! grace), and [`run_in_group_stoppable`] when a [`Stop`] may bring that deadline forward; [`find_marked`], [`signal_marked`] and [`kill_marked`] for what a killed run left
//! behind; [`become_child_subreaper`] once at
//! start-up.
//!
//! Architecture invariant: synchronous std + nix with helper threads, no async runtime; Linux
//! process semantics (`waitid(WNOWAIT)`, `/proc`, `PR_SET_CHILD_SUBREAPER`). It knows nothing of
//! git, samples, metrics or the protocols spoken over the pipes, and it never prints.

mod group;
mod proc_scan;
mod spawn;

pub use group::{
    End, GroupRun, Stop, become_child_subreaper, find_marked, kill_marked, run_in_group,
    run_in_group_stoppable, run_in_group_with_grace, signal_marked,
};
pub use spawn::{
    Command, Drain, Feed, Group, Keep, LOG_LIMIT_BYTES, Sink, SpawnError, Spawned, Waited,
};
pub use tally_contract::CancelToken;
