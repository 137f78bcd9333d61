//! What `tally run` guarantees when things go wrong (`docs/campaign.md#one-sample`, `docs/campaign.md#crash-safety`): a
//! timeout leaves no process behind, `kill -9` of `tally run` loses nothing and duplicates
//! nothing, Ctrl-C exits 130 with the candidate still pending, and a second `tally run` is
//! refused while one works.
//!
//! Each test drives a real campaign in a throwaway repository with the scripted benchmark of
//! [`crate::campaign_repo`]; a stalled sample (`stall_at`) gives the test a moment where `tally
//! run` is certainly in the middle of an evaluation.

use std::collections::BTreeSet;
use std::process::{Child, Stdio};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;

use crate::campaign_repo::{CampaignRepo, candidate, processes_mentioning, text, verdicts};

/// One primary metric, three pairs per evaluation.
const PAIRED: &str = r#"
name = "safety"
evaluate = ["./evaluate.sh"]
evaluate_timeout = 60

[[metrics]]
name = "tok_s"
direction = "higher"
role = "primary"
repeats = 3
"#;

/// Starts `tally run --until-idle` in the background.
fn spawn_run(repo: &CampaignRepo) -> Child {
    repo.command(&["run", "--until-idle"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tally run starts")
}

/// Every measurement of a status object, with the candidate it is listed under.
fn measurements(status: &Value) -> Vec<(u64, Value)> {
    status["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| {
            let id = c["id"].as_u64().unwrap();
            c["measurements"]
                .as_array()
                .unwrap()
                .iter()
                .map(move |m| (id, m.clone()))
        })
        .collect()
}

/// The candidate-side measurements of `id` (its own samples, not the bar samples it was paired
/// with).
fn own_samples(status: &Value, id: u64) -> Vec<Value> {
    candidate(status, id)["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["side"] == "candidate")
        .cloned()
        .collect()
}

/// Every measurement is listed once, no sample of an evaluation is recorded twice (the same
/// side, index and attempt), and pair links are mutual and join a candidate sample to a bar
/// sample of the same evaluation.
fn assert_measurements_consistent(status: &Value) {
    let all = measurements(status);
    let ids: BTreeSet<u64> = all.iter().map(|(_, m)| m["id"].as_u64().unwrap()).collect();
    assert_eq!(ids.len(), all.len(), "a measurement is listed twice");
    let mut samples = BTreeSet::new();
    for (_, m) in &all {
        let key = (
            m["evaluation"].as_u64().expect("measured by the loop"),
            m["side"].as_str().unwrap().to_string(),
            m["sample"].as_u64().expect("a sample index"),
            m["attempt"].as_u64().unwrap(),
        );
        assert!(samples.insert(key.clone()), "recorded twice: {key:?}");
        let Some(partner) = m["pair"].as_u64() else {
            continue;
        };
        let (_, other) = all
            .iter()
            .find(|(_, o)| o["id"] == partner)
            .unwrap_or_else(|| panic!("measurement {} pairs with a missing one", m["id"]));
        assert_eq!(other["pair"], m["id"], "pair links are mutual");
        assert_eq!(
            other["evaluation"], m["evaluation"],
            "a pair is one evaluation's"
        );
        assert_eq!(other["sample"], m["sample"], "a pair is one sample index's");
        assert_ne!(
            other["side"], m["side"],
            "a pair joins a candidate and a bar sample"
        );
    }
}

#[test]
fn a_timeout_kills_the_whole_process_group_and_what_left_it() {
    let repo = CampaignRepo::new();
    let config = PAIRED
        .replace("evaluate_timeout = 60", "evaluate_timeout = 3")
        .replace("repeats = 3", "repeats = 1\ndeterministic = true");
    repo.start_campaign(&config, "tok_s=1000\nnoise=0\n");
    repo.propose(&["mode=hang\n"]);

    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    // The benchmark's three grandchildren were running when the timeout struck...
    for child in ["child-1", "child-2", "child-3"] {
        assert!(repo.signals().join(child).exists(), "{child} never started");
    }
    // ...and none of them, nor the benchmark, survives `tally run`.
    let survivors = processes_mentioning(&repo.marker());
    assert!(survivors.is_empty(), "survivors: {survivors:?}");
    assert!(repo.leftover_checkouts().is_empty());

    let status = repo.status_json();
    let hung = candidate(&status, 1);
    assert_eq!(hung["verdict"], "crash");
    let samples = own_samples(&status, 1);
    assert_eq!(samples.len(), 1, "a timeout is not retried: {samples:#?}");
    assert_eq!(
        samples[0]["error"],
        "the evaluate command timed out after 3 s (evaluate_timeout) and its process group was killed"
    );
    assert!(samples[0]["seconds"].as_f64().unwrap() >= 3.0);
}

#[test]
fn kill_9_during_an_evaluation_loses_nothing_and_duplicates_nothing() {
    let repo = CampaignRepo::new();
    repo.start_campaign(PAIRED, "tok_s=1000\nnoise=0.01\nseed=1\n");
    repo.propose(&[
        "tok_s=1100\nnoise=0.01\nseed=2\n",
        "tok_s=1250\nnoise=0.01\nseed=3\nstall_at=candidate-1\n",
        "tok_s=900\nnoise=0.01\nseed=4\n",
    ]);

    let mut first = spawn_run(&repo);
    repo.wait_for_signal("stalled");
    first.kill().unwrap(); // SIGKILL
    first.wait().unwrap();

    let status = repo.status_json();
    assert_eq!(verdicts(&status), ["keep", "keep", "pending", "pending"]);
    // Samples committed before the kill are in the store: candidate sample 0 and its bar
    // sample, then bar sample 1 (the pair C B, B C); candidate sample 1 was in flight.
    let before: Vec<Value> = own_samples(&status, 2);
    assert_eq!(before.len(), 1, "{before:#?}");
    assert!(before[0]["error"].is_null());
    // The stalled benchmark outlived its tally run.
    assert!(!processes_mentioning(&repo.marker()).is_empty());

    let out = repo.run_until_idle();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // The stalled benchmark (its shell, and the `sleep` of the moment) and its checkout.
    let cleaned = regex::Regex::new(
        r"(?m)^removed 1 checkout\(s\) and stopped [1-9]\d* process\(es\) left by an earlier tally run$",
    )
    .unwrap();
    assert!(cleaned.is_match(&stderr), "{stderr}");

    let status = repo.status_json();
    assert_eq!(verdicts(&status), ["keep", "keep", "keep", "discard"]);
    assert_measurements_consistent(&status);
    // Each candidate was judged once on one complete evaluation of three pairs; the pair the
    // killed run had finished still counts, nothing else of it was added twice.
    let evaluations = |id: u64| -> BTreeSet<u64> {
        own_samples(&status, id)
            .iter()
            .map(|m| m["evaluation"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(evaluations(1).len(), 1);
    assert_eq!(
        evaluations(2).len(),
        2,
        "the killed evaluation and its re-run"
    );
    assert_eq!(evaluations(3).len(), 1);
    assert_eq!(own_samples(&status, 1).len(), 3);
    assert_eq!(own_samples(&status, 2).len(), 1 + 3);
    assert_eq!(own_samples(&status, 3).len(), 3);
    for id in [1, 3] {
        let reason = candidate(&status, id)["reason"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(reason.ends_with("over 3 pairs)"), "{reason}");
    }
    let reason = candidate(&status, 2)["reason"]
        .as_str()
        .unwrap()
        .to_string();
    // Its first look (the killed run's pair and two of the re-run) keeps; the fourth pair joins
    // a second look (`docs/verdicts.md#more-pairs`) without asking for more.
    assert!(
        reason.contains("over 4 pairs); with 1 pair measured after the first 3 ("),
        "{reason}"
    );
    assert!(reason.starts_with("against candidate#1: "), "{reason}");
    assert!(
        candidate(&status, 3)["reason"]
            .as_str()
            .unwrap()
            .starts_with("against candidate#2: ")
    );

    assert!(repo.leftover_checkouts().is_empty());
    assert_eq!(repo.git(&["worktree", "list"]).lines().count(), 1);
    let survivors = processes_mentioning(&repo.marker());
    assert!(survivors.is_empty(), "survivors: {survivors:?}");
}

#[test]
fn ctrl_c_exits_130_and_leaves_the_candidate_pending() {
    let repo = CampaignRepo::new();
    repo.start_campaign(PAIRED, "tok_s=1000\nnoise=0.01\n");
    repo.propose(&["tok_s=1100\nnoise=0.01\nstall_at=candidate-1\n"]);

    let run = spawn_run(&repo);
    repo.wait_for_signal("stalled");
    kill(Pid::from_raw(run.id() as i32), Signal::SIGINT).unwrap();
    let out = run.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert!(
        stderr.contains("the sample in flight is recorded as failed"),
        "{stderr}"
    );

    let status = repo.status_json();
    assert_eq!(status["campaign"]["state"], "active");
    assert_eq!(verdicts(&status), ["keep", "pending"]);
    let samples = own_samples(&status, 1);
    let errors: Vec<&Value> = samples.iter().map(|m| &m["error"]).collect();
    assert_eq!(errors, [&Value::Null, &Value::from("interrupted")]);
    assert!(repo.leftover_checkouts().is_empty());
    let survivors = processes_mentioning(&repo.marker());
    assert!(survivors.is_empty(), "survivors: {survivors:?}");

    // The next run evaluates it again (the stall happens once).
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(verdicts(&repo.status_json()), ["keep", "keep"]);
}

#[test]
fn a_second_run_is_refused_while_one_works() {
    let repo = CampaignRepo::new();
    repo.start_campaign(PAIRED, "tok_s=1000\nnoise=0.01\n");
    repo.propose(&["tok_s=1100\nnoise=0.01\nstall_at=candidate-0\n"]);

    let first = spawn_run(&repo);
    repo.wait_for_signal("stalled");
    let second = repo.run_until_idle();
    let stderr = text(&second.stderr);
    assert_eq!(second.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with(&format!("error: another tally run (pid {} on ", first.id())),
        "{stderr}"
    );
    assert!(
        stderr.contains(") is working on campaign safety"),
        "{stderr}"
    );
    // Readers are welcome meanwhile.
    let status = repo.status_json();
    assert_eq!(verdicts(&status), ["keep", "pending"]);

    repo.signal("release");
    let out = first.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(verdicts(&repo.status_json()), ["keep", "keep"]);
}

#[test]
fn a_sample_killed_from_outside_is_retried_once_and_both_attempts_are_kept() {
    let repo = CampaignRepo::new();
    let config = format!(
        "{PAIRED}\n[[plugins.fact_source]]\nprovider = \"gpu_hours\"\nusd_per_gpu_hour = 3600\n"
    );
    repo.start_campaign(&config, "tok_s=1000\nnoise=0.01\n");
    repo.propose(&["tok_s=1100\nnoise=0.01\nterm_at=candidate-1\nsleep=0.2\n"]);
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    let status = repo.status_json();
    assert_eq!(verdicts(&status), ["keep", "keep"]);
    assert_measurements_consistent(&status);
    let samples = own_samples(&status, 1);
    let summary: Vec<(u64, u64, bool)> = samples
        .iter()
        .map(|m| {
            (
                m["sample"].as_u64().unwrap(),
                m["attempt"].as_u64().unwrap(),
                m["error"].is_null(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [(0, 1, true), (1, 1, false), (1, 2, true), (2, 1, true)]
    );
    assert_eq!(
        samples[1]["error"],
        "the evaluate command was killed by signal 15 (SIGTERM), not sent by tally"
    );
    // The retry is paired, the failed attempt is not, and the verdict counts three pairs.
    assert!(samples[1]["pair"].is_null());
    assert!(samples[2]["pair"].is_u64());
    let reason = candidate(&status, 1)["reason"].as_str().unwrap();
    assert!(reason.ends_with("over 3 pairs)"), "{reason}");
    // The killed attempt's GPU time is in the ledger ($1 per second).
    assert!(samples[1]["seconds"].as_f64().unwrap() >= 0.2);
    let seconds: f64 = measurements(&status)
        .iter()
        .map(|(_, m)| m["seconds"].as_f64().unwrap())
        .sum();
    let usd = status["facts"]["gpu_usd"].as_f64().unwrap();
    assert!(
        (usd - seconds).abs() <= 1e-9 * seconds,
        "{usd} vs {seconds}"
    );

    let show = text(&repo.tally(&["candidate", "show", "1"]).stdout);
    assert!(show.contains(" candidate sample 1 (attempt 2) "), "{show}");
}

#[test]
fn ctrl_c_during_init_leaves_the_baseline_to_the_next_run() {
    let repo = CampaignRepo::new();
    repo.write("tally.toml", PAIRED);
    repo.commit_bench("baseline", "tok_s=1000\nnoise=0.01\nstall_at=candidate-1\n");
    let init = repo
        .command(&["init"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    repo.wait_for_signal("stalled");
    kill(Pid::from_raw(init.id() as i32), Signal::SIGINT).unwrap();
    let out = init.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.ends_with(
            "interrupted (SIGINT): the baseline is measured by the next `tally init` or `tally run`\n"
        ),
        "{stderr}"
    );
    assert_eq!(verdicts(&repo.status_json()), ["pending"]);

    // `tally run` measures it as the baseline, not as a candidate judged against nothing.
    repo.propose(&["tok_s=1100\nnoise=0.01\n"]);
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let status = repo.status_json();
    assert_eq!(verdicts(&status), ["keep", "keep"]);
    let baseline = candidate(&status, 0)["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(baseline.starts_with("baseline: tok_s "), "{baseline}");
    let samples = own_samples(&status, 0);
    let errors: Vec<&Value> = samples.iter().map(|m| &m["error"]).collect();
    let ok = Value::Null;
    // The sample before Ctrl-C, the interrupted one, then the three of the re-queued job.
    assert_eq!(errors, [&ok, &Value::from("interrupted"), &ok, &ok, &ok]);
    assert!(
        candidate(&status, 1)["reason"]
            .as_str()
            .unwrap()
            .starts_with("against candidate#0: ")
    );
}

#[test]
fn sigterm_and_sighup_take_the_ctrl_c_path() {
    // `timeout 600 tally run` sends SIGTERM; a closed terminal or SSH session, SIGHUP. Either
    // kills the sample in flight with its process group, records it, removes the checkout and
    // exits with 128 + the signal's number after one line.
    for (signal, code, name) in [
        (Signal::SIGTERM, 143, "SIGTERM"),
        (Signal::SIGHUP, 129, "SIGHUP"),
    ] {
        let repo = CampaignRepo::new();
        repo.start_campaign(PAIRED, "tok_s=1000\nnoise=0.01\n");
        repo.propose(&["tok_s=1100\nnoise=0.01\nstall_at=candidate-1\n"]);
        let run = spawn_run(&repo);
        repo.wait_for_signal("stalled");
        kill(Pid::from_raw(run.id() as i32), signal).unwrap();
        let out = run.wait_with_output().unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{name}: {stderr}");
        assert!(
            stderr.ends_with(&format!(
                "interrupted ({name}): the sample in flight is recorded as failed and its \
                 candidate stays queued\n"
            )),
            "{name}: {stderr}"
        );
        let status = repo.status_json();
        assert_eq!(verdicts(&status), ["keep", "pending"], "{name}");
        let samples = own_samples(&status, 1);
        let errors: Vec<&Value> = samples.iter().map(|m| &m["error"]).collect();
        assert_eq!(
            errors,
            [&Value::Null, &Value::from("interrupted")],
            "{name}"
        );
        assert!(repo.leftover_checkouts().is_empty(), "{name}");
        let survivors = processes_mentioning(&repo.marker());
        assert!(survivors.is_empty(), "{name}: survivors: {survivors:?}");
    }
}

#[test]
fn sigterm_during_init_leaves_the_baseline_to_the_next_run() {
    let repo = CampaignRepo::new();
    repo.write("tally.toml", PAIRED);
    repo.commit_bench("baseline", "tok_s=1000\nnoise=0.01\nstall_at=candidate-1\n");
    let init = repo
        .command(&["init"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    repo.wait_for_signal("stalled");
    kill(Pid::from_raw(init.id() as i32), Signal::SIGTERM).unwrap();
    let out = init.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "{stderr}");
    assert!(
        stderr.ends_with(
            "interrupted (SIGTERM): the baseline is measured by the next `tally init` or `tally run`\n"
        ),
        "{stderr}"
    );
    assert!(repo.leftover_checkouts().is_empty());
    let survivors = processes_mentioning(&repo.marker());
    assert!(survivors.is_empty(), "survivors: {survivors:?}");
}

#[test]
fn init_cleans_up_what_a_killed_init_left() {
    // `kill -9` of `tally init` while it measures the baseline leaves the benchmark and its
    // checkout; the next `tally init` removes both before it measures again.
    let repo = CampaignRepo::new();
    repo.write("tally.toml", PAIRED);
    repo.commit_bench("baseline", "tok_s=1000\nnoise=0.01\nstall_at=candidate-1\n");
    let mut first = repo
        .command(&["init"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    repo.wait_for_signal("stalled");
    first.kill().unwrap(); // SIGKILL
    first.wait().unwrap();
    assert!(!processes_mentioning(&repo.marker()).is_empty());
    assert!(!repo.leftover_checkouts().is_empty());

    let out = repo.tally(&["init"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("removed 1 checkout(s) and stopped "),
        "{stderr}"
    );
    assert!(repo.leftover_checkouts().is_empty());
    let survivors = processes_mentioning(&repo.marker());
    assert!(survivors.is_empty(), "survivors: {survivors:?}");
    assert_eq!(verdicts(&repo.status_json()), ["keep"]);
}

#[test]
fn a_sample_whose_output_cannot_be_written_is_a_failed_sample() {
    // The first sample of candidate 1's evaluation writes its stdout log to a full disk
    // (`/dev/full`: every write fails with ENOSPC). Its METRIC line was read, but what it
    // printed was not kept whole: the sample fails and says why; nothing partial counts.
    let repo = CampaignRepo::new();
    repo.start_campaign(PAIRED, "tok_s=1000\nnoise=0.01\nseed=1\n");
    repo.propose(&["tok_s=1100\nnoise=0.01\nseed=2\n"]);
    let log_dir = repo.root().join(".tally/logs/safety/evaluation-2");
    std::fs::create_dir_all(&log_dir).unwrap();
    std::os::unix::fs::symlink("/dev/full", log_dir.join("candidate-0-a1.stdout.log")).unwrap();
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let status = repo.status_json();
    let samples = own_samples(&status, 1);
    let error = samples[0]["error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with("the benchmark's output could not be kept: ")
            && error.ends_with("(the disk is full)"),
        "{samples:#?}"
    );
    assert_eq!(verdicts(&status), ["keep", "crash"]);
}
