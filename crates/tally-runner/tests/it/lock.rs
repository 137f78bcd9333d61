//! The run lock across processes: refused while another process holds it, free once that
//! process is killed with SIGKILL.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use tally_runner::{RunLock, RunnerError, run_lock_path};

const CHILD_VAR: &str = "TALLY_RUNNER_TEST_LOCK_CHILD";

/// Not a test of its own: when the parent test re-runs this binary with `CHILD_VAR` set, this
/// takes the lock, says so, and sleeps until it is killed.
#[test]
#[allow(clippy::print_stdout)]
fn lock_holder_child() {
    let Some(path) = std::env::var_os(CHILD_VAR) else {
        return;
    };
    let _lock = RunLock::acquire(std::path::Path::new(&path), "decode").unwrap();
    println!("locked");
    std::thread::sleep(std::time::Duration::from_secs(300));
}

#[test]
fn the_lock_is_refused_while_held_and_free_after_the_holder_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let path = run_lock_path(&dir.path().join(".tally"), "decode");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "lock::lock_holder_child",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_VAR, &path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // libtest may print `test NAME ... ` on the same line first.
    assert!(
        lines.any(|l| l.unwrap().trim_end().ends_with("locked")),
        "the child never took the lock"
    );

    let err = RunLock::acquire(&path, "decode").unwrap_err();
    let RunnerError::LockHeld { campaign, holder } = &err else {
        panic!("{err}")
    };
    assert_eq!(campaign, "decode");
    assert_eq!(holder.pid, Some(child.id()));
    assert!(
        holder.started.as_deref().is_some_and(|s| s.ends_with('Z')),
        "{holder:?}"
    );
    assert!(holder.host.is_some());
    let text = err.to_string();
    assert!(
        text.starts_with(&format!("another tally run (pid {} on ", child.id())),
        "{text}"
    );
    assert!(text.ends_with(") is working on campaign decode"), "{text}");

    child.kill().unwrap(); // SIGKILL: no chance to clean up.
    child.wait().unwrap();
    let lock = RunLock::acquire(&path, "decode").unwrap();
    let written = std::fs::read_to_string(lock.path()).unwrap();
    assert!(
        written.starts_with(&format!("pid={}\n", std::process::id())),
        "{written}"
    );
}
