//! `[executor] kind = "slurm"` (`docs/team.md#executor`) against a real Slurm cluster: a
//! campaign judged through batch jobs reaches the verdicts the local executor reaches; a hanging
//! benchmark is cancelled at `evaluate_timeout` with every grandchild gone; a job that runs past
//! Slurm's own time limit, or a node that fails under it, is a failed sample with Slurm's reason; after `kill -9` of `tally run`,
//! the next run adopts the jobs it left — pending, or finished meanwhile — and cancels the
//! campaign's stray ones, so that every sample runs once (`docs/team.md#adopting`).
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
    job_files(repo).into_values().collect()
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

/// Brings the test cluster's nodes back when dropped (`scontrol update … state=resume`) and
/// waits until one is usable again, so a failing assertion leaves no node down for other tests.
struct NodesDown(String);

impl NodesDown {
    /// Marks `nodes` DOWN: Slurm kills the jobs running on them.
    fn now(nodes: &str) -> Self {
        let out = Command::new("scontrol")
            .args(["update", &format!("nodename={nodes}"), "state=down"])
            .arg("reason=tally test: node failure")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        Self(nodes.to_owned())
    }
}

impl Drop for NodesDown {
    fn drop(&mut self) {
        let _ = Command::new("scontrol")
            .args(["update", &format!("nodename={}", self.0), "state=resume"])
            .output();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !cluster_up("(waiting for the node to come back)")
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    }
}

/// A `tally run` that gets SIGINT (and so cancels its job) if the test fails before it ends.
struct Interrupted(Option<std::process::Child>);

impl Drop for Interrupted {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            let pid = nix::unistd::Pid::from_raw(child.id() as i32);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT);
            let _ = child.wait();
        }
    }
}

#[test]
fn a_node_that_fails_under_a_slurm_job_is_a_failed_sample_with_slurms_reason() {
    use std::process::Stdio;
    if !cluster_up("a_node_that_fails_under_a_slurm_job_is_a_failed_sample_with_slurms_reason") {
        return;
    }
    let repo = CampaignRepo::new();
    let config = ON_SLURM
        .replace("evaluate_timeout = 120", "evaluate_timeout = 600")
        .replace("repeats = 2", "repeats = 1\ndeterministic = true");
    repo.start_campaign(&config, "tok_s=1000\nnoise=0\n");
    repo.propose(&["tok_s=1000\nnoise=0\nsleep=400\n"]);
    let before = job_files(&repo);
    let mut run = Interrupted(Some(
        repo.command(&["run", "--until-idle"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    ));
    let (_, id) = wait_for_new_job(&repo, &before);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while job_field(&id, "JobState") != "RUNNING" {
        assert!(std::time::Instant::now() < deadline, "job {id} never ran");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // Submitted with `--no-requeue`: Slurm will not start it again once the node is back.
    assert_eq!(job_field(&id, "Requeue"), "0");
    let nodes = job_field(&id, "NodeList");
    let down = NodesDown::now(&nodes);
    let out = run.0.take().unwrap().wait_with_output().unwrap();
    drop(down);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let status = repo.status_json();
    assert_eq!(candidate(&status, 1)["verdict"], "crash");
    // One sample, one job: Slurm did not requeue it (`--no-requeue`) and tally did not retry it.
    let samples = own_samples(&status, 1);
    assert_eq!(samples.len(), 1, "{samples:#?}");
    let error = samples[0]["error"].as_str().unwrap();
    assert!(
        error.starts_with(&format!(
            "the batch system ended the job: Slurm job {id} ended NODE_FAIL"
        )),
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

/// Every `.slurm-job` file under the repository's log directory, with the id it records.
fn job_files(repo: &CampaignRepo) -> std::collections::BTreeMap<std::path::PathBuf, String> {
    let mut files = std::collections::BTreeMap::new();
    let mut dirs = vec![repo.root().join(".tally/logs")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "slurm-job") {
                let id = std::fs::read_to_string(&path).unwrap().trim().to_owned();
                files.insert(path, id);
            }
        }
    }
    files
}

/// A job's `Key=Value` field as `scontrol show job -o` shows it.
fn job_field(id: &str, key: &str) -> String {
    let shown = Command::new("scontrol")
        .args(["show", "job", "-o", id])
        .output()
        .unwrap();
    let prefix = format!("{key}=");
    text(&shown.stdout)
        .split_whitespace()
        .find_map(|f| f.strip_prefix(&prefix).map(str::to_owned))
        .unwrap_or_default()
}

/// Waits (at most 60 s) for the first `.slurm-job` file that is not in `before`.
fn wait_for_new_job(
    repo: &CampaignRepo,
    before: &std::collections::BTreeMap<std::path::PathBuf, String>,
) -> (std::path::PathBuf, String) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let new = job_files(repo)
            .into_iter()
            .find(|(path, id)| !before.contains_key(path) && !id.is_empty());
        if let Some(found) = new {
            return found;
        }
        assert!(std::time::Instant::now() < deadline, "no new Slurm job");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// The ids of the jobs Slurm still lists (not finished) whose comment starts with `tag`.
fn listed_with_tag(tag: &str) -> Vec<String> {
    let out = Command::new("squeue")
        .args(["--noheader", "--format=%i|%k"])
        .output()
        .unwrap();
    text(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once('|'))
        .filter(|(_, comment)| comment.starts_with(tag))
        .map(|(id, _)| id.trim().to_owned())
        .collect()
}

/// The slot's tag of a job tally submitted: its comment up to the attempt directory's name.
fn tag_of(id: &str) -> String {
    let comment = job_field(id, "Comment");
    let cut = comment.rfind(':').expect("a tally job's comment") + 1;
    comment[..cut].to_owned()
}

/// Every sample the benchmark started (`count=1`), as `<candidate> <side> <sample>`, sorted,
/// and every sample the store recorded, the same way: each job that ran is one measurement.
fn runs_and_measurements(repo: &CampaignRepo, status: &Value) -> (Vec<String>, Vec<String>) {
    let runs = std::fs::read_to_string(repo.signals().join("runs")).unwrap_or_default();
    let mut runs: Vec<String> = runs.lines().map(str::to_owned).collect();
    runs.sort();
    let mut recorded: Vec<String> = status["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| {
            let id = c["id"].as_u64().unwrap();
            c["measurements"]
                .as_array()
                .unwrap()
                .iter()
                .map(move |m| format!("{id} {} {}", m["side"].as_str().unwrap(), m["sample"]))
        })
        .collect();
    recorded.sort();
    (runs, recorded)
}

#[test]
fn kill_9_of_tally_with_a_running_slurm_job_reads_the_job_that_finished_meanwhile() {
    use std::process::Stdio;
    if !cluster_up("kill_9_of_tally_with_a_running_slurm_job_reads_the_job_that_finished_meanwhile")
    {
        return;
    }
    let repo = CampaignRepo::new();
    repo.start_campaign(ON_SLURM, "tok_s=1000\nnoise=0.01\nseed=1\ncount=1\n");
    repo.propose(&["tok_s=1250\nnoise=0.01\nseed=3\ncount=1\nstall_at=candidate-1\n"]);
    let before = job_files(&repo);
    let mut run = repo
        .command(&["run", "--until-idle"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The pair C B, B C: candidate sample 1, the fourth, stalls in its job.
    repo.wait_for_signal("stalled");
    run.kill().unwrap(); // SIGKILL: tally gets no chance to cancel anything
    run.wait().unwrap();
    let (stalled_file, stalled) = job_files(&repo)
        .into_iter()
        .filter(|(path, _)| !before.contains_key(path))
        .find(|(path, _)| path.ends_with("candidate-1-a1.slurm-job"))
        .expect("the stalled sample's job is recorded");
    assert_eq!(job_field(&stalled, "JobState"), "RUNNING");
    // The job finishes while no tally runs.
    repo.signal("release");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while job_field(&stalled, "JobState") != "COMPLETED" {
        assert!(
            std::time::Instant::now() < deadline,
            "the released job did not complete"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // A held job with the campaign's tag and no id on record, as an `sbatch` that did not
    // answer in time leaves one: nothing wants it.
    let tag = tag_of(&stalled);
    let stray = Command::new("sbatch")
        .args([
            "--parsable",
            "--hold",
            "--job-name=tally-stray",
            &format!("--comment={tag}sample-stray"),
            "--output=/dev/null",
            "--wrap=sleep 300",
        ])
        .output()
        .unwrap();
    assert!(stray.status.success(), "{}", text(&stray.stderr));
    let stray = text(&stray.stdout).trim().to_owned();

    let out = repo.run_until_idle();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("adopting 1 Slurm job(s) an earlier tally run left"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "cancelled 1 Slurm job(s) an earlier tally run left that nothing needs any more: {stray}"
        )),
        "{stderr}"
    );
    assert_eq!(job_field(&stray, "JobState"), "CANCELLED");
    // The finished job was read, not run again: every sample ran once and is one measurement,
    // all of one evaluation, and the verdict is the one of an uninterrupted run.
    let status = repo.status_json();
    let (runs, recorded) = runs_and_measurements(&repo, &status);
    assert_eq!(runs, recorded);
    assert_eq!(runs.len(), 2 + 4, "{runs:?}");
    assert_eq!(
        std::fs::read_to_string(&stalled_file).unwrap().trim(),
        stalled
    );
    let samples = own_samples(&status, 1);
    assert_eq!(samples.len(), 2, "{samples:#?}");
    assert!(samples.iter().all(|m| m["error"].is_null()), "{samples:#?}");
    assert_eq!(samples[0]["evaluation"], samples[1]["evaluation"]);
    assert_eq!(verdicts(&status), ["keep", "keep"]);
    let reason = candidate(&status, 1)["reason"].as_str().unwrap();
    assert!(reason.ends_with("over 2 pairs)"), "{reason}");
    assert!(listed_with_tag(&tag).is_empty());
    assert!(repo.leftover_checkouts().is_empty());
}

#[test]
fn kill_9_of_tally_with_a_pending_slurm_job_adopts_it_and_runs_it_once() {
    use std::process::Stdio;
    if !cluster_up("kill_9_of_tally_with_a_pending_slurm_job_adopts_it_and_runs_it_once") {
        return;
    }
    let repo = CampaignRepo::new();
    // Every job waits 10 s in the queue (`Reason=BeginTime`) before Slurm starts it.
    let config = ON_SLURM
        .replace("repeats = 2", "repeats = 1\ndeterministic = true")
        .replace("cpus = 1", "cpus = 1\nextra_args = [\"--begin=now+10\"]");
    repo.start_campaign(&config, "tok_s=1000\nnoise=0\ncount=1\n");
    repo.propose(&["tok_s=1250\nnoise=0\ncount=1\n"]);
    let before = job_files(&repo);
    let mut run = repo
        .command(&["run", "--until-idle"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (file, id) = wait_for_new_job(&repo, &before);
    run.kill().unwrap();
    run.wait().unwrap();
    // Queued (held, if tally was killed before it released it; else waiting for its start).
    assert_eq!(job_field(&id, "JobState"), "PENDING");
    let tag = tag_of(&id);

    let out = repo.run_until_idle();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("adopting 1 Slurm job(s) an earlier tally run left"),
        "{stderr}"
    );
    // The adopted job is the sample's only one: it ran once and was recorded once.
    assert_eq!(std::fs::read_to_string(&file).unwrap().trim(), id);
    assert_eq!(job_field(&id, "JobState"), "COMPLETED");
    let status = repo.status_json();
    let (runs, recorded) = runs_and_measurements(&repo, &status);
    assert_eq!(runs, recorded);
    assert_eq!(runs, ["0 candidate 0", "1 candidate 0"]);
    assert_eq!(verdicts(&status), ["keep", "keep"]);
    assert!(own_samples(&status, 1)[0]["error"].is_null());
    assert!(listed_with_tag(&tag).is_empty());
    assert!(repo.leftover_checkouts().is_empty());
}
