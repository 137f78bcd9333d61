//! The worktree lifecycle: one fresh checkout per attempt, under a campaign-owned root outside
//! the user's working tree, removed afterwards whatever happened.
//!
//! Layout. The root (by default `$XDG_CACHE_HOME/tally/worktrees/<repo-hash>/<campaign>`, else
//! `~/.cache/...`; see [`default_worktree_root`]) holds one directory per attempt,
//! `sample-<side>-<index>-a<attempt>-<pid>-<seq>/`, containing `checkout/` (a detached
//! `git worktree`) and, next to it, the paths given to the command as `TALLY_UNITS_FILE`
//! (`units.json`) and `TALLY_EVIDENCE_FILE` (`evidence.jsonl`), outside the checkout, not
//! created by tally. A [`Checkout`] removes its
//! directory when dropped (the checkout and its `.git/worktrees/<id>` entry, deleted directly
//! when they point at each other, else through `git worktree remove --force` and
//! `git worktree prune`), so an early return or a panic cleans up too; a process
//! killed outright leaves its directory behind, and [`prune_leftovers`] (called at start, under
//! the campaign's run lock) kills any process still running from it and removes it. The root
//! exists only while an attempt does: the last one out removes it, and the empty directories
//! above it up to the worktree cache ([`tidy_root`]), so a finished evaluation leaves nothing.
//!
//! Link paths. Each `link` entry (repo-relative, git-ignored: data sets, model weights) appears in
//! the checkout as a **symbolic link to the original** in the user's working tree. That is instant
//! whatever the size, and costs no disk. It is *not* enforced read-only: the file modes belong to
//! the user, a read-only bind mount needs root, and copying with mode 0444 would duplicate
//! multi-gigabyte weights for every sample. So the contract (documented in
//! `docs/evaluate-protocol.md`) is that evaluate commands treat linked paths as read-only inputs;
//! a command that writes through a link changes the user's file. Removing a checkout deletes the
//! link, never its target (neither our recursive delete nor git's follows symbolic links).
//!
//! Deliberately absent: running anything in the checkout (the `group` module) and deciding *when*
//! samples happen (the engine).

use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::RunnerError;
use crate::git::{CommitId, Git};
use crate::handover;

/// Prefix of every attempt directory under a worktree root; [`prune_leftovers`] touches nothing
/// else.
const SAMPLE_PREFIX: &str = "sample-";
/// The units file's name inside an attempt directory.
const UNITS_FILE: &str = "units.json";
/// The evidence file's name inside an attempt directory.
const EVIDENCE_FILE: &str = "evidence.jsonl";
/// The environment variable naming the units file (also the marker that finds escaped processes).
pub(crate) const UNITS_VAR: &str = "TALLY_UNITS_FILE";

static SEQUENCE: AtomicU64 = AtomicU64::new(0);

/// The default worktree root of a campaign: `$XDG_CACHE_HOME/tally/worktrees/<repo>/<campaign>`
/// (`$HOME/.cache` when `XDG_CACHE_HOME` is unset or empty). `<repo>` is the repository's
/// directory name and a hash of its full path; `<campaign>` the name with unusual characters
/// replaced and a hash of the exact name, so two campaigns never share a root.
pub fn default_worktree_root(repo_root: &Path, campaign: &str) -> Result<PathBuf, RunnerError> {
    let cache = worktree_cache().ok_or(RunnerError::NoCacheDir)?;
    Ok(worktree_root_in(&cache, repo_root, campaign))
}

/// The worktree root of a campaign under `base`, named as [`default_worktree_root`] names it
/// under the cache (a Slurm executor's shared `workdir`).
pub fn worktree_root_in(base: &Path, repo_root: &Path, campaign: &str) -> PathBuf {
    let repo_name = repo_root
        .file_name()
        .map_or("repo".into(), |n| slug(&n.to_string_lossy()));
    let repo_hash = fnv1a(repo_root.as_os_str().as_encoded_bytes());
    base.join(format!("{repo_name}-{:016x}", repo_hash))
        .join(format!(
            "{}-{:08x}",
            slug(campaign),
            fnv1a(campaign.as_bytes()) as u32
        ))
}

/// The worktree cache every default root lies in: `$XDG_CACHE_HOME/tally/worktrees`, else
/// `$HOME/.cache/tally/worktrees`; `None` with neither variable set.
fn worktree_cache() -> Option<PathBuf> {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| Path::new(&h).join(".cache"))
        })?;
    Some(cache.join("tally").join("worktrees"))
}

/// Checks a worktree root: refuses one inside the repository's working tree. Returns its
/// canonical path. The root is made to check it and removed again when empty: attempts create it
/// and remove it when they end ([`tidy_root`]).
pub fn prepare_worktree_root(git: &Git, root: &Path) -> Result<PathBuf, RunnerError> {
    fs_err::create_dir_all(root)?;
    let root = fs_err::canonicalize(root)?;
    let repo = fs_err::canonicalize(git.root())?;
    if root.starts_with(&repo) {
        return Err(RunnerError::WorktreeRootInsideRepo { root, repo });
    }
    tidy_root(&root);
    Ok(root)
}

/// Removes `root` when it is empty, and then each parent up to the worktree cache that is empty
/// too, so that no evaluation leaves an empty directory behind. A root outside the cache (one a
/// caller chose) is removed alone: its parents are not tally's. Only empty directories are
/// removed (`rmdir`), so a campaign whose attempt is being made next door loses nothing; a
/// directory that another attempt is about to fill is made again by [`Checkout::create`].
pub fn tidy_root(root: &Path) {
    let cache = worktree_cache().and_then(|c| fs_err::canonicalize(c).ok());
    let boundary = match cache {
        Some(cache) if root.starts_with(&cache) && root != cache => cache,
        _ => match root.parent() {
            Some(parent) => parent.to_path_buf(),
            None => return,
        },
    };
    let mut dir = root;
    while dir != boundary && dir.starts_with(&boundary) {
        if std::fs::remove_dir(dir).is_err() {
            break;
        }
        match dir.parent() {
            Some(parent) => dir = parent,
            None => break,
        }
    }
}

/// Checks `link` entries: repo-relative paths without `..`, existing in the working tree, and
/// ignored by git (a tracked path would collide with the checkout's own file). For config
/// validation; each problem is an error naming the entry.
pub fn validate_links(git: &Git, links: &[PathBuf]) -> Result<(), RunnerError> {
    for link in links {
        check_link_form(link)?;
        if fs_err::symlink_metadata(git.root().join(link)).is_err() {
            return Err(bad_link(
                link,
                "it does not exist in the working tree; create it or remove it from `link`",
            ));
        }
    }
    let paths: Vec<&Path> = links.iter().map(PathBuf::as_path).collect();
    let ignored = git.ignored(&paths)?;
    for link in links {
        let text = link.to_string_lossy();
        let text = text.trim_end_matches('/');
        if !ignored.iter().any(|i| i.trim_end_matches('/') == text) {
            return Err(bad_link(
                link,
                "it is not ignored by git (tracked files are already in every checkout); add it \
                 to .gitignore or remove it from `link`",
            ));
        }
    }
    Ok(())
}

fn check_link_form(link: &Path) -> Result<(), RunnerError> {
    let normal = link.components().all(|c| matches!(c, Component::Normal(_)));
    if link.as_os_str().is_empty() || !normal {
        return Err(bad_link(
            link,
            "expected a path relative to the repository root, without `..`",
        ));
    }
    Ok(())
}

fn bad_link(link: &Path, why: &str) -> RunnerError {
    RunnerError::BadLink {
        path: link.to_string_lossy().into_owned(),
        why: why.to_owned(),
    }
}

/// One attempt's directory: a detached worktree of the revision plus the units-file path.
/// Removed on drop (best effort) or by [`Checkout::remove`] (reporting failures).
#[derive(Debug)]
pub struct Checkout {
    git: Git,
    dir: PathBuf,
    worktree: PathBuf,
    removed: bool,
}

impl Checkout {
    /// Makes a fresh attempt directory under `root` (named after `label`), checks out `commit`
    /// there and adds the `links`. On failure everything made so far is removed again and the
    /// text says what went wrong.
    pub fn create(
        git: &Git,
        root: &Path,
        label: &str,
        commit: &CommitId,
        links: &[PathBuf],
    ) -> Result<Self, String> {
        let seq = SEQUENCE.fetch_add(1, Ordering::Relaxed);
        let dir = root.join(format!(
            "{SAMPLE_PREFIX}{label}-{}-{seq}",
            std::process::id()
        ));
        make_attempt_dir(&dir).map_err(|err| err.to_string())?;
        let mut checkout = Self {
            git: git.clone(),
            worktree: dir.join("checkout"),
            dir,
            removed: false,
        };
        checkout
            .git
            .worktree_add_detached(&checkout.worktree, commit)
            .map_err(|err| err.to_string())?;
        for link in links {
            checkout.add_link(link)?;
        }
        Ok(checkout)
    }

    /// Takes over an attempt directory that a killed `tally run` made (a Slurm job still owns
    /// it, `docs/team.md#adopting`): removed when dropped, as one made by [`Checkout::create`].
    pub fn adopt(git: &Git, dir: &Path) -> Self {
        Self {
            git: git.clone(),
            worktree: dir.join("checkout"),
            dir: dir.to_path_buf(),
            removed: false,
        }
    }

    fn add_link(&mut self, link: &Path) -> Result<(), String> {
        check_link_form(link).map_err(|err| err.to_string())?;
        let target = self.git.root().join(link);
        if fs_err::symlink_metadata(&target).is_err() {
            return Err(format!(
                "link `{}`: {} does not exist",
                link.display(),
                target.display()
            ));
        }
        let dest = self.worktree.join(link);
        if fs_err::symlink_metadata(&dest).is_ok() {
            return Err(format!(
                "link `{}`: the revision has its own file at that path; link only git-ignored paths",
                link.display()
            ));
        }
        if let Some(parent) = dest.parent() {
            fs_err::create_dir_all(parent).map_err(|err| err.to_string())?;
        }
        fs_err::os::unix::fs::symlink(&target, &dest).map_err(|err| err.to_string())
    }

    /// The attempt directory: the checkout, the hand-over files, and whatever an executor keeps
    /// next to them (a batch job's script and output); all removed with it.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The checkout (the command's working directory).
    pub fn worktree(&self) -> &Path {
        &self.worktree
    }

    /// The path offered as `TALLY_UNITS_FILE`: outside the checkout, not existing yet.
    pub fn units_file(&self) -> PathBuf {
        self.dir.join(UNITS_FILE)
    }

    /// The path offered as `TALLY_EVIDENCE_FILE`: outside the checkout, not existing yet.
    pub fn evidence_file(&self) -> PathBuf {
        self.dir.join(EVIDENCE_FILE)
    }

    /// Removes the attempt directory now, reporting a failure, and the root when that leaves
    /// it empty ([`tidy_root`]).
    pub fn remove(mut self) -> Result<(), RunnerError> {
        self.removed = true;
        let removed = remove_attempt_dir(&self.git, &self.dir);
        self.tidy();
        removed
    }

    fn tidy(&self) {
        if let Some(root) = self.dir.parent() {
            tidy_root(root);
        }
    }
}

impl Drop for Checkout {
    fn drop(&mut self) {
        if !self.removed {
            let _ = remove_attempt_dir(&self.git, &self.dir);
            self.tidy();
        }
    }
}

/// Creates an attempt directory and the root above it. A neighbour's [`tidy_root`] may remove an
/// empty parent between the steps of `create_dir_all`; a few tries make it again.
fn make_attempt_dir(dir: &Path) -> std::io::Result<()> {
    let mut tries = 0;
    loop {
        match fs_err::create_dir_all(dir) {
            Err(err) if err.kind() == std::io::ErrorKind::NotFound && tries < 3 => tries += 1,
            other => return other,
        }
    }
}

/// Removes an attempt directory and its worktree's administrative entry.
///
/// The fast path does what `git worktree remove --force` does without starting git (which costs
/// tens of milliseconds per sample on a busy machine): it finds the entry through the checkout's
/// `.git` file (`gitdir: <repo>/.git/worktrees/<id>`), checks that the entry points back at this
/// checkout (the layout of gitrepository-layout(5)), deletes the checkout, then the entry. When
/// anything there looks unexpected it falls back to `git worktree remove --force`, and to
/// `git worktree prune` when git could not remove it either.
fn remove_attempt_dir(git: &Git, dir: &Path) -> Result<(), RunnerError> {
    let worktree = dir.join("checkout");
    if !worktree.exists() {
        return force_remove_dir(dir);
    }
    if let Some(admin) = admin_entry(&worktree) {
        force_remove_dir(dir)?;
        return force_remove_dir(&admin);
    }
    let git_removed = git.worktree_remove_force(&worktree).is_ok();
    let deleted = force_remove_dir(dir);
    if !git_removed {
        // git could not remove it, so its administrative entry is still there.
        git.worktree_prune()?;
    }
    deleted
}

/// The administrative directory (`.git/worktrees/<id>`) of a linked worktree, when the
/// worktree's `.git` file and the entry's `gitdir` file agree. Both are read by the hand-over
/// rules (the command ran in the checkout and may have replaced its `.git` with a FIFO, which a
/// plain read would wait on for good): anything unexpected is `None`, and the caller falls
/// back to git, which checks that `.git` is a regular file before it reads it.
fn admin_entry(worktree: &Path) -> Option<PathBuf> {
    let dot_git = worktree.join(".git");
    let pointer = read_pointer(&dot_git)?;
    let admin = PathBuf::from(pointer.strip_prefix("gitdir: ")?.trim_end_matches('\n'));
    let in_worktrees = admin.parent()?.file_name()? == "worktrees";
    let back = read_pointer(&admin.join("gitdir"))?;
    (in_worktrees && Path::new(back.trim_end_matches('\n')) == dot_git).then_some(admin)
}

/// A small text file git writes (`gitdir: <path>`), read without blocking and at most 64 KiB.
fn read_pointer(path: &Path) -> Option<String> {
    let (file, _) = handover::open_regular(path).ok()??;
    let bytes = handover::read_bounded(&file, 64 << 10, "a git pointer file").ok()?;
    String::from_utf8(bytes).ok()
}

/// Deletes a directory tree; when a read-only directory inside blocks that, makes directories
/// writable and tries again. Symbolic links are removed, never followed.
fn force_remove_dir(dir: &Path) -> Result<(), RunnerError> {
    match fs_err::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(_) => {
            make_dirs_writable(dir);
            match fs_err::remove_dir_all(dir) {
                Err(err) if err.kind() != std::io::ErrorKind::NotFound => Err(err.into()),
                _ => Ok(()),
            }
        }
    }
}

fn make_dirs_writable(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(meta) = fs_err::symlink_metadata(dir) else {
        return;
    };
    if !meta.is_dir() {
        return;
    }
    let _ = fs_err::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    if let Ok(entries) = fs_err::read_dir(dir) {
        for entry in entries.flatten() {
            make_dirs_writable(&entry.path());
        }
    }
}

/// What [`prune_leftovers`] cleaned up.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Pruned {
    /// Attempt directories removed, sorted.
    pub directories: Vec<PathBuf>,
    /// Pids of processes from those attempts that were still running and got SIGKILL, sorted.
    pub killed: Vec<i32>,
}

/// Clears what a killed `tally run` left under `root`: kills processes still running from its
/// attempts (found by their `TALLY_UNITS_FILE`), removes the attempt directories, and runs
/// `git worktree prune`. Only `sample-*` entries are touched. Call it while holding the
/// campaign's [`RunLock`](crate::RunLock), so no live attempt of this campaign is in `root`.
pub fn prune_leftovers(git: &Git, root: &Path) -> Result<Pruned, RunnerError> {
    prune_leftovers_keeping(git, root, &[])
}

/// [`prune_leftovers`], but the attempt directories in `keep` stay, with their processes: those
/// of Slurm jobs the next run adopts (`docs/team.md#adopting`).
pub fn prune_leftovers_keeping(
    git: &Git,
    root: &Path,
    keep: &[PathBuf],
) -> Result<Pruned, RunnerError> {
    let mut pruned = Pruned::default();
    if root.exists() {
        for entry in fs_err::read_dir(root)? {
            let entry = entry?;
            if entry
                .file_name()
                .to_string_lossy()
                .starts_with(SAMPLE_PREFIX)
                && !keep.contains(&entry.path())
            {
                pruned.directories.push(entry.path());
            }
        }
    }
    pruned.directories.sort();
    let markers: Vec<Vec<u8>> = pruned
        .directories
        .iter()
        .map(|dir| marker(&dir.join(UNITS_FILE)))
        .collect();
    for _ in 0..10 {
        let live = tally_process::kill_marked(&markers);
        if live.is_empty() {
            break;
        }
        pruned.killed.extend(live);
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    pruned.killed.sort_unstable();
    pruned.killed.dedup();
    for dir in &pruned.directories {
        force_remove_dir(dir)?;
    }
    git.worktree_prune()?;
    tidy_root(root);
    Ok(pruned)
}

/// The `TALLY_UNITS_FILE=<path>` environment entry of an attempt.
pub(crate) fn marker(units_file: &Path) -> Vec<u8> {
    let mut entry = format!("{UNITS_VAR}=").into_bytes();
    entry.extend_from_slice(units_file.as_os_str().as_encoded_bytes());
    entry
}

fn slug(text: &str) -> String {
    let slug: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    if slug.is_empty() || slug.starts_with('.') {
        format!("_{slug}")
    } else {
        slug
    }
}

/// 64-bit FNV-1a: a stable hash (std's `DefaultHasher` may change between releases, and
/// directory names must not).
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_its_reference_values() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn slugs_keep_plain_names_and_neutralise_the_rest() {
        assert_eq!(slug("llama-70b_tp8.v2"), "llama-70b_tp8.v2");
        assert_eq!(slug("a/b c"), "a_b_c");
        assert_eq!(slug(".."), "_..");
        assert_eq!(slug(""), "_");
    }

    #[test]
    fn link_paths_must_be_plain_relative_paths() {
        assert!(check_link_form(Path::new("data/model.bin")).is_ok());
        for bad in ["", "/etc/passwd", "../x", "a/../../b", "./a"] {
            let err = check_link_form(Path::new(bad)).unwrap_err().to_string();
            assert!(
                err.contains("expected a path relative to the repository root"),
                "{bad}: {err}"
            );
        }
    }
}
