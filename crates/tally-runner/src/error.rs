//! The crate's one error type, [`RunnerError`].
//!
//! It covers what stops the runner itself from working: a git command that failed, a file that
//! could not be read or written, a run lock held by another process, a bad `link` path. It does
//! deliberately *not* cover a failed sample: a benchmark that times out, exits non-zero or prints
//! a bad units file is a normal result, reported as an [`Attempt`](crate::Attempt) with a
//! [`Failure`](crate::Failure), never as an `Err`.

use std::path::PathBuf;

use crate::lock::LockHolder;

/// Everything that can go wrong in the runner outside a sample's own result.
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    /// The `git` executable could not be started at all.
    #[error("could not run `{command}`: {source}; is git installed and on PATH?")]
    GitNotFound {
        /// The command line that was attempted.
        command: String,
        /// Why the spawn failed.
        source: std::io::Error,
    },
    /// A git command ran and failed.
    #[error("`{command}` failed ({status}): {stderr}")]
    Git {
        /// The command line, e.g. `git worktree add --detach /x abc…`.
        command: String,
        /// The exit status, as git's status line (`exit status: 128`).
        status: String,
        /// What git wrote on stderr, trimmed.
        stderr: String,
    },
    /// A revision that git could not resolve to a commit.
    #[error("`{rev}` is not a commit in {repo}: {why}")]
    NotACommit {
        /// The revision as the user wrote it.
        rev: String,
        /// The repository it was looked up in.
        repo: PathBuf,
        /// Git's explanation, or ours.
        why: String,
    },
    /// A file-system operation failed; the message names the path (`fs-err`).
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A `link` entry that cannot be offered to checkouts.
    #[error("link `{path}`: {why}")]
    BadLink {
        /// The entry as configured (repo-relative).
        path: String,
        /// What is wrong and how to fix it.
        why: String,
    },
    /// The worktree root would sit inside the user's working tree.
    #[error(
        "worktree root {root} is inside the repository {repo}; choose a directory outside it \
         (the default is under $XDG_CACHE_HOME/tally/worktrees)"
    )]
    WorktreeRootInsideRepo {
        /// The rejected root.
        root: PathBuf,
        /// The repository's top level.
        repo: PathBuf,
    },
    /// No cache directory could be found for the default worktree root.
    #[error(
        "neither $XDG_CACHE_HOME nor $HOME is set, so there is no default worktree root; \
         set one of them or pass a worktree root explicitly"
    )]
    NoCacheDir,
    /// Another process holds the campaign's run lock.
    #[error("another tally run ({holder}) is working on campaign {campaign}")]
    LockHeld {
        /// The campaign whose lock is held.
        campaign: String,
        /// Who holds it, as far as the lock file says.
        holder: LockHolder,
    },
    /// A system call failed unexpectedly.
    #[error("`{call}` failed: {errno}")]
    System {
        /// The call, e.g. `prctl(PR_SET_CHILD_SUBREAPER)`.
        call: &'static str,
        /// The error number.
        errno: nix::errno::Errno,
    },
}
