//! An agent's commit onto a head that moved while it worked (`docs/implementers.md#head-moved`):
//! `git merge-tree --write-tree` merges it onto the head without a checkout (git ≥ 2.38); a clean
//! result becomes a merge commit whose parents are the head and the agent's commit, a conflict
//! names its paths.

use std::path::Path;

use anyhow::bail;

use super::collect::{git, git_ok};

/// What merging a commit onto the head gave.
pub enum Onto {
    /// A merge commit (parents: the head, then the commit).
    Merged(String),
    /// The paths that conflict.
    Conflict(Vec<String>),
}

/// Whether `head` is an ancestor of (or equal to) `commit`.
pub fn contains(repo: &Path, commit: &str, head: &str) -> anyhow::Result<bool> {
    let out = git(
        repo,
        &["merge-base", "--is-ancestor", head, commit],
        None,
        None,
    )?;
    match out.status.code() {
        Some(0) => Ok(true),
        Some(1) => Ok(false),
        _ => bail!(
            "git merge-base --is-ancestor {head} {commit}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
    }
}

/// Merges `commit` onto `head` in `repo`; `identity` is the run whose tally identity the merge
/// commit gets when git has none configured.
pub fn onto_head(
    repo: &Path,
    head: &str,
    commit: &str,
    message: &str,
    identity: Option<u32>,
) -> anyhow::Result<Onto> {
    let out = git(
        repo,
        &[
            "merge-tree",
            "--write-tree",
            "--name-only",
            "--no-messages",
            head,
            commit,
        ],
        None,
        None,
    )?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut lines = stdout.lines();
    let tree = lines.next().unwrap_or_default().trim().to_string();
    match out.status.code() {
        Some(0) if !tree.is_empty() => {
            let merged = git_ok(
                repo,
                &["commit-tree", &tree, "-p", head, "-p", commit, "-F", "-"],
                Some(message.as_bytes()),
                identity,
            )?;
            Ok(Onto::Merged(merged))
        }
        Some(1) => {
            let mut paths: Vec<String> = lines
                .take_while(|l| !l.is_empty())
                .map(str::to_string)
                .collect();
            paths.dedup();
            Ok(Onto::Conflict(paths))
        }
        _ => bail!(
            "git merge-tree --write-tree {head} {commit} (git 2.38 or later is needed): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
    }
}
