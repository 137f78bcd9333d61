//! Collecting a run's work from its worktree once every process of it is gone
//! (`docs/implementers.md#runs`): unsaved changes outside `ignore` become one `Tally-Recovered`
//! commit; HEAD must still contain the base; the first-parent commits `base..HEAD` (from a
//! continued run's last commit instead of the base, `docs/implementers.md#requeue`), oldest
//! first, are pinned under `refs/tally/<campaign>/runs/<run>/<i>` so that removing the worktree
//! loses none of them.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use anyhow::{Context, bail};

use super::glob;

/// What the worktree held.
pub struct Collected {
    /// First-parent commits after the base, oldest first.
    pub commits: Vec<String>,
    /// The recovered commit (the last of `commits`), when there was unsaved work.
    pub recovered: Option<String>,
    /// HEAD no longer contains the base.
    pub left_base: bool,
}

pub(super) fn git(
    dir: &Path,
    args: &[&str],
    stdin: Option<&[u8]>,
    identity: Option<u32>,
) -> anyhow::Result<Output> {
    let mut command = Command::new("git");
    command
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE");
    if let Some(run) = identity {
        let email = format!("run-{run}@tally.invalid");
        command
            .env("GIT_AUTHOR_NAME", "tally implementer")
            .env("GIT_COMMITTER_NAME", "tally implementer")
            .env("GIT_AUTHOR_EMAIL", &email)
            .env("GIT_COMMITTER_EMAIL", &email);
    }
    let mut child = command.spawn().context("cannot run git")?;
    if let Some(bytes) = stdin
        && let Some(mut pipe) = child.stdin.take()
    {
        pipe.write_all(bytes)?;
    }
    Ok(child.wait_with_output()?)
}

pub(super) fn git_ok(
    dir: &Path,
    args: &[&str],
    stdin: Option<&[u8]>,
    identity: Option<u32>,
) -> anyhow::Result<String> {
    let out = git(dir, args, stdin, identity)?;
    if !out.status.success() {
        bail!(
            "git {} in {}: {}",
            args.join(" "),
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The paths `git status` reports as changed or untracked, outside the `ignore` globs.
fn unsaved(worktree: &Path, ignore: &[String]) -> anyhow::Result<Vec<String>> {
    let args = [
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=all",
        "--no-renames",
    ];
    let out = git(worktree, &args, None, None)?;
    if !out.status.success() {
        bail!(
            "git status in {}: {}",
            worktree.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    // Entries are `XY path`, each ended by NUL (no quoting with -z).
    Ok(out
        .stdout
        .split(|b| *b == 0)
        .filter_map(|entry| entry.get(3..))
        .filter(|path| !path.is_empty())
        .map(|path| String::from_utf8_lossy(path).into_owned())
        .filter(|path| !ignore.iter().any(|g| glob::matches(g, path)))
        .collect())
}

/// Collects the work of run `run` from `worktree`, pinning its commits in `repo`: the
/// first-parent commits after `from` (a continued run's last commit) when HEAD contains it,
/// else after `base`.
#[allow(clippy::too_many_arguments)]
pub fn collect(
    repo: &Path,
    worktree: &Path,
    base: &str,
    from: Option<&str>,
    run: u32,
    pin_prefix: &str,
    ignore: &[String],
    identity: bool,
) -> anyhow::Result<Collected> {
    let dirty = unsaved(worktree, ignore)?;
    let mut recovered = None;
    if !dirty.is_empty() {
        let mut list = dirty.join("\0").into_bytes();
        list.push(0);
        git_ok(
            worktree,
            &["add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul"],
            Some(&list),
            None,
        )?;
        let message = format!("tally: unsaved work of run#{run}\n\nTally-Recovered: run#{run}\n");
        git_ok(
            worktree,
            &["commit", "-q", "--no-verify", "-F", "-"],
            Some(message.as_bytes()),
            identity.then_some(run),
        )?;
        recovered = Some(git_ok(worktree, &["rev-parse", "HEAD"], None, None)?);
    }
    let contains_base = git(
        worktree,
        &["merge-base", "--is-ancestor", base, "HEAD"],
        None,
        None,
    )?
    .status
    .success();
    if !contains_base {
        return Ok(Collected {
            commits: Vec::new(),
            recovered: None,
            left_base: true,
        });
    }
    let from = match from {
        Some(from)
            if git(
                worktree,
                &["merge-base", "--is-ancestor", from, "HEAD"],
                None,
                None,
            )?
            .status
            .success() =>
        {
            from
        }
        _ => base,
    };
    let range = format!("{from}..HEAD");
    let listed = git_ok(
        worktree,
        &["rev-list", "--first-parent", "--reverse", &range],
        None,
        None,
    )?;
    let commits: Vec<String> = listed.lines().map(str::to_string).collect();
    for (i, commit) in commits.iter().enumerate() {
        let name = format!("{pin_prefix}/{}", i + 1);
        git_ok(repo, &["update-ref", &name, commit], None, None)?;
    }
    Ok(Collected {
        commits,
        recovered,
        left_base: false,
    })
}

/// The first line of a commit's message.
pub fn subject(repo: &Path, commit: &str) -> String {
    git_ok(repo, &["log", "-1", "--format=%s", commit], None, None).unwrap_or_default()
}
