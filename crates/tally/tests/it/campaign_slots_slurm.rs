//! `evaluation_slots` above 1 with `[executor] kind = "slurm"` (`docs/team.md#slurm-slots`): one
//! `tally run` on a SQLite campaign keeps that many evaluations — that many batch jobs — in flight
//! at once, never more, reaching the verdicts of a one-slot run; Ctrl-C cancels every job in
//! flight; on PostgreSQL the run takes every free slot's lock, leaving none to a second run.
//!
//! The evaluate program wraps the scripted benchmark and appends `start`/`end` lines with the
//! time and the Slurm job id to `$E2E_DIR/times`, so the test sees which jobs ran at once. Like
//! `campaign_slurm`, each test prints a `SKIPPED` line and returns when no cluster answers (and
//! the PostgreSQL one when `TALLY_TEST_PG_URL` is not set).

#![allow(clippy::print_stderr)]

use std::process::{Command, Stdio};

use crate::campaign_repo::{CampaignRepo, processes_mentioning, text, verdicts};
use crate::campaign_slurm::{cluster_up, recorded_jobs};

/// Two evaluation slots, one primary metric, one pair per evaluation, on Slurm.
const TWO_SLOTS: &str = r#"
name = "slots"
evaluate = ["./timed.sh"]
evaluate_timeout = 120
evaluation_slots = 2

[[metrics]]
name = "tok_s"
direction = "higher"
role = "primary"
repeats = 2

[executor]
kind = "slurm"
time_limit = "5:00"
cpus = 1
"#;

/// Records when each job's evaluate command started and ended; `hold=1` in `bench.conf` makes it
/// wait (a process whose arguments name `$E2E_DIR`, so the test can look for survivors).
const TIMED: &str = r#"#!/bin/sh
set -u
job="${SLURM_JOB_ID:-local}"
echo "start $(date +%s%N) $job" >> "$E2E_DIR/times"
if [ "$(sed -n 's/^hold=//p' bench.conf)" = 1 ]; then
    exec python3 -c 'import sys, time; open(sys.argv[1], "w").close(); time.sleep(300)' \
        "$E2E_DIR/held-$job"
fi
status=0
./evaluate.sh || status=$?
echo "end $(date +%s%N) $job" >> "$E2E_DIR/times"
exit $status
"#;

/// A repository with the timed evaluate program committed.
fn repo() -> CampaignRepo {
    let repo = CampaignRepo::new();
    repo.write_executable("timed.sh", TIMED);
    repo
}

/// The jobs' (start, end) times in nanoseconds, from `$E2E_DIR/times`, by job id; a job
/// without an end line is left out.
fn intervals(repo: &CampaignRepo) -> Vec<(u128, u128)> {
    let times = std::fs::read_to_string(repo.signals().join("times")).unwrap_or_default();
    let mut starts = std::collections::BTreeMap::new();
    let mut spans = Vec::new();
    for line in times.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [what, at, job] = fields[..] else {
            panic!("a malformed line in times: {line:?}")
        };
        let at: u128 = at.parse().unwrap();
        match what {
            "start" => {
                starts.insert(job.to_owned(), at);
            }
            "end" => spans.push((starts[job], at)),
            other => panic!("{other}"),
        }
    }
    spans
}

/// The most jobs whose evaluate commands ran at the same moment.
fn most_at_once(spans: &[(u128, u128)]) -> usize {
    let mut events: Vec<(u128, i32)> = spans
        .iter()
        .flat_map(|&(start, end)| [(start, 1), (end, -1)])
        .collect();
    // At one instant an end comes before a start: touching is not overlapping.
    events.sort();
    let (mut now, mut most) = (0i32, 0i32);
    for (_, step) in events {
        now += step;
        most = most.max(now);
    }
    most as usize
}

#[test]
fn two_slurm_slots_keep_two_jobs_in_flight_and_reach_the_verdicts_of_one_slot() {
    if !cluster_up("two_slurm_slots_keep_two_jobs_in_flight_and_reach_the_verdicts_of_one_slot") {
        return;
    }
    let baseline = "tok_s=1000\nnoise=0.01\nseed=1\n";
    let confs = [
        "tok_s=1250\nnoise=0.01\nseed=3\nsleep=1\n",
        "tok_s=900\nnoise=0.01\nseed=4\nsleep=1\n",
        "tok_s=950\nnoise=0.01\nseed=5\nsleep=1\n",
    ];
    let repo = repo();
    repo.start_campaign(TWO_SLOTS, baseline);
    repo.propose(&confs);
    // Only what `tally run` started counts (init measured the baseline alone).
    let _ = std::fs::remove_file(repo.signals().join("times"));
    let before = recorded_jobs(&repo).len();
    let out = repo.run_until_idle();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("working 2 of the 2 evaluation slots of campaign `slots` (slots 0, 1)"),
        "{stderr}"
    );
    let spans = intervals(&repo);
    let status = repo.status_json();
    // Every sample (two pairs per evaluation) ran as a job of its own, which ran it once.
    let jobs = recorded_jobs(&repo).len() - before;
    assert!(jobs >= 3 * 2, "{jobs} jobs");
    assert_eq!(spans.len(), jobs, "{spans:?}");
    // Two at once, never three.
    assert_eq!(most_at_once(&spans), 2, "{spans:?}");

    // The same campaign with one slot (the local executor: the verdicts do not depend on where
    // the samples ran).
    let one = self::repo();
    let one_slot = TWO_SLOTS
        .replace("evaluation_slots = 2", "evaluation_slots = 1")
        .split("[executor]")
        .next()
        .unwrap()
        .to_owned();
    one.start_campaign(&one_slot, baseline);
    one.propose(&confs);
    let out = one.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let expected = one.status_json();
    assert_eq!(verdicts(&status), verdicts(&expected));
    assert_eq!(verdicts(&status)[1..], ["keep", "discard", "discard"]);
    assert_eq!(status["head"]["candidate"], expected["head"]["candidate"]);
    assert!(repo.leftover_checkouts().is_empty());
}

#[test]
fn ctrl_c_with_two_slurm_jobs_in_flight_cancels_both_and_exits_130() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    if !cluster_up("ctrl_c_with_two_slurm_jobs_in_flight_cancels_both_and_exits_130") {
        return;
    }
    let repo = repo();
    let config = TWO_SLOTS.replace("repeats = 2", "repeats = 1\ndeterministic = true");
    repo.start_campaign(&config, "tok_s=1000\nnoise=0\n");
    repo.propose(&["hold=1\nseed=1\n", "hold=1\nseed=2\n"]);
    let run = repo
        .command(&["run", "--until-idle"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Both candidates' jobs are running at once.
    let held = || -> usize {
        std::fs::read_dir(repo.signals())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("held-"))
            .count()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while held() < 2 {
        if std::time::Instant::now() > deadline {
            kill(Pid::from_raw(run.id() as i32), Signal::SIGINT).unwrap();
            let out = run.wait_with_output().unwrap();
            panic!(
                "two jobs did not run at once within a minute ({} did): {}",
                held(),
                text(&out.stderr)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    kill(Pid::from_raw(run.id() as i32), Signal::SIGINT).unwrap();
    let out = run.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains(
            "the 2 samples in flight are recorded as failed and their candidates stay queued"
        ),
        "{stderr}"
    );
    let survivors = processes_mentioning(&repo.marker());
    assert!(survivors.is_empty(), "survivors: {survivors:?}");
    assert!(repo.leftover_checkouts().is_empty());
    // Slurm reports both held jobs cancelled; the baseline's job completed.
    let states: Vec<String> = recorded_jobs(&repo)
        .iter()
        .map(|id| {
            let shown = Command::new("scontrol")
                .args(["show", "job", "-o", id])
                .output()
                .unwrap();
            let shown = text(&shown.stdout);
            let state = shown
                .split_whitespace()
                .find_map(|f| f.strip_prefix("JobState="));
            state.unwrap_or("unknown").to_owned()
        })
        .collect();
    assert_eq!(
        states.iter().filter(|s| *s == "CANCELLED").count(),
        2,
        "{states:?}"
    );
    assert!(
        states.iter().all(|s| s == "CANCELLED" || s == "COMPLETED"),
        "{states:?}"
    );
    // Both candidates stay pending, to be evaluated again by the next run.
    let status = repo.status_json();
    assert_eq!(verdicts(&status)[1..], ["pending", "pending"]);
}

#[test]
fn on_postgres_a_slurm_run_takes_every_free_slot_and_leaves_none_to_another_run() {
    let test = "on_postgres_a_slurm_run_takes_every_free_slot_and_leaves_none_to_another_run";
    let Some(schema) = crate::campaign_postgres::Schema::new(test) else {
        return;
    };
    if !cluster_up(test) {
        return;
    }
    let repo = self::repo().with_database(&schema.tally_url());
    repo.start_campaign(TWO_SLOTS, "tok_s=1000\nnoise=0.01\nseed=1\n");
    repo.propose(&[
        "tok_s=1250\nnoise=0.01\nseed=3\nsleep=1\n",
        "tok_s=900\nnoise=0.01\nseed=4\nsleep=1\n",
        "tok_s=950\nnoise=0.01\nseed=5\nsleep=1\n",
    ]);
    let _ = std::fs::remove_file(repo.signals().join("times"));
    let first = repo
        .command(&["run", "--until-idle"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once its first job runs, the first run holds both slots: a second finds none.
    repo.wait_for_signal("times");
    let second = repo.run_until_idle();
    let refused = text(&second.stderr);
    assert_eq!(second.status.code(), Some(1), "{refused}");
    assert!(
        refused.contains("all 2 evaluation slots of campaign slots are taken (tally pid="),
        "{refused}"
    );
    let out = first.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("working 2 of the 2 evaluation slots of campaign `slots` (slots 0, 1)"),
        "{stderr}"
    );
    let spans = intervals(&repo);
    assert_eq!(most_at_once(&spans), 2, "{spans:?}");
    let status = repo.status_json();
    assert_eq!(verdicts(&status)[1..], ["keep", "discard", "discard"]);
    assert!(repo.leftover_checkouts().is_empty());
}

#[test]
fn a_two_slot_run_waiting_for_candidates_ends_when_the_campaign_stops() {
    if !cluster_up("a_two_slot_run_waiting_for_candidates_ends_when_the_campaign_stops") {
        return;
    }
    let repo = repo();
    let config = format!("{TWO_SLOTS}\n[plugins.stop_rule]\nprovider = \"limits\"\nmax_runs = 1\n");
    repo.start_campaign(&config, "tok_s=1000\nnoise=0.01\nseed=1\n");
    repo.propose(&["tok_s=1250\nnoise=0.01\nseed=3\nsleep=1\n"]);
    let _ = std::fs::remove_file(repo.signals().join("times"));
    // Without --until-idle: one slot evaluates the one candidate while the other has nothing to
    // do; once it is judged, max_runs stops the campaign and neither slot keeps waiting.
    let out = repo.tally(&["run"]);
    let exited = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("campaign `slots` stopped: "), "{stderr}");
    let spans = intervals(&repo);
    let last_job = spans.iter().map(|&(_, end)| end).max().unwrap();
    // Both slots left soon after the last job (a slot asks the stop rule every 30 s while it
    // waits: a slot left waiting would show here).
    let after = std::time::Duration::from_nanos((exited - last_job) as u64);
    assert!(
        after < std::time::Duration::from_secs(20),
        "the run ended {after:?} after the last job"
    );
    let status = repo.status_json();
    assert_eq!(verdicts(&status)[1..], ["keep"]);
}
