//! `[executor] kind = "slurm"` (`docs/team.md#executor`) against a real Slurm cluster: a
//! campaign judged through batch jobs reaches the verdicts the local executor reaches; a hanging
//! benchmark is cancelled at `evaluate_timeout` with every grandchild gone; a job that runs past
//! Slurm's own time limit is a failed sample with Slurm's reason.
//!
//! They need `sbatch` and a cluster whose node is up (`scripts/slurm-test-cluster.sh start`
//! makes one on this machine); otherwise each test prints a `SKIPPED` line and returns.

#![allow(clippy::print_stderr)]

use std::process::Command;

use serde_json::Value;

use crate::campaign_repo::{CampaignRepo, candidate, processes_mentioning, text, verdicts};

/// One primary metric, two pairs per evaluation, on Slurm.
const ON_SLURM: &str = r#"
name = "cluster"
evaluate = ["./evaluate.sh"]
evaluate_timeout = 120

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

/// Whether a Slurm cluster answers with a usable node; prints why the test is skipped if not.
pub(crate) fn cluster_up(test: &str) -> bool {
    let answer = Command::new("sinfo").args(["-h", "-o", "%T"]).output();
    let states = match &answer {
        Ok(out) if out.status.success() => text(&out.stdout),
        Ok(out) => {
            eprintln!(
                "SKIPPED {test}: the Slurm cluster is down ({}); start one with \
                 `scripts/slurm-test-cluster.sh start`",
                text(&out.stderr).trim().lines().last().unwrap_or_default()
            );
            return false;
        }
        Err(err) => {
            eprintln!(
                "SKIPPED {test}: no Slurm client ({err}); install slurm-client and start a \
                 cluster with `scripts/slurm-test-cluster.sh start`"
            );
            return false;
        }
    };
    let usable = states
        .split_whitespace()
        .any(|s| matches!(s.trim_end_matches('*'), "idle" | "mixed" | "allocated"));
    if !usable {
        eprintln!(
            "SKIPPED {test}: no Slurm node is up (sinfo: {})",
            states.trim()
        );
    }
    usable
}

/// The candidate's own samples (not the bar's).
fn own_samples(status: &Value, id: u64) -> Vec<Value> {
    candidate(status, id)["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["side"] == "candidate")
        .cloned()
        .collect()
}

/// Every Slurm job id tally recorded in the repository's log directory.
pub(crate) fn recorded_jobs(repo: &CampaignRepo) -> Vec<String> {
    let mut ids = Vec::new();
    let mut dirs = vec![repo.root().join(".tally/logs")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "slurm-job") {
                ids.push(std::fs::read_to_string(&path).unwrap().trim().to_owned());
            }
        }
    }
    ids
}

#[test]
fn a_slurm_campaign_reaches_the_verdicts_of_a_local_one() {
    if !cluster_up("a_slurm_campaign_reaches_the_verdicts_of_a_local_one") {
        return;
    }
    let confs = [
        "tok_s=1250\nnoise=0.01\nseed=3\n",
        "tok_s=900\nnoise=0.01\nseed=4\n",
    ];
    let baseline = "tok_s=1000\nnoise=0.01\nseed=1\n";
    let repo = CampaignRepo::new();
    repo.start_campaign(ON_SLURM, baseline);
    repo.propose(&confs);
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let status = repo.status_json();

    let local = CampaignRepo::new();
    let local_config = ON_SLURM.split("[executor]").next().unwrap();
    local.start_campaign(local_config, baseline);
    local.propose(&confs);
    let out = local.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let expected = local.status_json();

    assert_eq!(verdicts(&status), verdicts(&expected));
    assert_eq!(verdicts(&status)[1..], ["keep", "discard"]);
    assert_eq!(status["head"]["candidate"], expected["head"]["candidate"]);
    // Each sample was a job whose id tally recorded, each job a different one.
    let mut jobs = recorded_jobs(&repo);
    let samples: usize = (1..=2)
        .map(|id| {
            candidate(&status, id)["measurements"]
                .as_array()
                .unwrap()
                .len()
        })
        .sum();
    assert!(
        jobs.len() >= samples,
        "{} jobs for {samples} samples",
        jobs.len()
    );
    jobs.sort();
    jobs.dedup();
    assert!(jobs.len() >= samples);
    assert!(repo.leftover_checkouts().is_empty());
}

#[test]
fn a_hanging_benchmark_on_slurm_is_cancelled_at_the_timeout_with_its_grandchildren() {
    if !cluster_up(
        "a_hanging_benchmark_on_slurm_is_cancelled_at_the_timeout_with_its_grandchildren",
    ) {
        return;
    }
    let repo = CampaignRepo::new();
    let config = ON_SLURM
        .replace("evaluate_timeout = 120", "evaluate_timeout = 4")
        .replace("repeats = 2", "repeats = 1\ndeterministic = true");
    repo.start_campaign(&config, "tok_s=1000\nnoise=0\n");
    repo.propose(&["mode=hang\n"]);

    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // The benchmark's three grandchildren (one in a session of its own) were running when the
    // timeout struck...
    for child in ["child-1", "child-2", "child-3"] {
        assert!(repo.signals().join(child).exists(), "{child} never started");
    }
    // ...and none of them, nor the benchmark, survives: scancel ended the whole job.
    let survivors = processes_mentioning(&repo.marker());
    assert!(survivors.is_empty(), "survivors: {survivors:?}");
    assert!(repo.leftover_checkouts().is_empty());
    assert!(
        !recorded_jobs(&repo).is_empty(),
        "no Slurm job was recorded"
    );

    let status = repo.status_json();
    assert_eq!(candidate(&status, 1)["verdict"], "crash");
    let samples = own_samples(&status, 1);
    assert_eq!(samples.len(), 1, "a timeout is not retried: {samples:#?}");
    let error = samples[0]["error"].as_str().unwrap();
    assert!(
        error.starts_with("the evaluate command timed out after 4 s"),
        "{error}"
    );
    assert!(samples[0]["seconds"].as_f64().unwrap() >= 4.0);
}

#[test]
fn a_job_past_slurms_time_limit_is_a_failed_sample_with_slurms_reason() {
    if !cluster_up("a_job_past_slurms_time_limit_is_a_failed_sample_with_slurms_reason") {
        return;
    }
    let repo = CampaignRepo::new();
    // Slurm counts time limits in minutes: the shortest is one, and its check runs about
    // every 30 s, so this test takes 1-2 minutes.
    let config = ON_SLURM
        .replace("evaluate_timeout = 120", "evaluate_timeout = 600")
        .replace("time_limit = \"5:00\"", "time_limit = 1")
        .replace("repeats = 2", "repeats = 1\ndeterministic = true");
    repo.start_campaign(&config, "tok_s=1000\nnoise=0\n");
    repo.propose(&["tok_s=1000\nnoise=0\nsleep=400\n"]);

    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let status = repo.status_json();
    assert_eq!(candidate(&status, 1)["verdict"], "crash");
    let samples = own_samples(&status, 1);
    assert_eq!(samples.len(), 1, "{samples:#?}");
    let error = samples[0]["error"].as_str().unwrap();
    assert!(
        error.starts_with("the batch system ended the job: Slurm job ")
            && error.contains(
                " ended TIMEOUT (it ran past the job's time limit, [executor] time_limit)"
            ),
        "{error}"
    );
    let survivors = processes_mentioning(&repo.marker());
    assert!(survivors.is_empty(), "survivors: {survivors:?}");
    assert!(repo.leftover_checkouts().is_empty());
}

#[test]
fn ctrl_c_during_a_slurm_sample_cancels_the_job_and_everything_in_it() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    use std::process::Stdio;
    if !cluster_up("ctrl_c_during_a_slurm_sample_cancels_the_job_and_everything_in_it") {
        return;
    }
    let repo = CampaignRepo::new();
    let config = ON_SLURM.replace("repeats = 2", "repeats = 1\ndeterministic = true");
    repo.start_campaign(&config, "tok_s=1000\nnoise=0\n");
    repo.propose(&["mode=hang\n"]);
    let run = repo
        .command(&["run", "--until-idle"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The job runs, its grandchildren too.
    for child in ["child-1", "child-2", "child-3"] {
        repo.wait_for_signal(child);
    }
    kill(Pid::from_raw(run.id() as i32), Signal::SIGINT).unwrap();
    let out = run.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    let survivors = processes_mentioning(&repo.marker());
    assert!(survivors.is_empty(), "survivors: {survivors:?}");
    assert!(repo.leftover_checkouts().is_empty());
    // Slurm reports the hanging job cancelled (it keeps finished jobs for MinJobAge, 300 s by
    // default); the baseline's jobs completed.
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
        1,
        "{states:?}"
    );
    assert!(
        states.iter().all(|s| s == "CANCELLED" || s == "COMPLETED"),
        "{states:?}"
    );
}
