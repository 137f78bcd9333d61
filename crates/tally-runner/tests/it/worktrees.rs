//! Worktrees and git: link paths, leftovers from a killed run, the git wrapper's answers.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use tally_runner::{
    CancelToken, Checkout, Outcome, RunnerError, SampleRunner, default_worktree_root,
    prune_leftovers, validate_links,
};

use crate::fixture::{Accountant, Fixture, alive};

fn with_ignored_data() -> Fixture {
    let fx = Fixture::new(&[
        (".gitignore", "data/\nmodel.bin\n"),
        (
            "evaluate.sh",
            "#!/bin/sh\ntest -L data/set.txt && echo linked\ncat data/set.txt\nwc -c < model.bin\necho 'METRIC ok=1'\n",
        ),
    ]);
    fx.write("data/set.txt", "the data\n");
    fx.write("model.bin", "0123456789");
    fx
}

#[test]
fn link_paths_appear_as_links_to_the_originals_and_survive_removal() {
    let fx = with_ignored_data();
    let mut request = fx.request(&["./evaluate.sh"]);
    request.command.links = vec![PathBuf::from("data/set.txt"), PathBuf::from("model.bin")];
    let attempt = fx.runner().run_attempt(&request, 1, &CancelToken::new());
    assert!(attempt.is_success(), "{:?}", attempt.error());
    let stdout = std::fs::read_to_string(&attempt.logs.unwrap().stdout).unwrap();
    assert_eq!(stdout, "linked\nthe data\n10\nMETRIC ok=1\n");
    fx.assert_clean();
    assert_eq!(
        std::fs::read_to_string(fx.repo.path().join("data/set.txt")).unwrap(),
        "the data\n"
    );
    assert!(fx.repo.path().join("model.bin").exists());
}

#[test]
fn a_missing_link_target_is_a_checkout_failure() {
    let fx = with_ignored_data();
    let mut request = fx.request(&["./evaluate.sh"]);
    request.command.links = vec![PathBuf::from("data/other.txt")];
    let attempt = fx.runner().run_attempt(&request, 1, &CancelToken::new());
    assert!(matches!(attempt.outcome, Outcome::CheckoutFailed(_)));
    let error = attempt.error().unwrap();
    assert!(
        error.starts_with("could not check out the revision: link `data/other.txt`: "),
        "{error}"
    );
    assert!(error.ends_with("data/other.txt does not exist"), "{error}");
    fx.assert_clean();
}

#[test]
fn links_are_validated_for_the_config() {
    let fx = with_ignored_data();
    let ok = [
        PathBuf::from("data"),
        PathBuf::from("model.bin"),
        PathBuf::from("data/set.txt"),
    ];
    validate_links(&fx.git, &ok).unwrap();
    let err = |link: &str| {
        validate_links(&fx.git, &[PathBuf::from(link)])
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        err("evaluate.sh"),
        "link `evaluate.sh`: it is not ignored by git (tracked files are already in every \
         checkout); add it to .gitignore or remove it from `link`"
    );
    assert_eq!(
        err("data/nope"),
        "link `data/nope`: it does not exist in the working tree; create it or remove it from `link`"
    );
    assert_eq!(
        err("../outside"),
        "link `../outside`: expected a path relative to the repository root, without `..`"
    );
}

#[test]
fn leftovers_of_a_killed_run_are_killed_and_removed() {
    let fx = Fixture::new(&[("evaluate.sh", "#!/bin/sh\n")]);
    let runner = fx.runner();
    let root = runner.worktree_root().to_path_buf();
    // A checkout whose owner died: its guard never runs.
    let checkout = Checkout::create(&fx.git, &root, "candidate-0-a1", &fx.head, &[]).unwrap();
    let units = checkout.units_file();
    let worktree = checkout.worktree().to_path_buf();
    std::mem::forget(checkout);
    // A benchmark process still running from it, in its own session.
    let mut orphan = Command::new("setsid")
        .args(["sleep", "300"])
        .env("TALLY_UNITS_FILE", &units)
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    // Something else in the root that is not ours.
    std::fs::write(root.join("keep.txt"), "not a sample").unwrap();
    assert_eq!(fx.worktree_count(), 2);

    let pruned = prune_leftovers(&fx.git, &root).unwrap();

    assert_eq!(
        pruned.directories,
        [worktree.parent().unwrap().to_path_buf()]
    );
    assert_eq!(pruned.killed, [orphan.id() as i32]);
    orphan.wait().unwrap();
    assert!(!alive(orphan.id() as i32));
    assert!(!worktree.exists());
    assert_eq!(fx.worktree_count(), 1);
    assert!(root.join("keep.txt").exists());
    // Nothing left: a second prune is a no-op.
    assert_eq!(prune_leftovers(&fx.git, &root).unwrap(), Default::default());
}

#[test]
fn a_dropped_checkout_removes_itself_even_with_read_only_content() {
    let fx = Fixture::new(&[("evaluate.sh", "#!/bin/sh\n")]);
    let root = fx.runner().worktree_root().to_path_buf();
    let checkout = Checkout::create(&fx.git, &root, "bar-1-a1", &fx.head, &[]).unwrap();
    let locked = checkout.worktree().join("out");
    std::fs::create_dir(&locked).unwrap();
    std::fs::write(locked.join("result"), "x").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o500)).unwrap();
    drop(checkout);
    fx.assert_clean();
}

#[test]
fn the_worktree_root_must_be_outside_the_repository() {
    let fx = Fixture::new(&[]);
    let inside = fx.repo.path().join(".tally/worktrees");
    let err = tally_runner::WorktreeRunner::new(fx.git.clone(), &inside, Arc::new(Accountant))
        .unwrap_err();
    assert!(
        matches!(err, RunnerError::WorktreeRootInsideRepo { .. }),
        "{err}"
    );
}

#[test]
fn the_default_root_is_per_repository_and_campaign() {
    let a = default_worktree_root(Path::new("/src/llm"), "fast decode").unwrap();
    let b = default_worktree_root(Path::new("/src/llm"), "fast_decode").unwrap();
    let c = default_worktree_root(Path::new("/other/llm"), "fast decode").unwrap();
    assert_ne!(a, b);
    assert_ne!(a.parent(), c.parent());
    assert_eq!(a.parent(), b.parent());
    let text = a.to_string_lossy();
    assert!(text.contains("/tally/worktrees/llm-"), "{text}");
    assert!(
        a.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("fast_decode-"),
        "{text}"
    );
}

#[test]
fn git_resolves_revisions_to_full_ids_and_names_the_failing_command() {
    let mut fx = Fixture::new(&[("a", "1")]);
    let first = fx.head.clone();
    let second = fx.commit(&[("a", "2")]);
    assert_eq!(fx.git.resolve_commit("HEAD~1").unwrap(), first);
    assert_eq!(
        fx.git.resolve_commit(&second.as_str()[..8]).unwrap(),
        second
    );
    assert_eq!(
        fx.git.root(),
        std::fs::canonicalize(fx.repo.path()).unwrap()
    );
    let err = fx
        .git
        .resolve_commit("no-such-branch")
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("`no-such-branch` is not a commit in "),
        "{err}"
    );
    assert!(err.ends_with("fatal: Needed a single revision"), "{err}");
    let tree = fx
        .git
        .resolve_commit("HEAD^{tree}")
        .unwrap_err()
        .to_string();
    assert!(tree.contains("is not a commit"), "{tree}");
    let git_err = fx
        .git
        .worktree_remove_force(Path::new("/nonexistent/x"))
        .unwrap_err()
        .to_string();
    assert!(
        git_err.starts_with(
            "`git worktree remove --force /nonexistent/x` failed (exit status: 128): fatal:"
        ),
        "{git_err}"
    );
}

#[test]
fn uncommitted_and_ignored_paths_are_reported() {
    let fx = Fixture::new(&[
        (".gitignore", "*.bin\n"),
        ("tally.toml", "a\n"),
        ("evaluate.sh", "x"),
    ]);
    let tally = Path::new("tally.toml");
    let script = Path::new("evaluate.sh");
    assert_eq!(
        fx.git.uncommitted(&[tally, script]).unwrap(),
        Vec::<String>::new()
    );
    fx.write("tally.toml", "b\n");
    assert_eq!(
        fx.git.uncommitted(&[tally, script]).unwrap(),
        ["tally.toml"]
    );
    fx.write("new.sh", "y");
    assert_eq!(
        fx.git.uncommitted(&[Path::new("new.sh")]).unwrap(),
        ["new.sh"]
    );
    fx.write("w.bin", "z");
    let ignored = fx
        .git
        .ignored(&[Path::new("w.bin"), script, Path::new("x.bin")])
        .unwrap();
    assert_eq!(ignored, ["w.bin", "x.bin"]);
    assert_eq!(fx.git.ignored(&[script]).unwrap(), Vec::<String>::new());
}

#[test]
fn the_root_exists_only_while_an_attempt_does() {
    // A finished evaluation leaves nothing, not even an empty root; a root a caller chose is
    // removed alone (its parent is not tally's). The default root's empty parents up to the
    // worktree cache go too: `crates/tally/tests/it/campaign_worktree_cache.rs`.
    let fx = Fixture::new(&[("evaluate.sh", "#!/bin/sh\necho 'METRIC ok=1'\n")]);
    let runner = fx.runner();
    let root = runner.worktree_root().to_path_buf();
    assert!(
        !root.exists(),
        "made to be checked, then removed while empty"
    );
    let attempt = runner.run_attempt(&fx.request(&["./evaluate.sh"]), 1, &CancelToken::new());
    assert!(matches!(attempt.outcome, Outcome::Exited(0)), "{attempt:?}");
    assert!(!root.exists(), "the last attempt out removes the root");
    assert!(root.parent().unwrap().exists());
    // A root holding something else stays.
    let other = Checkout::create(&fx.git, &root, "bar-0-a1", &fx.head, &[]).unwrap();
    std::fs::write(root.join("keep.txt"), "not a sample").unwrap();
    drop(other);
    assert!(root.join("keep.txt").exists());
}
