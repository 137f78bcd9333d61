//! Implementer runs through the binary (`docs/implementers.md#runs`): a scripted implementer — a
//! POSIX shell script committed in the test repository, steered by `SCRIPT:` lines in the idea's
//! text — is launched by `tally run --until-idle` in a real worktree, and each way a run can end
//! is checked: its commits queued and judged in order, unsaved work recovered but not measured,
//! a timeout (SIGTERM, then SIGKILL 10 s later) and a background child killed (no process with
//! the run's tag survives), a failing exit, a missing program and the start-up breaker, a HEAD
//! that left the base, a commit that repeats the base's tree, a commit that fails the
//! `[checks]`, the `Tally-Eval`/`Tally-Note` trailers, a `tally run` killed while its agent
//! works (the agent adopted, or collected when dead); and what a run leaves for later briefs
//! (its finding).

use std::path::PathBuf;

use serde_json::Value;

use crate::campaign_repo::{CampaignRepo, candidate, processes_mentioning, section, text};

/// The scripted implementer: `SCRIPT: mode=M` picks what it does, `SCRIPT: conf=K=V` the
/// `bench.conf` lines its commits write. It records its environment and directory in
/// `$E2E_DIR/env-<run>` and `$E2E_DIR/pwd-<run>`.
pub(crate) const SCRIPTED: &str = r#"#!/bin/sh
set -eu
brief=$1
env > "$E2E_DIR/env-$TALLY_RUN"
pwd > "$E2E_DIR/pwd-$TALLY_RUN"
ls -A > "$E2E_DIR/ls-$TALLY_RUN"
cp "$brief" "$E2E_DIR/brief-$TALLY_RUN"
mode=$(sed -n 's/^SCRIPT: mode=//p' "$brief" | tail -n 1)
confs=$(sed -n 's/^SCRIPT: conf=//p' "$brief")
commit_each() {
    for c in $confs; do
        printf '%s\n' "$c" | tr ',' '\n' > bench.conf
        git commit -qam "agent: $c"
    done
}
case "$mode" in
ok) commit_each ;;
finding)
    printf 'tried %s on run %s\nit moved tok_s\n' "$confs" "$TALLY_RUN" > "$TALLY_FINDING_FILE"
    commit_each || : ;;
no-commit) : ;;
dirty) printf 'tok_s=1300\n' > bench.conf; echo noise > .aider.chat.history.md ;;
noise) echo noise > .aider.chat.history.md ;;
continue-later)
    # Run 1 leaves its edit unsaved and works until killed; later runs record where they start.
    cp bench.conf "$E2E_DIR/conf-$TALLY_RUN"
    if [ "$TALLY_RUN" = 1 ]; then
        printf 'tok_s=1300\n' > bench.conf
        touch "$E2E_DIR/working-1"
        sleep 300
    fi ;;
delete-pins)
    git for-each-ref --format='%(refname)' refs/tally | while read -r pin; do git update-ref -d "$pin"; done
    commit_each ;;
continue)
    # Run 1 leaves its edit unsaved; a later run commits it when its worktree already has it.
    cp bench.conf "$E2E_DIR/conf-$TALLY_RUN"
    if [ "$TALLY_RUN" = 1 ]; then printf 'tok_s=1300\n' > bench.conf
    elif grep -q 'tok_s=1300' bench.conf; then git commit -q --allow-empty -m "agent: keep run 1's edit"
    fi ;;
fail) commit_each; echo "agent: the model refused" >&2; exit 3 ;;
leave-base) git checkout -q --orphan elsewhere; git commit -qm "no history" ;;
revert) git commit -q --allow-empty -m "nothing changed" ;;
edit-evaluate) echo 'echo METRIC tok_s=99999; exit 0' > evaluate.sh; git commit -qam "faster benchmark"; commit_each ;;
timed)
    # Records when it works, as the test's evaluate wrapper records evaluations.
    date +%s%N > "$E2E_DIR/agent-start-$TALLY_RUN"
    sleep 3
    commit_each
    date +%s%N > "$E2E_DIR/agent-end-$TALLY_RUN" ;;
wait)
    # Works once the test releases it (ends when the test's directory is gone).
    while [ ! -e "$E2E_DIR/release-agent" ] && [ -d "$E2E_DIR" ]; do sleep 0.05; done
    commit_each ;;
wait-notes)
    while [ ! -e "$E2E_DIR/release-agent" ] && [ -d "$E2E_DIR" ]; do sleep 0.05; done
    echo "batch the prefill" > notes.txt
    git add notes.txt
    git commit -qm "agent: notes" ;;
sleep)
    commit_each
    touch "$E2E_DIR/working-$TALLY_RUN"
    setsid sh -c 'sleep 20; echo late > late.txt; git add late.txt; git commit -qm late' &
    trap 'touch "$E2E_DIR/term-$TALLY_RUN"' TERM
    while :; do sh -c 'trap "" TERM; sleep 0.2'; done ;;
trailers)
    printf 'tok_s=1300\n' > bench.conf
    git commit -qam "try a thing" -m "Tally-Eval: skip"
    printf 'tok_s=800\n' > bench.conf
    git commit -qam "slower but simpler" -m "Signed-off-by: A <a@example.com>
Piloop-Note: slower, but it removes the lock" ;;
wait-go)
    touch "$E2E_DIR/working-$TALLY_RUN"
    while [ ! -e "$E2E_DIR/go-$TALLY_RUN" ]; do sleep 0.1; done
    commit_each ;;
go-boost)
    # Waits for its go signal, then commits each `SCRIPT: boost=` value to boost.conf, a file
    # no other mode writes.
    touch "$E2E_DIR/working-$TALLY_RUN"
    while [ ! -e "$E2E_DIR/go-$TALLY_RUN" ] && [ -d "$E2E_DIR" ]; do sleep 0.1; done
    for b in $(sed -n 's/^SCRIPT: boost=//p' "$brief"); do
        printf '%s\n' "$b" > boost.conf
        git add boost.conf
        git commit -qm "agent: boost $b"
    done ;;
dirty-sleep)
    printf 'tok_s=1300\n' > bench.conf
    touch "$E2E_DIR/working-$TALLY_RUN"
    sleep 300 ;;
term-commit)
    trap 'commit_each; touch "$E2E_DIR/term-$TALLY_RUN"; exit 0' TERM
    touch "$E2E_DIR/working-$TALLY_RUN"
    while :; do sleep 0.1; done ;;
esac
"#;

pub(crate) fn config(extra: &str) -> String {
    format!(
        r#"
name = "agents"
evaluate = ["./evaluate.sh"]

[[metrics]]
name = "tok_s"
direction = "higher"
role = "primary"
repeats = 2

[implementer]
command = ["sh", "agent.sh", "{{brief_file}}"]
ignore = [".aider*"]
{extra}
"#
    )
}

/// A registered campaign (baseline `tok_s=1000`) with the scripted implementer committed.
pub(crate) fn campaign(extra: &str) -> CampaignRepo {
    let repo = CampaignRepo::new();
    repo.write_executable("agent.sh", SCRIPTED);
    repo.start_campaign(&config(extra), "tok_s=1000\n");
    repo
}

pub(crate) fn add_idea(repo: &CampaignRepo, title: &str, script: &str) {
    let out = repo.tally(&["idea", "add", title, "--text", script, "--attempts", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

pub(crate) fn run(repo: &CampaignRepo) -> String {
    let out = repo.run_until_idle();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    stderr
}

pub(crate) fn ideas(repo: &CampaignRepo) -> Value {
    let out = repo.tally(&["idea", "list", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The environment the agent of run `n` saw, as `NAME=value` lines.
pub(crate) fn agent_env(repo: &CampaignRepo, n: u32) -> String {
    std::fs::read_to_string(repo.signals().join(format!("env-{n}"))).unwrap_or_default()
}

pub(crate) fn tag(repo: &CampaignRepo, n: u32) -> String {
    agent_env(repo, n)
        .lines()
        .find_map(|l| l.strip_prefix("TALLY_RUN_TAG="))
        .expect("the agent's environment has its tag")
        .to_string()
}

pub(crate) fn assert_nothing_survives(repo: &CampaignRepo, n: u32) {
    let tag = tag(repo, n);
    assert_eq!(processes_mentioning(&tag), vec![], "processes of run#{n}");
}

#[test]
fn two_commits_are_queued_in_order_and_judged_against_the_moving_head() {
    let repo = campaign("");
    repo.git(&["config", "--unset", "user.email"]);
    add_idea(
        &repo,
        "two steps",
        "SCRIPT: mode=ok\nSCRIPT: conf=tok_s=1200\nSCRIPT: conf=tok_s=1500\n",
    );
    // No identity anywhere: not in the repository, not in a global file.
    let out = repo
        .command(&["run", "--until-idle"])
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let ideas = ideas(&repo);
    let idea = &ideas[0];
    assert_eq!(idea["state"], "done", "its one attempt is used");
    let runs = idea["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["end"], "finished");
    assert_eq!(runs[0]["exit_code"], 0);
    let commits = runs[0]["commits"].as_array().unwrap();
    assert_eq!(
        commits
            .iter()
            .map(|c| (c["candidate"].as_u64(), c["note"].as_str().unwrap()))
            .collect::<Vec<_>>(),
        [(Some(1), "queued"), (Some(2), "queued")]
    );
    let status = repo.status_json();
    assert_eq!(candidate(&status, 1)["verdict"], "keep");
    assert_eq!(candidate(&status, 2)["verdict"], "keep");
    assert_eq!(status["head"]["candidate"], 2, "the head moved twice");
    // The commits are pinned, and the worktree is gone.
    let pinned = repo.git(&["for-each-ref", "--format=%(refname)", "refs/tally/"]);
    assert_eq!(
        pinned,
        "refs/tally/agents/runs/1/1\nrefs/tally/agents/runs/1/2"
    );
    let run_dir = PathBuf::from(runs[0]["run_dir"].as_str().unwrap());
    assert!(!run_dir.join("worktree").exists());
    assert!(run_dir.join("stdout.log").is_file() && run_dir.join("brief.md").is_file());

    // The agent ran outside the repository, in a worktree at the base, with tally's variables,
    // no store location, and tally's git identity (the repository has no email configured).
    let pwd = std::fs::read_to_string(repo.signals().join("pwd-1")).unwrap();
    assert!(
        !pwd.trim().starts_with(&repo.root().display().to_string()),
        "{pwd}"
    );
    assert_eq!(pwd.trim(), run_dir.join("worktree").display().to_string());
    let env = agent_env(&repo, 1);
    for needle in [
        "TALLY_RUN=1\n",
        "TALLY_ACTOR=implementer#1\n",
        "GIT_AUTHOR_EMAIL=run-1@tally.invalid\n",
    ] {
        assert!(env.contains(needle), "{needle} missing in\n{env}");
    }
    let brief = run_dir.join("brief.md").display().to_string();
    assert!(env.contains(&format!("TALLY_BRIEF={brief}\n")), "{env}");
    assert!(!env.contains("TALLY_DATABASE_URL"), "{env}");
    assert_nothing_survives(&repo, 1);

    // The brief the launch wrote is what `tally brief --idea 1` prints on the same state... up
    // to the state that changed since: compare the parts that do not depend on it.
    let written = std::fs::read_to_string(run_dir.join("brief.md")).unwrap();
    assert!(
        written
            .starts_with("# Implementer brief: idea#1\n\n## Rules\n\n- You are in a git worktree"),
        "{written}"
    );
    assert!(written.ends_with("## Your idea: two steps\n\nSCRIPT: mode=ok\nSCRIPT: conf=tok_s=1200\nSCRIPT: conf=tok_s=1500\n"), "{written}");
}

#[test]
fn the_brief_printed_for_an_idea_is_the_one_a_launch_writes() {
    let repo = campaign("");
    add_idea(&repo, "nothing", "SCRIPT: mode=no-commit\n");
    let out = repo.tally(&["brief", "--idea", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let printed = text(&out.stdout);
    run(&repo);
    let idea = &ideas(&repo)[0];
    let run_dir = PathBuf::from(idea["runs"][0]["run_dir"].as_str().unwrap());
    assert_eq!(
        std::fs::read_to_string(run_dir.join("brief.md")).unwrap(),
        printed
    );
    assert_eq!(idea["runs"][0]["end"], "no_commits");
    assert_eq!(idea["state"], "done");
    assert_eq!(
        repo.status_json()["candidates"].as_array().unwrap().len(),
        1,
        "only the baseline"
    );
}

#[test]
fn unsaved_work_is_recovered_but_not_measured_and_noise_is_ignored() {
    let repo = campaign("");
    add_idea(&repo, "dirty", "SCRIPT: mode=dirty\n");
    add_idea(&repo, "noise", "SCRIPT: mode=noise\n");
    run(&repo);
    let ideas = ideas(&repo);
    let dirty = &ideas[0]["runs"][0];
    assert_eq!(dirty["end"], "interrupted");
    let commits = dirty["commits"].as_array().unwrap();
    assert_eq!(commits.len(), 1);
    assert_eq!(commits[0]["note"], "recovered: unsaved work, not measured");
    assert_eq!(commits[0]["candidate"], Value::Null);
    let recovered = commits[0]["revision"].as_str().unwrap();
    let message = repo.git(&["log", "-1", "--format=%B", recovered]);
    assert!(message.contains("Tally-Recovered: run#1"), "{message}");
    let files = repo.git(&["show", "--format=", "--name-only", recovered]);
    assert_eq!(
        files, "bench.conf",
        "the ignored .aider file is not captured"
    );
    assert_eq!(ideas[1]["runs"][0]["end"], "no_commits");
    assert_eq!(
        repo.status_json()["candidates"].as_array().unwrap().len(),
        1,
        "nothing queued"
    );
}

#[test]
fn a_failing_exit_is_recorded_and_its_commit_still_judged() {
    let repo = campaign("");
    add_idea(
        &repo,
        "fails",
        "SCRIPT: mode=fail\nSCRIPT: conf=tok_s=1250\n",
    );
    run(&repo);
    let run0 = &ideas(&repo)[0]["runs"][0];
    assert_eq!(run0["end"], "failed");
    assert_eq!(run0["exit_code"], 3);
    assert_eq!(run0["error"], "exit 3; stderr: agent: the model refused");
    assert_eq!(candidate(&repo.status_json(), 1)["verdict"], "keep");
}

#[test]
fn a_run_past_its_timeout_is_killed_with_its_background_child() {
    let repo = campaign("timeout = 3\nwrap_up = 1\n");
    add_idea(
        &repo,
        "sleeps",
        "SCRIPT: mode=sleep\nSCRIPT: conf=tok_s=1200\n",
    );
    let started = std::time::Instant::now();
    run(&repo);
    // SIGTERM at the timeout (3 s), which it ignores; SIGKILL 10 s later.
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(12),
        "killed {:?} after the start, before timeout + 10 s",
        started.elapsed()
    );
    assert!(
        repo.signals().join("term-1").exists(),
        "it got SIGTERM first"
    );
    let run0 = &ideas(&repo)[0]["runs"][0];
    assert_eq!(run0["end"], "timed_out");
    let commits = run0["commits"].as_array().unwrap();
    assert_eq!(
        commits.len(),
        1,
        "the late child's commit never lands: {commits:?}"
    );
    assert_eq!(
        candidate(&repo.status_json(), 1)["verdict"],
        "keep",
        "its commit is judged"
    );
    let run_dir = PathBuf::from(run0["run_dir"].as_str().unwrap());
    assert!(
        run_dir.join("wrap-up").is_file(),
        "the wrap-up file appeared"
    );
    assert_nothing_survives(&repo, 1);
    std::thread::sleep(std::time::Duration::from_secs(5));
    assert_nothing_survives(&repo, 1);
    assert!(!repo.root().join("late.txt").exists());
}

#[test]
fn at_the_timeout_an_agent_gets_sigterm_and_what_it_commits_then_is_judged() {
    let repo = campaign("timeout = 2\nwrap_up = 1\n");
    add_idea(
        &repo,
        "until told",
        "SCRIPT: mode=term-commit\nSCRIPT: conf=tok_s=1200\n",
    );
    run(&repo);
    assert!(repo.signals().join("term-1").exists(), "it got SIGTERM");
    let run0 = &ideas(&repo)[0]["runs"][0];
    assert_eq!(run0["end"], "timed_out");
    assert_eq!(run0["commits"][0]["candidate"], 1, "{run0}");
    assert_eq!(candidate(&repo.status_json(), 1)["verdict"], "keep");
    assert_nothing_survives(&repo, 1);
}

#[test]
fn a_skip_trailer_is_not_measured_and_a_noted_discard_becomes_interesting() {
    let repo = campaign("");
    add_idea(&repo, "steered", "SCRIPT: mode=trailers\n");
    let stderr = run(&repo);
    let run0 = &ideas(&repo)[0]["runs"][0];
    assert_eq!(run0["end"], "finished", "{stderr}");
    let commits = run0["commits"].as_array().unwrap();
    assert_eq!(
        commits
            .iter()
            .map(|c| (c["candidate"].as_u64(), c["note"].as_str().unwrap()))
            .collect::<Vec<_>>(),
        [
            (None, "skipped: Tally-Eval: skip"),
            (
                Some(1),
                "queued; Tally-Note: slower, but it removes the lock"
            )
        ],
        "{stderr}"
    );
    let status = repo.status_json();
    assert_eq!(
        status["candidates"].as_array().unwrap().len(),
        2,
        "the skipped commit is no candidate"
    );
    let noted = candidate(&status, 1);
    assert_eq!(noted["verdict"], "interesting", "{stderr}");
    assert_eq!(noted["reason"], "slower, but it removes the lock");
    assert_eq!(
        noted["measurements"].as_array().unwrap().len(),
        2,
        "it was measured and judged first"
    );
    assert!(
        stderr.contains("candidate#1: interesting — slower, but it removes the lock (Tally-Note; the loop said discard"),
        "{stderr}"
    );
    assert_eq!(status["head"]["candidate"], 0, "the head did not move");
}

#[test]
fn a_missing_program_does_not_start_and_parks_the_idea_after_two_tries() {
    let repo = CampaignRepo::new();
    repo.start_campaign(
        &config("").replace(
            "command = [\"sh\", \"agent.sh\", \"{brief_file}\"]",
            "command = [\"no-such-agent\", \"{brief_file}\"]",
        ),
        "tok_s=1000\n",
    );
    add_idea(&repo, "never", "SCRIPT: mode=ok\n");
    let stderr = run(&repo);
    let idea = &ideas(&repo)[0];
    let runs = idea["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{stderr}");
    assert!(runs.iter().all(|r| r["end"] == "not_started"), "{runs:?}");
    assert!(
        !stderr.contains("usage:"),
        "a run that did not start has no usage to read: {stderr}"
    );
    assert!(
        runs[0]["error"]
            .as_str()
            .unwrap()
            .starts_with("the agent did not start (exit 127)"),
        "{runs:?}"
    );
    assert_eq!(idea["state"], "parked");
    assert_eq!(idea["reason"], "its implementer did not start twice");
}

#[test]
fn three_runs_that_do_not_start_trip_the_breaker_until_the_campaign_is_resumed() {
    let repo = CampaignRepo::new();
    repo.write_executable("agent.sh", SCRIPTED);
    repo.start_campaign(
        &config("").replace(
            "command = [\"sh\", \"agent.sh\", \"{brief_file}\"]",
            "command = [\"no-such-agent\", \"{brief_file}\"]",
        ),
        "tok_s=1000\n",
    );
    add_idea(&repo, "first", "SCRIPT: mode=ok\nSCRIPT: conf=tok_s=1100\n");
    add_idea(
        &repo,
        "second",
        "SCRIPT: mode=ok\nSCRIPT: conf=tok_s=1200\n",
    );
    // idea#1 does not start twice (parked), idea#2 once: the third trips the breaker.
    let out = repo.run_until_idle();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("is held: start-up breaker: 3 implementer runs did not start within 10 minutes (run#1, run#2, run#3; the last: the agent did not start (exit 127)"),
        "{stderr}"
    );
    assert!(stderr.contains("then `tally campaign resume`"), "{stderr}");
    let listed = ideas(&repo);
    assert_eq!(listed[0]["state"], "parked");
    assert_eq!(listed[1]["state"], "ready");
    assert_eq!(listed[1]["runs"].as_array().unwrap().len(), 1);
    // Held: a second `tally run` launches nothing.
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert_eq!(ideas(&repo)[1]["runs"].as_array().unwrap().len(), 1);

    // The fix (the program exists now), then resume: idea#2 is launched and judged.
    let bin = repo.signals().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let agent = bin.join("no-such-agent");
    std::fs::write(
        &agent,
        format!(
            "#!/bin/sh\nexec sh {}/agent.sh \"$@\"\n",
            repo.root().display()
        ),
    )
    .unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&agent)
        .status()
        .unwrap();
    let out = repo.tally(&["campaign", "resume"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let out = repo
        .command(&["run", "--until-idle"])
        .env("PATH", path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let second = &ideas(&repo)[1];
    assert_eq!(second["runs"][1]["end"], "finished", "{second}");
    assert_eq!(candidate(&repo.status_json(), 1)["verdict"], "keep");
}

#[test]
fn a_head_that_left_the_base_and_a_repeated_tree_are_not_measured() {
    let repo = campaign("");
    add_idea(&repo, "orphan", "SCRIPT: mode=leave-base\n");
    add_idea(&repo, "empty", "SCRIPT: mode=revert\n");
    run(&repo);
    let ideas = ideas(&repo);
    let left = &ideas[0]["runs"][0];
    assert_eq!(
        (left["end"].as_str(), left["error"].as_str()),
        (Some("failed"), Some("HEAD left the base"))
    );
    let same = &ideas[1]["runs"][0];
    assert_eq!(same["end"], "finished");
    assert_eq!(same["commits"][0]["candidate"], 0);
    assert_eq!(
        same["commits"][0]["note"],
        "same tree as candidate#0: not measured again"
    );
    assert_eq!(
        repo.status_json()["candidates"].as_array().unwrap().len(),
        1
    );
}

/// Starts `tally run --until-idle` on an idea whose agent signals `working-1`, waits for that
/// signal and kills tally with SIGKILL, leaving the agent running.
pub(crate) fn kill_tally_while_the_agent_works(repo: &CampaignRepo) {
    let mut tally = repo.command(&["run", "--until-idle"]).spawn().unwrap();
    repo.wait_for_signal("working-1");
    tally.kill().unwrap(); // SIGKILL
    tally.wait().unwrap();
    assert!(
        !processes_mentioning(&tag(repo, 1)).is_empty(),
        "the agent outlived tally"
    );
}

/// `tally run --until-idle` started with its stderr going to a file, and that file.
fn spawn_run_logged(repo: &CampaignRepo) -> (std::process::Child, PathBuf) {
    let log = repo.signals().join("second-run.stderr");
    let child = repo
        .command(&["run", "--until-idle"])
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    (child, log)
}

fn wait_for_text(path: &std::path::Path, needle: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.contains(needle) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{needle:?} not in {} within a minute: {text}",
            path.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn a_live_agent_left_by_a_killed_tally_is_adopted_and_its_commit_judged_once() {
    let repo = campaign("");
    add_idea(
        &repo,
        "slow",
        "SCRIPT: mode=wait-go\nSCRIPT: conf=tok_s=1200\n",
    );
    kill_tally_while_the_agent_works(&repo);

    let (second, log) = spawn_run_logged(&repo);
    wait_for_text(
        &log,
        "run#1 was left running by a killed tally run: its agent is alive, waiting for it",
    );
    // Only now may the agent commit: had the second tally killed it, nothing would be committed.
    repo.signal("go-1");
    let out = second.wait_with_output().unwrap();
    let stderr = std::fs::read_to_string(&log).unwrap();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let idea = &ideas(&repo)[0];
    let run0 = &idea["runs"][0];
    assert_eq!(run0["end"], "finished", "{stderr}");
    assert_eq!(
        run0["exit_code"],
        Value::Null,
        "an adopted agent's exit is unknown"
    );
    assert!(
        run0["error"]
            .as_str()
            .unwrap()
            .starts_with("exit code unknown: adopted by the next tally run"),
        "{run0}"
    );
    assert_eq!(run0["commits"].as_array().unwrap().len(), 1, "{run0}");
    assert_eq!(run0["commits"][0]["candidate"], 1);
    let status = repo.status_json();
    assert_eq!(
        status["candidates"].as_array().unwrap().len(),
        2,
        "its commit is queued once"
    );
    assert_eq!(candidate(&status, 1)["verdict"], "keep", "and judged");
    assert_eq!(idea["runs"].as_array().unwrap().len(), 1, "{idea}");
    assert_eq!(
        idea["state"], "done",
        "the adopted run used the idea's attempt"
    );
    assert_nothing_survives(&repo, 1);
}

#[test]
fn a_dead_agent_left_by_a_killed_tally_is_collected_with_its_unsaved_work() {
    // Its idea is not requeued: a continuing run of this agent would sleep again.
    let repo = campaign("requeue_unfinished = 0");
    add_idea(&repo, "dies", "SCRIPT: mode=dirty-sleep\n");
    kill_tally_while_the_agent_works(&repo);
    for (pid, _) in processes_mentioning(&tag(&repo, 1)) {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !processes_mentioning(&tag(&repo, 1)).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the agent did not die"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }

    let stderr = run(&repo);
    assert!(
        stderr.contains(
            "run#1 was left by a killed tally run and its agent is gone: collecting its work"
        ),
        "{stderr}"
    );
    let run0 = &ideas(&repo)[0]["runs"][0];
    assert_eq!(run0["end"], "interrupted", "{stderr}");
    assert_eq!(run0["exit_code"], Value::Null);
    let commits = run0["commits"].as_array().unwrap();
    assert_eq!(commits.len(), 1, "{run0}");
    assert_eq!(commits[0]["note"], "recovered: unsaved work, not measured");
    let recovered = commits[0]["revision"].as_str().unwrap();
    let message = repo.git(&["log", "-1", "--format=%B", recovered]);
    assert!(message.contains("Tally-Recovered: run#1"), "{message}");
    assert_eq!(
        repo.git(&["show", &format!("{recovered}:bench.conf")]),
        "tok_s=1300",
        "the unsaved edit is in the recovered commit"
    );
    assert_eq!(
        repo.status_json()["candidates"].as_array().unwrap().len(),
        1,
        "recovered work is not measured"
    );
}

#[test]
fn an_adopted_agent_is_stopped_at_its_stored_deadline_and_its_commit_judged() {
    let repo = campaign("timeout = 6\nwrap_up = 1\n");
    add_idea(
        &repo,
        "until told",
        "SCRIPT: mode=term-commit\nSCRIPT: conf=tok_s=1200\n",
    );
    kill_tally_while_the_agent_works(&repo);
    let stderr = run(&repo);
    assert!(
        stderr.contains("its agent is alive, waiting for it"),
        "{stderr}"
    );
    assert!(
        repo.signals().join("term-1").exists(),
        "the agent got SIGTERM at the deadline and committed: {stderr}"
    );
    let run0 = &ideas(&repo)[0]["runs"][0];
    assert_eq!(run0["end"], "timed_out", "{stderr}");
    assert!(
        PathBuf::from(run0["run_dir"].as_str().unwrap())
            .join("wrap-up")
            .is_file(),
        "the wrap-up file appeared before the deadline"
    );
    assert_eq!(candidate(&repo.status_json(), 1)["verdict"], "keep");
    assert_nothing_survives(&repo, 1);
}

#[test]
fn ctrl_c_stops_the_agent_collects_its_work_and_exits_130() {
    let repo = campaign("");
    add_idea(
        &repo,
        "long",
        "SCRIPT: mode=sleep\nSCRIPT: conf=tok_s=1200\n",
    );
    let tally = repo.command(&["run", "--until-idle"]).spawn().unwrap();
    repo.wait_for_signal("working-1");
    let kill = std::process::Command::new("kill")
        .args(["-INT", &tally.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = tally.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let run0 = &ideas(&repo)[0]["runs"][0];
    assert_eq!(run0["end"], "cancelled");
    assert_eq!(run0["commits"][0]["candidate"], 1);
    assert_eq!(candidate(&repo.status_json(), 1)["verdict"], "pending");
    assert_nothing_survives(&repo, 1);
}

#[test]
fn implementer_list_show_and_cancel() {
    let repo = campaign("");
    add_idea(
        &repo,
        "long",
        "SCRIPT: mode=sleep\nSCRIPT: conf=tok_s=1200\n",
    );
    let tally = repo.command(&["run", "--until-idle"]).spawn().unwrap();
    repo.wait_for_signal("working-1");
    let out = repo.tally(&["implementer", "list"]);
    assert_eq!(
        text(&out.stdout),
        "run     idea    end          base          commits       usd  error\nrun#1   idea#1  running      candidate#0         0         -  \n"
    );
    let out = repo.tally(&["implementer", "cancel", "run#1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with("run#1 cancelled: "),
        "{}",
        text(&out.stdout)
    );
    let out = tally.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_nothing_survives(&repo, 1);

    let out = repo.tally(&["implementer", "show", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    assert!(shown.starts_with("run#1: idea#1\nend:     cancelled\nerror:   cancelled by `tally implementer cancel`\nbase:    candidate#0\n"), "{shown}");
    assert!(
        shown.contains("stderr:  ") && shown.contains("/runs/1/stderr.log\n"),
        "{shown}"
    );
    assert!(
        shown.ends_with(": keep\n"),
        "its commit was queued and judged: {shown}"
    );
    let idea = &ideas(&repo)[0];
    assert_eq!(
        (idea["state"].as_str(), idea["reason"].as_str()),
        (Some("parked"), Some("run#1 was cancelled by hand"))
    );
    let list: Value =
        serde_json::from_slice(&repo.tally(&["implementer", "list", "--json"]).stdout).unwrap();
    assert_eq!(
        (list[0]["run"].as_u64(), list[0]["idea"].as_u64()),
        (Some(1), Some(1))
    );

    let out = repo.tally(&["implementer", "cancel", "1"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        "error: run#1 has ended (cancelled); there is nothing to cancel\n"
    );
    let out = repo.tally(&["implementer", "show", "7"]);
    assert_eq!(
        text(&out.stderr),
        "error: no run#7 in campaign `agents`; `tally implementer list` shows them\n"
    );
}

#[test]
fn a_commit_that_changes_the_evaluate_script_is_refused_unmeasured() {
    let repo = campaign("");
    add_idea(
        &repo,
        "cheat",
        "SCRIPT: mode=edit-evaluate\nSCRIPT: conf=tok_s=1100\n",
    );
    let stderr = run(&repo);
    let run0 = &ideas(&repo)[0]["runs"][0];
    let commits = run0["commits"].as_array().unwrap();
    assert_eq!(commits.len(), 2, "{stderr}");
    // Both trees differ from the base in evaluate.sh: both refused, neither measured.
    for (i, c) in commits.iter().enumerate() {
        assert_eq!(
            c["note"], "refused: changes protected path evaluate.sh",
            "{c}"
        );
        let status = repo.status_json();
        let cand = candidate(&status, i as u64 + 1);
        assert_eq!(cand["verdict"], "discard");
        assert_eq!(
            cand["reason"],
            "refused: changes protected path evaluate.sh"
        );
        assert_eq!(
            cand["measurements"].as_array().unwrap().len(),
            0,
            "no sample was taken"
        );
    }
    assert_eq!(repo.status_json()["head"]["candidate"], 0);
    // Each refusal is an anomaly of `tally status`, newest first; the brief does not show them.
    let short = |i: usize| commits[i]["revision"].as_str().unwrap()[..7].to_string();
    let anomalies = section(&repo.status_json(), "anomalies")
        .expect("an anomalies section")
        .clone();
    assert_eq!(
        anomalies["blocks"][0]["table"]["rows"],
        serde_json::json!([
            [
                "run#1",
                format!("refused {}: changes protected path evaluate.sh", short(1))
            ],
            [
                "run#1",
                format!("refused {}: changes protected path evaluate.sh", short(0))
            ],
        ])
    );
    let shown = text(&repo.tally(&["status"]).stdout);
    let row = format!(
        "run#1 ┆ refused {}: changes protected path evaluate.sh",
        short(0)
    );
    assert!(shown.contains(&row), "{row} in {shown}");
    let brief = text(&repo.tally(&["brief"]).stdout);
    assert!(brief.contains("Implementer runs"), "{brief}");
    assert!(!brief.contains("anomal"), "{brief}");
}

#[test]
fn past_max_measured_the_middle_commits_are_skipped_and_the_last_queued() {
    let repo = campaign("max_measured = 2");
    add_idea(
        &repo,
        "three steps",
        "SCRIPT: mode=ok\nSCRIPT: conf=tok_s=1100\nSCRIPT: conf=tok_s=1200\nSCRIPT: conf=tok_s=1300\n",
    );
    run(&repo);
    let commits = ideas(&repo)[0]["runs"][0]["commits"].clone();
    let notes: Vec<(Option<u64>, &str)> = commits
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["candidate"].as_u64(), c["note"].as_str().unwrap()))
        .collect();
    assert_eq!(
        notes,
        [
            (Some(1), "queued"),
            (None, "skipped: over max_measured"),
            (Some(2), "queued")
        ]
    );
    let status = repo.status_json();
    assert_eq!(status["candidates"].as_array().unwrap().len(), 3);
    assert_eq!(candidate(&status, 2)["verdict"], "keep");
}

#[test]
fn the_users_uncommitted_edits_are_neither_seen_nor_touched() {
    let repo = campaign("");
    repo.write("scratch.txt", "my notes\n");
    repo.write("agent.sh.orig", "an edit in progress\n");
    add_idea(&repo, "step", "SCRIPT: mode=ok\nSCRIPT: conf=tok_s=1200\n");
    run(&repo);
    let seen = std::fs::read_to_string(repo.signals().join("ls-1")).unwrap();
    assert!(
        !seen.contains("scratch.txt") && !seen.contains("agent.sh.orig"),
        "{seen}"
    );
    assert!(seen.contains("bench.conf"), "{seen}");
    assert_eq!(
        std::fs::read_to_string(repo.root().join("scratch.txt")).unwrap(),
        "my notes\n"
    );
    assert_eq!(
        repo.git(&["status", "--porcelain"]),
        "?? agent.sh.orig\n?? scratch.txt"
    );
    assert_eq!(
        std::fs::read_to_string(repo.root().join("bench.conf")).unwrap(),
        "tok_s=1000\n",
        "the main checkout stays where it was"
    );
}

#[test]
fn findings_and_earlier_attempts_reach_the_next_brief_and_the_runs_section() {
    let repo = campaign("");
    let out = repo.tally(&[
        "idea",
        "add",
        "bigger batch",
        "--text",
        "SCRIPT: mode=finding\nSCRIPT: conf=tok_s=1500\n",
        "--attempts",
        "2",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    run(&repo);

    let env = agent_env(&repo, 1);
    let finding_file = env
        .lines()
        .find_map(|l| l.strip_prefix("TALLY_FINDING_FILE="))
        .expect("the agent is told where its finding goes");
    assert!(
        finding_file.ends_with("/runs/1/finding.md"),
        "{finding_file}"
    );
    let first = std::fs::read_to_string(repo.signals().join("brief-1")).unwrap();
    assert!(first.contains("`$TALLY_FINDING_FILE`"), "{first}");
    assert!(!first.contains("Earlier attempts"), "{first}");
    // The second attempt's brief lists the first with its verdict and its whole finding.
    let second = std::fs::read_to_string(repo.signals().join("brief-2")).unwrap();
    assert!(
        second.contains(
            "### Earlier attempts of this idea\n\n- run#1: ended finished; candidate#1 keep\n  > tried tok_s=1500 on run 1\n  > it moved tok_s\n"
        ),
        "{second}"
    );
    // ...and the runs section, in the campaign part of the brief.
    assert!(second.contains("Implementer runs"), "{second}");

    let status = repo.status_json();
    let runs = section(&status, "runs")
        .expect("a runs section")
        .to_string();
    // The second run found the change already made: no commit of its own.
    for cell in [
        "run#2",
        "run#1",
        "idea#1 bigger batch",
        "finished",
        "no_commits",
        "keep",
        "tried tok_s=1500 on run 1",
        "tried tok_s=1500 on run 2",
    ] {
        assert!(runs.contains(cell), "{cell} in {runs}");
    }
    let newest_first = runs.find("run#2").unwrap() < runs.find("run#1").unwrap();
    assert!(newest_first, "{runs}");
    let out = repo.tally(&["status"]);
    assert!(
        text(&out.stdout).contains("Implementer runs"),
        "{}",
        text(&out.stdout)
    );
    let out = repo.tally(&["brief"]);
    let brief = text(&out.stdout);
    assert!(
        brief.contains(
            "| run#2 | idea#1 bigger batch | no_commits | — | tried tok_s=1500 on run 2 |"
        ),
        "{brief}"
    );
}

#[test]
fn an_agent_commit_that_fails_the_checks_is_discarded_unmeasured() {
    let repo = campaign(
        "[checks]\ncommands = [{ name = \"conf\", argv = [\"sh\", \"-c\", \"! grep -q broken bench.conf || { echo 'bench.conf is broken' >&2; exit 1; }\"] }]",
    );
    add_idea(
        &repo,
        "two steps",
        "SCRIPT: mode=ok\nSCRIPT: conf=tok_s=1500,broken=1\nSCRIPT: conf=tok_s=1400\n",
    );
    run(&repo);
    let status = repo.status_json();
    let failed = candidate(&status, 1);
    assert_eq!(failed["verdict"], "discard", "{failed}");
    assert_eq!(
        failed["reason"],
        "check `conf` failed: exit 1: bench.conf is broken"
    );
    assert_eq!(failed["measurements"], serde_json::json!([]));
    assert_eq!(candidate(&status, 2)["verdict"], "keep");
}
