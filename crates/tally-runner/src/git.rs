//! A small typed wrapper around the `git` executable.
//!
//! Owns: running `git` with the repository-redirecting environment variables cleared (so tally
//! behaves the same when launched from a git hook, as uv's git wrapper does), and the handful of
//! commands the runner needs — the repository root, resolving a revision to a full commit id,
//! adding/removing/pruning worktrees, asking whether given paths have uncommitted changes, and
//! which paths are git-ignored. Errors name the git command line and carry its stderr.
//!
//! Deliberately absent: libgit2/gitoxide (git's own executable honours the user's config, hooks
//! and filters such as git-lfs exactly), and any policy — *where* worktrees go and when they are
//! removed is [`crate::worktree`]'s business.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub use tally_contract::CommitId;

use crate::RunnerError;

/// Environment variables that redirect git to another repository; cleared on every invocation.
const REDIRECTING_VARS: [&str; 6] = [
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
];

/// One git repository, addressed by its top-level directory.
#[derive(Clone, Debug)]
pub struct Git {
    root: PathBuf,
}

impl Git {
    /// Finds the repository containing `dir` (`git rev-parse --show-toplevel`).
    pub fn discover(dir: &Path) -> Result<Self, RunnerError> {
        let out = run(dir, &["rev-parse", "--show-toplevel"], &[0], None)?;
        let top = String::from_utf8_lossy(&out.stdout)
            .trim_end_matches('\n')
            .to_owned();
        Ok(Self {
            root: PathBuf::from(top),
        })
    }

    /// Uses `root` as the repository's top level without asking git (for callers that already
    /// know it).
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The repository's top-level directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `git init -q -b BRANCH` in `dir` (which exists): a new repository there.
    pub fn init(dir: &Path, branch: &str) -> Result<Self, RunnerError> {
        run(dir, &["init", "-q", "-b", branch], &[0], None)?;
        Ok(Self::at(dir))
    }

    /// `git ARGS` in the repository, for commands this type has no method for (the demo writes
    /// its commits with it); its standard output, trimmed.
    pub fn command(&self, args: &[&str]) -> Result<String, RunnerError> {
        let out = run(&self.root, args, &[0], None)?;
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }

    /// The tree of each commit, in order (`git cat-file --batch-check`; one git process for all).
    pub fn trees_of(&self, commits: &[&str]) -> Result<Vec<String>, RunnerError> {
        if commits.is_empty() {
            return Ok(Vec::new());
        }
        let mut input = String::new();
        for commit in commits {
            input.push_str(commit);
            input.push_str("^{tree}\n");
        }
        let out = run(
            &self.root,
            &["cat-file", "--batch-check=%(objectname)"],
            &[0],
            Some(input.as_bytes()),
        )?;
        Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_owned)
            .collect())
    }

    /// `git config KEY`, or `None` when it is unset, empty or git cannot be run.
    pub fn config_value(&self, key: &str) -> Option<String> {
        // Exit 1 means "not set".
        let out = run(&self.root, &["config", key], &[0, 1], None).ok()?;
        let value = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        (!value.is_empty()).then_some(value)
    }

    /// Resolves `rev` to the full id of the commit it names
    /// (`git rev-parse --verify --end-of-options REV^{commit}`).
    pub fn resolve_commit(&self, rev: &str) -> Result<CommitId, RunnerError> {
        let not_a_commit = |why: String| RunnerError::NotACommit {
            rev: rev.to_owned(),
            repo: self.root.clone(),
            why,
        };
        if rev.is_empty() {
            return Err(not_a_commit("the revision is empty".into()));
        }
        // The object first, then peeled to its commit: appending `^{commit}` to the revision
        // itself would become part of a `:/message` search's pattern.
        let parse = |spec: &str| {
            let args = ["rev-parse", "--verify", "--end-of-options", spec];
            match run(&self.root, &args, &[0], None) {
                Ok(out) => Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_owned()),
                Err(RunnerError::Git { stderr, .. }) => Err(not_a_commit(stderr)),
                Err(other) => Err(other),
            }
        };
        let object = parse(rev)?;
        let out = parse(&format!("{object}^{{commit}}"))?;
        CommitId::parse(&out)
            .ok_or_else(|| not_a_commit(format!("git printed `{out}`, not a commit id")))
    }

    /// `git worktree add --detach DIR COMMIT`: a new worktree at `dir` (which must not exist or
    /// be empty) with `commit` checked out and no branch.
    pub fn worktree_add_detached(&self, dir: &Path, commit: &CommitId) -> Result<(), RunnerError> {
        let args = [
            OsStr::new("worktree"),
            OsStr::new("add"),
            OsStr::new("--detach"),
            dir.as_os_str(),
            OsStr::new(commit.as_str()),
        ];
        run(&self.root, &args, &[0], None).map(drop)
    }

    /// `git worktree remove --force DIR`: deletes the worktree's files (including untracked and
    /// ignored ones) and its administrative entry.
    pub fn worktree_remove_force(&self, dir: &Path) -> Result<(), RunnerError> {
        let args = [
            OsStr::new("worktree"),
            OsStr::new("remove"),
            OsStr::new("--force"),
            dir.as_os_str(),
        ];
        run(&self.root, &args, &[0], None).map(drop)
    }

    /// `git worktree prune`: forgets worktrees whose directories are gone.
    pub fn worktree_prune(&self) -> Result<(), RunnerError> {
        run(&self.root, &["worktree", "prune"], &[0], None).map(drop)
    }

    /// Which of `paths` (repo-relative) have uncommitted changes, untracked ones included
    /// (`git status --porcelain -z -- PATHS`). Empty means all of them are committed as they are.
    /// Sorted and deduplicated.
    pub fn uncommitted(&self, paths: &[&Path]) -> Result<Vec<String>, RunnerError> {
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        let mut args: Vec<&OsStr> = ["status", "--porcelain", "-z", "--"]
            .into_iter()
            .map(OsStr::new)
            .collect();
        args.extend(paths.iter().map(|p| p.as_os_str()));
        let out = run(&self.root, &args, &[0], None)?;
        let mut dirty = Vec::new();
        let mut records = out.stdout.split(|&b| b == 0).filter(|r| !r.is_empty());
        while let Some(record) = records.next() {
            if record.len() < 4 {
                continue;
            }
            dirty.push(String::from_utf8_lossy(&record[3..]).into_owned());
            // A rename or copy is followed by a record holding the original path.
            if matches!(record[0], b'R' | b'C') {
                records.next();
            }
        }
        dirty.sort();
        dirty.dedup();
        Ok(dirty)
    }

    /// Which of `paths` (repo-relative) git ignores (`git check-ignore -z --stdin`). A tracked
    /// file is never reported as ignored. Sorted.
    pub fn ignored(&self, paths: &[&Path]) -> Result<Vec<String>, RunnerError> {
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        let mut input = Vec::new();
        for path in paths {
            input.extend_from_slice(path.as_os_str().as_encoded_bytes());
            input.push(0);
        }
        // Exit 1 means "none of them is ignored".
        let out = run(
            &self.root,
            &["check-ignore", "-z", "--stdin"],
            &[0, 1],
            Some(&input),
        )?;
        let mut ignored: Vec<String> = out
            .stdout
            .split(|&b| b == 0)
            .filter(|r| !r.is_empty())
            .map(|r| String::from_utf8_lossy(r).into_owned())
            .collect();
        ignored.sort();
        Ok(ignored)
    }
}

/// Runs `git ARGS` in `dir` with the redirecting variables cleared; `ok` lists the exit codes that
/// count as success.
fn run<S: AsRef<OsStr>>(
    dir: &Path,
    args: &[S],
    ok: &[i32],
    stdin: Option<&[u8]>,
) -> Result<Output, RunnerError> {
    let mut command = Command::new("git");
    command.current_dir(dir).args(args);
    for var in REDIRECTING_VARS {
        command.env_remove(var);
    }
    command.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let display = display_command(args);
    let spawned = command.spawn().map_err(|source| RunnerError::GitNotFound {
        command: display.clone(),
        source,
    });
    let mut child = spawned?;
    if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // Inputs are a few paths, far below a pipe's capacity, so writing before reading
        // cannot deadlock.
        pipe.write_all(input)?;
    }
    let out = child.wait_with_output()?;
    match out.status.code() {
        Some(code) if ok.contains(&code) => Ok(out),
        _ => Err(RunnerError::Git {
            command: display,
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        }),
    }
}

fn display_command<S: AsRef<OsStr>>(args: &[S]) -> String {
    let mut words: Vec<OsString> = vec!["git".into()];
    words.extend(args.iter().map(|a| a.as_ref().to_owned()));
    words
        .iter()
        .map(|w| w.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_ids_are_full_lowercase_hex() {
        let sha1 = "0123456789abcdef0123456789abcdef01234567";
        assert_eq!(CommitId::parse(sha1).unwrap().as_str(), sha1);
        assert!(CommitId::parse(&"a".repeat(64)).is_some());
        assert!(CommitId::parse(&sha1[..39]).is_none());
        assert!(CommitId::parse(&sha1.to_uppercase()).is_none());
        assert!(CommitId::parse("HEAD").is_none());
    }

    #[test]
    fn command_lines_are_shown_as_typed() {
        assert_eq!(
            display_command(&["worktree", "prune"]),
            "git worktree prune"
        );
    }
}
