//! Several `tally run` workers on one PostgreSQL campaign (`evaluation_slots = 2`,
//! `docs/team.md#workers`): real processes of the binary share the queue — each sample runs
//! once, one head, the verdicts one process reaches on SQLite — a third worker finds no free
//! slot, a `kill -9` of a worker leaves its evaluation to the live one, two keeps from one head
//! move it once (the later one is judged again against the new head), and SQLite refuses more
//! than one slot.
//!
//! The evaluate program is `record.sh`, which appends `PPID CANDIDATE SIDE SAMPLE` (its parent
//! is the `tally run` that started it) to `$E2E_DIR/ran` and then runs the scripted benchmark.
//! Without `TALLY_TEST_PG_URL` the PostgreSQL tests print a `SKIPPED` line and return.

#![allow(clippy::print_stderr)]

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::campaign_postgres::{Schema, assert_each_sample_once};
use crate::campaign_repo::{CampaignRepo, candidate, text, verdicts};

/// One primary metric, three pairs per evaluation, two worker slots.
const TWO_SLOTS: &str = r#"
name = "team"
evaluate = ["./record.sh"]
evaluate_timeout = 60
evaluation_slots = 2

[[metrics]]
name = "tok_s"
direction = "higher"
role = "primary"
repeats = 3
"#;

/// Records who ran which sample, then runs the scripted benchmark.
const RECORD: &str = r#"#!/bin/sh
echo "$PPID $TALLY_CANDIDATE $TALLY_SIDE $TALLY_SAMPLE" >> "$E2E_DIR/ran"
exec ./evaluate.sh
"#;

const BASELINE: &str = "tok_s=1000\nnoise=0.01\nseed=1\n";

/// A repository with `record.sh` and the campaign started (on `database`, or SQLite).
fn campaign(config: &str, database: Option<&Schema>) -> CampaignRepo {
    let mut repo = CampaignRepo::new();
    if let Some(schema) = database {
        repo = repo.with_database(&schema.tally_url());
    }
    repo.write_executable("record.sh", RECORD);
    repo.start_campaign(config, BASELINE);
    repo
}

/// `tally run` (`--until-idle` when asked), stderr kept.
fn spawn_worker(repo: &CampaignRepo, until_idle: bool) -> Child {
    let args: &[&str] = if until_idle {
        &["run", "--until-idle"]
    } else {
        &["run"]
    };
    repo.command(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tally run starts")
}

/// Waits (at most two minutes) until `tally status --json` satisfies `done`.
fn wait_for_status(repo: &CampaignRepo, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let status = repo.status_json();
        if done(&status) {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "not within two minutes: {what}; status: {status}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Whether every candidate in `ids` has a verdict.
fn judged(status: &Value, ids: &[u64]) -> bool {
    ids.iter()
        .all(|&id| candidate(status, id)["verdict"] != "pending")
}

/// SIGTERMs a waiting `tally run` and returns its exit code and stderr.
fn terminate(worker: Child) -> (Option<i32>, String) {
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &worker.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = worker.wait_with_output().unwrap();
    (out.status.code(), text(&out.stderr))
}

/// The `$E2E_DIR/ran` lines as (tally pid, candidate, side, sample).
fn ran(repo: &CampaignRepo) -> Vec<(u32, u64, String, u64)> {
    std::fs::read_to_string(repo.signals().join("ran"))
        .unwrap_or_default()
        .lines()
        .map(|line| {
            let f: Vec<&str> = line.split(' ').collect();
            (
                f[0].parse().unwrap(),
                f[1].parse().unwrap(),
                f[2].to_owned(),
                f[3].parse().unwrap(),
            )
        })
        .collect()
}

/// The evaluations of candidate `id`'s own samples.
fn evaluations_of(status: &Value, id: u64) -> BTreeSet<u64> {
    candidate(status, id)["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["side"] == "candidate")
        .filter_map(|m| m["evaluation"].as_u64())
        .collect()
}

/// How many measurements (both sides) the given evaluations recorded.
fn measurements_in(status: &Value, evaluations: &BTreeSet<u64>) -> usize {
    status["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["measurements"].as_array().unwrap())
        .filter(|m| {
            m["evaluation"]
                .as_u64()
                .is_some_and(|e| evaluations.contains(&e))
        })
        .count()
}

/// The same campaign judged by one `tally run` on SQLite (one slot).
fn alone_on_sqlite(confs: &[&str]) -> Value {
    let alone = campaign(&TWO_SLOTS.replace("evaluation_slots = 2\n", ""), None);
    alone.propose(confs);
    alone.signal("release");
    let out = alone.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    alone.status_json()
}

#[test]
fn two_workers_share_a_postgres_campaign_each_sample_once_and_a_third_finds_no_slot() {
    let Some(schema) = Schema::new("workers") else {
        return;
    };
    let confs = [
        "tok_s=1250\nnoise=0.01\nseed=2\nstall_at=candidate-0\n",
        "tok_s=900\nnoise=0.01\nseed=3\n",
        "tok_s=850\nnoise=0.01\nseed=4\n",
        "tok_s=800\nnoise=0.01\nseed=5\n",
    ];
    let repo = campaign(TWO_SLOTS, Some(&schema));
    repo.propose(&confs);

    // The first worker stalls in candidate 1's first sample; the second takes the rest.
    let first = spawn_worker(&repo, true);
    repo.wait_for_signal("stalled");
    let second = spawn_worker(&repo, false);
    wait_for_status(&repo, "the second worker judges candidates 2-4", |s| {
        judged(s, &[2, 3, 4])
    });
    assert_eq!(candidate(&repo.status_json(), 1)["verdict"], "pending");

    // Both slots are held: a third worker is refused, naming both.
    let third = repo.run_until_idle();
    let stderr = text(&third.stderr);
    assert_eq!(third.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with("error: all 2 evaluation slots of campaign team are taken ("),
        "{stderr}"
    );
    for pid in [first.id(), second.id()] {
        assert!(stderr.contains(&format!("tally pid={pid} ")), "{stderr}");
    }

    repo.signal("release");
    let (first_pid, second_pid) = (first.id(), second.id());
    let out = first.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let (code, stderr) = terminate(second);
    assert_eq!(code, Some(143), "{stderr}");
    assert!(
        !stderr.contains("ended during its evaluation"),
        "a live worker's evaluation was taken for an orphan: {stderr}"
    );

    let status = repo.status_json();
    assert_each_sample_once(&status);
    // One evaluation per candidate, none abandoned or repeated.
    let mut evaluations = BTreeSet::new();
    for id in 1..=4 {
        let of = evaluations_of(&status, id);
        assert_eq!(of.len(), 1, "candidate {id} evaluated by {of:?}");
        evaluations.extend(of);
    }
    // Every sample the workers ran is a recorded measurement, and each worker ran its share.
    let ran = ran(&repo);
    let by_workers: Vec<_> = ran
        .iter()
        .filter(|(pid, ..)| [first_pid, second_pid].contains(pid))
        .collect();
    assert_eq!(
        by_workers.len(),
        measurements_in(&status, &evaluations),
        "{ran:?}"
    );
    let mut who: BTreeMap<u64, BTreeSet<u32>> = BTreeMap::new();
    for (pid, id, side, _) in &by_workers {
        if side == "candidate" {
            who.entry(*id).or_default().insert(*pid);
        }
    }
    assert_eq!(who[&1], BTreeSet::from([first_pid]), "{ran:?}");
    for id in 2..=4 {
        assert_eq!(who[&id], BTreeSet::from([second_pid]), "{ran:?}");
    }

    let expected = alone_on_sqlite(&confs);
    assert_eq!(verdicts(&status), verdicts(&expected));
    assert_eq!(status["head"]["candidate"], expected["head"]["candidate"]);
    assert_eq!(status["head"]["candidate"], 1);
}

#[test]
fn kill_9_of_a_postgres_worker_leaves_its_evaluation_to_the_live_one() {
    let Some(schema) = Schema::new("worker_kill") else {
        return;
    };
    let confs = [
        "tok_s=1250\nnoise=0.01\nseed=2\nstall_at=candidate-1\n",
        "tok_s=900\nnoise=0.01\nseed=3\n",
        "tok_s=850\nnoise=0.01\nseed=4\n",
    ];
    let repo = campaign(TWO_SLOTS, Some(&schema));
    repo.propose(&confs);

    // The first worker stalls in candidate 1's second pair; the second judges the others.
    let mut first = spawn_worker(&repo, true);
    repo.wait_for_signal("stalled");
    let second = spawn_worker(&repo, false);
    wait_for_status(&repo, "the second worker judges candidates 2-3", |s| {
        judged(s, &[2, 3])
    });
    first.kill().unwrap(); // SIGKILL
    first.wait().unwrap();
    repo.signal("release");

    // The live worker sees the killed one's slot free and evaluates candidate 1 again.
    let status = wait_for_status(&repo, "the live worker judges candidate 1", |s| {
        judged(s, &[1])
    });
    let (second_pid, first_pid) = (second.id(), first.id());
    let (code, stderr) = terminate(second);
    assert_eq!(code, Some(143), "{stderr}");
    assert!(
        stderr.contains(
            "candidate#1: an earlier tally run ended during its evaluation; evaluating it again"
        ),
        "{stderr}"
    );
    assert_each_sample_once(&status);
    let ran = ran(&repo);
    assert!(
        ran.iter()
            .any(|(pid, id, side, _)| *pid == second_pid && *id == 1 && side == "candidate"),
        "{ran:?}"
    );
    assert!(
        ran.iter()
            .any(|(pid, id, ..)| *pid == first_pid && *id == 1),
        "{ran:?}"
    );
    assert_eq!(
        evaluations_of(&status, 1).len(),
        2,
        "the killed one and the redone one"
    );
    let expected = alone_on_sqlite(&confs);
    assert_eq!(verdicts(&status), verdicts(&expected));
    assert_eq!(status["head"]["candidate"], expected["head"]["candidate"]);

    // The next worker on the killed one's slot removes its checkout and finds nothing to do.
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        repo.leftover_checkouts().is_empty(),
        "{:?}",
        repo.leftover_checkouts()
    );
}

#[test]
fn sqlite_refuses_more_than_one_evaluation_slot() {
    let repo = campaign(TWO_SLOTS, None);
    repo.propose(&["tok_s=1100\nnoise=0.01\nseed=2\n"]);
    let out = repo.run_until_idle();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with(
            "error: tally.toml: evaluation_slots = 2, but this campaign's store is the SQLite file "
        ),
        "{stderr}"
    );
    assert!(stderr.contains("set evaluation_slots = 1"), "{stderr}");
    assert_eq!(verdicts(&repo.status_json()), ["keep", "pending"]);
}

#[test]
fn two_postgres_workers_keeping_from_one_head_move_it_once_and_judge_again() {
    let Some(schema) = Schema::new("worker_head") else {
        return;
    };
    let repo = campaign(TWO_SLOTS, Some(&schema));
    repo.propose(&[
        "tok_s=1250\nnoise=0.01\nseed=2\nstall_at=candidate-0\n",
        "tok_s=1100\nnoise=0.01\nseed=3\n",
    ]);

    // The first worker measures candidate 1 against the baseline; meanwhile the second keeps
    // candidate 2 against the same baseline and moves the head.
    let first = spawn_worker(&repo, true);
    repo.wait_for_signal("stalled");
    let second = spawn_worker(&repo, false);
    let status = wait_for_status(&repo, "the second worker keeps candidate 2", |s| {
        judged(s, &[2])
    });
    assert_eq!(candidate(&status, 2)["verdict"], "keep");
    assert_eq!(status["head"]["candidate"], 2);

    // Candidate 1's keep finds the head moved: it is judged again against candidate 2.
    repo.signal("release");
    let out = first.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(
            "candidate#1: the head moved to candidate#2 while it was measured; judging it again"
        ),
        "{stderr}"
    );
    let status = wait_for_status(&repo, "candidate 1 judged again", |s| judged(s, &[1]));
    let (code, stderr) = terminate(second);
    assert_eq!(code, Some(143), "{stderr}");
    assert_each_sample_once(&status);
    assert_eq!(verdicts(&status), ["keep", "keep", "keep"]);
    assert_eq!(candidate(&status, 1)["judged_against"], 2);
    assert_eq!(status["head"]["candidate"], 1);
    assert_eq!(
        evaluations_of(&status, 1).len(),
        2,
        "against the baseline, then candidate 2"
    );
}
