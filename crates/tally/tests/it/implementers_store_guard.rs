//! An implementer that writes the campaign's SQLite store with `sqlite3` (`docs/store.md#guard`,
//! `docs/implementers.md#protection`): the agent finds the store through git, as any agent of
//! the same user could; its write fails with "no such function: tally_writer" and the verdicts
//! stay as tally wrote them; when it drops a guard trigger first, the campaign is held ("store
//! tampered: …", exit 3) until `tally store check --repair` restores the trigger, and then the
//! campaign runs on. Without `sqlite3` on `PATH` each test prints a `SKIPPED` line and returns.

#![allow(clippy::print_stderr)]

use std::process::Command;

use serde_json::Value;

use crate::campaign_repo::{CampaignRepo, candidate, text};
use crate::implementers_runs::{add_idea, config};

/// The agent: runs the `SCRIPT: sql=` line of its brief on the store with `sqlite3`, records
/// whether that worked and what it said, then commits a slower `bench.conf`.
const STORE_AGENT: &str = r#"#!/bin/sh
set -u
store="$(git rev-parse --git-common-dir)/../.tally/tally.db"
sql=$(sed -n 's/^SCRIPT: sql=//p' "$1")
if sqlite3 "$store" "$sql" 2> "$E2E_DIR/sqlite3-$TALLY_RUN.err"; then
    touch "$E2E_DIR/sqlite3-$TALLY_RUN.ok"
fi
printf 'tok_s=900\n' > bench.conf
git commit -qam "agent: slower"
"#;

/// Whether `sqlite3` can be run; without it each test prints a `SKIPPED` line.
fn have_sqlite3(test: &str) -> bool {
    let found = Command::new("sqlite3").arg("-version").output().is_ok();
    if !found {
        eprintln!("SKIPPED {test}: no sqlite3 on PATH (Debian: apt-get install sqlite3)");
    }
    found
}

/// A registered campaign (baseline `tok_s=1000`) whose implementer is the store agent.
fn campaign() -> CampaignRepo {
    let repo = CampaignRepo::new();
    repo.write_executable("agent.sh", STORE_AGENT);
    repo.start_campaign(&config(""), "tok_s=1000\n");
    repo
}

fn measurements_of(status: &Value, id: u64) -> Vec<Value> {
    candidate(status, id)["measurements"]
        .as_array()
        .expect("a candidate lists its measurements")
        .clone()
}

#[test]
fn an_agent_that_writes_the_store_with_sqlite3_fails_and_the_verdicts_stay() {
    if !have_sqlite3("an_agent_that_writes_the_store_with_sqlite3_fails_and_the_verdicts_stay") {
        return;
    }
    let repo = campaign();
    let before = repo.status_json();
    add_idea(
        &repo,
        "forge",
        "SCRIPT: sql=UPDATE candidates SET verdict = 'discard', reason = 'forged' WHERE number = 0; DELETE FROM measurements;",
    );
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    let said = std::fs::read_to_string(repo.signals().join("sqlite3-1.err")).unwrap();
    assert!(said.contains("no such function: tally_writer"), "{said}");
    assert!(!repo.signals().join("sqlite3-1.ok").exists());
    let after = repo.status_json();
    for field in ["verdict", "reason", "revision"] {
        assert_eq!(
            candidate(&after, 0)[field],
            candidate(&before, 0)[field],
            "{field}"
        );
    }
    assert_eq!(candidate(&after, 0)["verdict"], "keep");
    // The baseline's measurements are all there (judging the agent's commit added bar samples).
    let (old, new) = (measurements_of(&before, 0), measurements_of(&after, 0));
    assert!(!old.is_empty() && new.len() > old.len(), "{old:?} {new:?}");
    assert_eq!(new[..old.len()], old[..]);
    // The agent's commit was judged as usual: slower, discarded.
    assert_eq!(candidate(&after, 1)["verdict"], "discard");
    assert_eq!(after["campaign"]["state"], "active");
    let check = repo.tally(&["store", "check"]);
    assert_eq!(check.status.code(), Some(0), "{}", text(&check.stderr));
    assert!(
        text(&check.stdout).ends_with(": the guard is intact\n"),
        "{}",
        text(&check.stdout)
    );
    let repair = repo.tally(&["store", "check", "--repair"]);
    assert_eq!(repair.status.code(), Some(0), "{}", text(&repair.stderr));
    assert!(
        text(&repair.stdout).ends_with(": the guard is intact; nothing to repair\n"),
        "{}",
        text(&repair.stdout)
    );
}

#[test]
fn a_dropped_trigger_holds_the_campaign_until_the_store_is_repaired() {
    if !have_sqlite3("a_dropped_trigger_holds_the_campaign_until_the_store_is_repaired") {
        return;
    }
    let repo = campaign();
    add_idea(
        &repo,
        "drop the guard",
        "SCRIPT: sql=DROP TRIGGER tally_guard_candidates_update; UPDATE candidates SET reason = 'forged' WHERE number = 0;",
    );
    let out = repo.run_until_idle();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        repo.signals().join("sqlite3-1.ok").exists(),
        "DROP TRIGGER needs no function, so the write went through"
    );
    let reason_start = "store tampered: trigger tally_guard_candidates_update is missing (the \
                        store was written by something other than tally); ";
    assert!(
        stderr.contains(&format!("campaign `agents` is held: {reason_start}")),
        "{stderr}"
    );
    let status = repo.status_json();
    assert_eq!(status["campaign"]["state"], "held");
    let reason = status["campaign"]["reason"].as_str().unwrap();
    assert!(reason.starts_with(reason_start), "{reason}");
    assert!(reason.ends_with("`tally store check --repair`"), "{reason}");
    assert_eq!(
        candidate(&status, 1)["verdict"],
        "pending",
        "nothing is judged on a tampered store"
    );

    // Running again does not judge either: the trigger is still missing.
    let again = repo.run_until_idle();
    assert_eq!(again.status.code(), Some(3), "{}", text(&again.stderr));
    assert_eq!(candidate(&repo.status_json(), 1)["verdict"], "pending");

    // `tally store check` names the damage (exit 1); `--repair` restores the trigger.
    let check = repo.tally(&["store", "check"]);
    assert_eq!(check.status.code(), Some(1));
    let said = text(&check.stderr);
    assert!(
        said.starts_with("error: store ")
            && said.contains(
                "tampered: trigger tally_guard_candidates_update is missing (the store was \
                 written by something other than tally); "
            ),
        "{said}"
    );
    let repair = repo.tally(&["store", "check", "--repair"]);
    assert_eq!(repair.status.code(), Some(0), "{}", text(&repair.stderr));
    let said = text(&repair.stdout);
    assert!(
        said.contains(": restored trigger tally_guard_candidates_update\n")
            && said.ends_with(
                ": the guard is restored; a campaign held for it runs on at the next `tally run`\n"
            ),
        "{said}"
    );
    let check = repo.tally(&["store", "check"]);
    assert_eq!(check.status.code(), Some(0), "{}", text(&check.stderr));

    // The campaign runs on: the agent's commit is judged. (What the agent wrote stays: the
    // guard cannot undo it; a person reads the campaign before repairing.)
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let status = repo.status_json();
    assert_eq!(status["campaign"]["state"], "active");
    assert_eq!(candidate(&status, 1)["verdict"], "discard");
    assert_eq!(candidate(&status, 0)["reason"], "forged");

    // The restored trigger refuses sqlite3 again.
    let store = repo.root().join(".tally/tally.db");
    let refused = Command::new("sqlite3")
        .arg(&store)
        .arg("UPDATE candidates SET reason = 'again' WHERE number = 0")
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("no such function: tally_writer"),
        "{}",
        text(&refused.stderr)
    );
}
