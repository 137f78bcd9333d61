//! Real temporary git repositories to evaluate in, and process checks for the sweep tests.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use tally_artifact::read::{self, Input};
use tally_evidence::{Resolver, account_gpu_time};
use tally_runner::{
    CommitId, EvaluateCommand, Evidence, EvidenceAccountant, Git, SampleRequest, Side,
    WorktreeRunner,
};

/// Accounts evidence with `tally-evidence` as the binary's accountant does: the GPU busy time
/// summed over device clocks, errors as the reader writes them.
pub struct Accountant;

impl EvidenceAccountant for Accountant {
    fn account(&self, path: &Path) -> Result<Evidence, String> {
        let mut resolver = Resolver::new();
        read::resolve_input(&Input::Path(path.to_path_buf()), &mut resolver)
            .map_err(|err| err.to_string())?;
        let accounting = account_gpu_time(&resolver.finish()).map_err(|err| err.to_string())?;
        Ok(Evidence {
            gpu_busy_ns: accounting.device_totals.values().map(|t| t.busy_ns).sum(),
            devices: accounting.device_totals.len(),
        })
    }
}

/// A repository in one temporary directory and, in another, everything tally keeps outside it
/// (worktree root, logs, marker files).
pub struct Fixture {
    pub repo: tempfile::TempDir,
    pub outside: tempfile::TempDir,
    pub git: Git,
    pub head: CommitId,
}

pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

impl Fixture {
    /// A repository whose first commit holds `files` (`*.sh` made executable).
    pub fn new(files: &[(&str, &str)]) -> Self {
        let repo = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        git(repo.path(), &["init", "-q", "-b", "main"]);
        git(repo.path(), &["config", "user.name", "Tally Test"]);
        git(repo.path(), &["config", "user.email", "test@tally.invalid"]);
        let git_handle = Git::discover(repo.path()).unwrap();
        let mut fixture = Self {
            head: CommitId::parse(&"0".repeat(40)).unwrap(),
            repo,
            outside,
            git: git_handle,
        };
        fixture.head = fixture.commit(files);
        fixture
    }

    /// Writes `files` and commits them; returns the new commit.
    pub fn commit(&mut self, files: &[(&str, &str)]) -> CommitId {
        for (name, text) in files {
            self.write(name, text);
        }
        git(self.repo.path(), &["add", "-A"]);
        git(
            self.repo.path(),
            &["commit", "-q", "--allow-empty", "-m", "fixture"],
        );
        self.head = self.git.resolve_commit("HEAD").unwrap();
        self.head.clone()
    }

    /// Writes a file in the working tree (without committing).
    pub fn write(&self, name: &str, text: &str) {
        let path = self.repo.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        if name.ends_with(".sh") {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }

    pub fn worktree_root(&self) -> PathBuf {
        self.outside.path().join("worktrees")
    }

    pub fn log_dir(&self) -> PathBuf {
        self.outside.path().join("logs")
    }

    /// A path outside the repository and the worktrees, for marker files.
    pub fn scratch(&self, name: &str) -> PathBuf {
        self.outside.path().join(name)
    }

    pub fn runner(&self) -> WorktreeRunner {
        WorktreeRunner::new(
            self.git.clone(),
            &self.worktree_root(),
            Arc::new(Accountant),
        )
        .unwrap()
    }

    /// A request for `argv` on the head, candidate `c7`, candidate side, sample 2, 30 s timeout.
    pub fn request(&self, argv: &[&str]) -> SampleRequest {
        SampleRequest {
            command: EvaluateCommand {
                argv: argv.iter().map(|s| s.to_string()).collect(),
                timeout: Duration::from_secs(30),
                links: Vec::new(),
            },
            revision: self.head.clone(),
            candidate: "c7".into(),
            side: Side::Candidate,
            sample: 2,
            required_metrics: Vec::new(),
            log_dir: self.log_dir(),
        }
    }

    /// Entries left under the worktree root (should be none after every attempt).
    pub fn leftovers(&self) -> Vec<PathBuf> {
        match std::fs::read_dir(self.worktree_root()) {
            Ok(entries) => entries.map(|e| e.unwrap().path()).collect(),
            Err(_) => Vec::new(),
        }
    }

    /// How many worktrees git knows of (1 = only the main one).
    pub fn worktree_count(&self) -> usize {
        git(self.repo.path(), &["worktree", "list", "--porcelain"])
            .lines()
            .filter(|l| l.starts_with("worktree "))
            .count()
    }

    pub fn assert_clean(&self) {
        assert_eq!(
            self.leftovers(),
            Vec::<PathBuf>::new(),
            "attempt directories left behind"
        );
        assert_eq!(
            self.worktree_count(),
            1,
            "git still lists a sample worktree"
        );
    }
}

/// Whether `pid` is a live (non-zombie) process.
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat[stat.rfind(')').unwrap() + 2..].chars().next().unwrap();
            !matches!(state, 'Z' | 'X')
        }
        Err(_) => false,
    }
}

/// Whether `pid` exists at all, zombie or not.
pub fn exists(pid: i32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Live processes whose process group is `pgid`.
pub fn live_group_members(pgid: i32) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let rest: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
        if rest[2].parse::<i32>() == Ok(pgid) && !matches!(rest[0], "Z" | "X") {
            found.push(pid);
        }
    }
    found
}

/// The numbers printed after `word ` on lines of a log, e.g. `pid 123`.
pub fn numbers_after(log: &Path, word: &str) -> Vec<i32> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix(word)?.trim().parse().ok())
        .collect()
}
