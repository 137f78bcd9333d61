//! What a new user meets in the first hour of a campaign, through the binary: advice when noise
//! leaves a gain unproven.

use regex::Regex;

use crate::campaign_repo::{CampaignRepo, candidate, section, text, verdicts};

const NOISY: &str = r#"
name = "noisy"
evaluate = ["./evaluate.sh"]

[[metrics]]
name = "tok_s"
direction = "higher"
role = "primary"
repeats = 3
"#;

#[test]
fn an_inconclusive_gain_says_what_would_settle_it() {
    // A real +10% change under ±20% noise: three pairs cannot show it. The reason says how much
    // the paired gains vary and how many pairs would, with the command that adds them.
    let repo = CampaignRepo::new();
    repo.start_campaign(NOISY, "tok_s=1000\nnoise=0.2\nseed=4\n");
    repo.propose(&["tok_s=1100\nnoise=0.2\nseed=2\n"]);
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let status = repo.status_json();
    assert_eq!(verdicts(&status), ["keep", "interesting"]);
    let reason = candidate(&status, 1)["reason"].as_str().unwrap().to_owned();
    let shape = Regex::new(
        r"over 3 pairs\): the gain is not significant; the paired gains vary by (\S+) \(sd\): if gain and spread hold, about (\d+) pairs would show it \(`repeats = (\d+)`, or `tally candidate remeasure 1` for more pairs\)$",
    )
    .unwrap();
    let caps = shape
        .captures(&reason)
        .unwrap_or_else(|| panic!("{reason}"));
    let (sd, n): (f64, usize) = (caps[1].parse().unwrap(), caps[2].parse().unwrap());
    assert_eq!(caps[2], caps[3]);
    assert!(sd > 0.0 && n > 3, "{reason}");
}

#[test]
fn a_commit_or_a_tree_that_is_already_a_candidate_is_not_queued_again() {
    let repo = CampaignRepo::new();
    let baseline = repo.start_campaign(NOISY, "tok_s=1000\nnoise=0.01\nseed=1\n");
    let revs = repo.propose(&["tok_s=1100\nnoise=0.01\nseed=2\n"]);
    // The same commit, the baseline, and an empty commit on top (the same tree as candidate#1).
    repo.git(&["commit", "-q", "--allow-empty", "-m", "empty"]);
    let empty = repo.git(&["rev-parse", "HEAD"]);
    let out = repo.tally(&["candidate", "add", &revs[0], &baseline, "HEAD"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        format!(
            "{}: already candidate#1 (the same commit); not queued (`--again` queues it anyway)\n\
             {baseline}: already candidate#0 (the same commit); not queued (`--again` queues it anyway)\n\
             HEAD: already candidate#1 (the same tree as {}); not queued (`--again` queues it anyway)\n",
            revs[0],
            &revs[0][..12]
        )
    );
    let status = repo.status_json();
    assert_eq!(status["candidates"].as_array().unwrap().len(), 2);
    // Twice in one command: the second is the same code as the first.
    repo.commit_bench("other", "tok_s=1200\nnoise=0.01\nseed=3\n");
    let out = repo.tally(&["candidate", "add", "HEAD", "HEAD"]);
    assert_eq!(
        text(&out.stdout).lines().next(),
        Some(
            "HEAD: the same code as HEAD, given before it; not queued (`--again` queues it anyway)"
        )
    );
    // `--again` queues what it is given.
    let out = repo.tally(&["candidate", "add", "--again", &empty]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with("candidate#3: "),
        "{}",
        text(&out.stdout)
    );
}

/// Whether process `pid` catches SIGINT (its handler is installed): `SigCgt` in `/proc`.
fn catches_sigint(pid: u32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (2 - 1)) != 0)
}

#[test]
fn ctrl_c_with_no_sample_running_says_nothing_was_recorded() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    use std::process::Stdio;
    let repo = CampaignRepo::new();
    repo.start_campaign(NOISY, "tok_s=1000\nnoise=0.01\nseed=1\n");
    // `tally run` without --until-idle waits for candidates on an empty queue.
    let run = repo
        .command(&["run"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !catches_sigint(run.id()) {
        assert!(std::time::Instant::now() < deadline, "no SIGINT handler");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    kill(Pid::from_raw(run.id() as i32), Signal::SIGINT).unwrap();
    let out = run.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("interrupted (SIGINT): no sample was running; nothing was recorded"),
        "{stderr}"
    );
    assert!(!stderr.contains("in flight"), "{stderr}");
}

#[test]
fn a_message_search_with_spaces_names_a_candidate() {
    // `:/<text>` is git's "youngest commit whose message matches"; the text may hold spaces.
    let repo = CampaignRepo::new();
    repo.start_campaign(NOISY, "tok_s=1000\nnoise=0.01\nseed=1\n");
    repo.write("bench.conf", "tok_s=1100\nnoise=0.01\nseed=2\n");
    repo.git(&["add", "-A"]);
    repo.git(&[
        "commit",
        "-q",
        "-m",
        "warm the decoder cache before the first step",
    ]);
    let commit = repo.git(&["rev-parse", "HEAD"]);
    repo.git(&["commit", "-q", "--allow-empty", "-m", "later work"]);
    let out = repo.tally(&["candidate", "add", ":/decoder cache before"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let status = repo.status_json();
    assert_eq!(candidate(&status, 1)["revision"], commit.as_str());
}

#[test]
fn an_uncommitted_change_to_the_evaluation_is_refused_not_measured() {
    // A broken `evaluate` in the working tree's tally.toml must not turn a good candidate into a
    // crash: `tally run` refuses until it is committed, and `tally status` says which is in force.
    let repo = CampaignRepo::new();
    repo.start_campaign(NOISY, "tok_s=1000\nnoise=0.01\nseed=1\n");
    repo.propose(&["tok_s=1100\nnoise=0.01\nseed=2\n"]);
    repo.write(
        "tally.toml",
        &NOISY.replace(
            "evaluate = [\"./evaluate.sh\"]",
            "evaluate = [\"./missing.sh\"]",
        ),
    );
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        "error: tally.toml's evaluation (evaluate, link or the judged metrics) differs from the \
         committed one; samples run the committed files, so commit the change first (git add \
         tally.toml && git commit), or `git stash` it to run with the committed one\n"
    );
    let status = repo.tally(&["status", "--json"]);
    assert!(
        text(&status.stderr).contains("`tally run` refuses until it is committed"),
        "{}",
        text(&status.stderr)
    );
    assert_eq!(verdicts(&repo.status_json()), ["keep", "pending"]);
    // An uncommitted change to the evaluate script itself is refused the same way.
    repo.write("tally.toml", NOISY);
    repo.write_executable("evaluate.sh", "#!/bin/sh\nexit 1\n");
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).starts_with("error: evaluate.sh has uncommitted changes; "),
        "{}",
        text(&out.stderr)
    );
    repo.git(&["checkout", "--", "evaluate.sh"]);
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(verdicts(&repo.status_json()), ["keep", "keep"]);
}

#[test]
fn a_failed_baseline_holds_the_campaign_until_init_measures_the_fixed_head() {
    let repo = CampaignRepo::new();
    repo.write("tally.toml", NOISY);
    let broken = repo.commit_bench("broken baseline", "mode=crash\n");
    let out = repo.tally(&["init"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains(&format!(
            "its baseline candidate#0 = {} failed: no successful measurement: ",
            &broken[..12]
        )),
        "{}",
        text(&out.stderr)
    );
    // A candidate queued meanwhile is not kept against nothing: the run holds (exit 3), naming
    // the command that measures a baseline.
    repo.propose(&["tok_s=1100\nnoise=0.01\nseed=2\n"]);
    let out = repo.run_until_idle();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "is held: the baseline candidate#0 ({}) has no successful measurement: the evaluate \
             command exited with status 3; stderr ends with: bench: the model failed to load; \
             nothing is judged without a bar: fix the benchmark, commit, and run `tally init` to \
             measure HEAD as the baseline",
            &broken[..12]
        )),
        "{stderr}"
    );
    let status = repo.status_json();
    assert_eq!(verdicts(&status), ["crash", "pending"]);
    assert_eq!(status["campaign"]["state"], "held");
    // `candidate remeasure 0` has no bar to measure against: refused, pointing at init.
    let out = repo.tally(&["candidate", "remeasure", "0"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("`tally init`"),
        "{}",
        text(&out.stderr)
    );

    // Fixed and committed: init measures the new HEAD, and says which candidate holds it.
    let fixed = repo.commit_bench("fixed baseline", "tok_s=1000\nnoise=0.01\nseed=1\n");
    let out = repo.tally(&["init"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.starts_with(&format!(
            "registered campaign `noisy`: baseline candidate#2 = {} (HEAD; tok_s ",
            &fixed[..12]
        )),
        "{stdout}"
    );
    let status = repo.status_json();
    assert_eq!(candidate(&status, 2)["revision"], fixed.as_str());
    assert_eq!(candidate(&status, 0)["revision"], broken.as_str());
    assert_eq!(verdicts(&status), ["crash", "pending", "keep"]);
    assert_eq!(status["head"]["candidate"], 2);
    // The queued candidate is now judged against the measured baseline.
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let status = repo.status_json();
    let reason = candidate(&status, 1)["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("against candidate#2: tok_s "),
        "{reason}"
    );
    assert_eq!(verdicts(&status), ["crash", "keep", "keep"]);
}

/// The `waiting` figure of the `evaluations` section of `tally status --json`.
fn waiting(repo: &CampaignRepo) -> String {
    let status = repo.status_json();
    let evaluations = section(&status, "evaluations").expect("an evaluations section");
    let figures = evaluations["blocks"][0]["figures"].as_array().unwrap();
    let figure = figures
        .iter()
        .find(|f| f["label"] == "waiting")
        .unwrap_or_else(|| panic!("{evaluations:#}"));
    figure["value"].as_str().unwrap().to_owned()
}

#[test]
fn an_interrupted_re_measurement_is_counted_as_waiting() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    use std::process::Stdio;
    let repo = CampaignRepo::new();
    repo.start_campaign(NOISY, "tok_s=1000\nnoise=0.01\nseed=1\n");
    // The candidate's first sample stalls — but not in its first evaluation (the signal file
    // that marks the stall as done exists then).
    std::fs::write(repo.signals().join("stalled"), "").unwrap();
    repo.propose(&["tok_s=1100\nnoise=0.01\nseed=2\nstall_at=candidate-0\n"]);
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(waiting(&repo), "0");
    std::fs::remove_file(repo.signals().join("stalled")).unwrap();

    let out = repo.tally(&["candidate", "remeasure", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(waiting(&repo), "1", "a queued re-measurement waits");
    let run = repo
        .command(&["run", "--until-idle"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    repo.wait_for_signal("stalled");
    kill(Pid::from_raw(run.id() as i32), Signal::SIGINT).unwrap();
    let out = run.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    // Interrupted during its samples: queued again, and status counts it.
    assert_eq!(waiting(&repo), "1");
    let status = repo.tally(&["status"]);
    let line = Regex::new(r"(?m)^ *waiting: +1 *$").unwrap();
    assert!(
        line.is_match(&text(&status.stdout)),
        "{}",
        text(&status.stdout)
    );
    // The next run resumes it; then nothing waits.
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(waiting(&repo), "0");
}

#[test]
fn a_crash_reason_is_one_line_and_candidate_show_has_the_whole_story() {
    let repo = CampaignRepo::new();
    repo.start_campaign(NOISY, "tok_s=1000\nnoise=0.01\nseed=1\n");
    repo.propose(&["mode=traceback\n"]);
    let out = repo.run_until_idle();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let why = "the evaluate command exited with status 1; stderr ends with: RuntimeError: CUDA out \
               of memory in model/loader.py";
    // The reason: the last line that says something, paths relative to the checkout.
    let status = repo.status_json();
    assert_eq!(
        candidate(&status, 1)["reason"],
        format!("no successful measurement: {why}").as_str()
    );
    // `tally run` prints the failure once, with its sample.
    assert_eq!(stderr.matches("RuntimeError").count(), 1, "{stderr}");
    assert!(
        stderr.contains("candidate sample 0 failed after ") && stderr.contains(why),
        "{stderr}"
    );
    assert!(
        stderr.contains("candidate#1: crash — no successful measurement (the failed sample above)"),
        "{stderr}"
    );
    let cache = repo.worktree_cache().display().to_string();
    let table = text(&repo.tally(&["status"]).stdout);
    assert!(
        table.contains("model/loader.py") && !table.contains(&cache),
        "{table}"
    );

    // `candidate show`: every sample, its log files, and the end of a failed one's stderr.
    let out = repo.tally(&["candidate", "show", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let show = text(&out.stdout);
    assert!(show.contains("  measurements: 1\n"), "{show}");
    assert!(
        show.contains("      logs: stdout .tally/logs/") && show.contains(".stderr.log\n"),
        "{show}"
    );
    assert!(show.contains("      stderr ends:\n"), "{show}");
    assert!(show.contains("        | ----\n"), "{show}");
    assert!(show.contains("model/layer_39.py"), "{show}");
    assert!(!show.contains("layer_0.py"), "at most 20 lines: {show}");
    // The whole stderr is kept, in the log file the store names.
    let out = repo.tally(&["candidate", "show", "1", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let log = json["measurements"][0]["stderr_log"].as_str().unwrap();
    let whole = std::fs::read_to_string(repo.root().join(log)).unwrap();
    assert_eq!(whole.lines().count(), 42, "{whole}");
    assert!(whole.contains("layer_0.py"));
    assert_eq!(json["measurements"][0]["units"], serde_json::json!({}));
}
