//! A stop while agents work, and an agent that floods its stdout, through the binary with the
//! scripted implementer of `implementers_runs` and a few modes of its own
//! (`docs/implementers.md#stop-grace`, `docs/implementers.md#failure-table`): when judging the
//! first agent's commit reaches `max_runs` while a second agent works, the second gets its
//! wrap-up file at once and SIGTERM `stop_grace` later, its commit is queued pending, its run
//! ends `stopped` (not an attempt) and nothing of it survives; an agent that commits and exits
//! on the wrap-up file ends `stopped` too. 1 GiB on stdout goes to `stdout.log` without a
//! deadlock, and the run ends as usual.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::campaign_repo::{CampaignRepo, candidate, text};
use crate::implementers_runs::{SCRIPTED, add_idea, assert_nothing_survives, config, ideas};

/// The scripted implementer's modes for these tests, added to its `case` (`note` commits a
/// file of its own, so that it merges onto a head that moved meanwhile):
/// - `stubborn`: commits, waits for the wrap-up file, records when it appeared, then works on
///   until SIGTERM, whose time it records before exiting.
/// - `wrap-up-commit`: waits for the wrap-up file, records it, then commits and exits 0.
/// - `huge`: writes 1 GiB of zeros to stdout, then commits.
const MODES: &str = r#"stubborn)
    note
    trap 'date +%s%N > "$E2E_DIR/term-$TALLY_RUN"; exit 0' TERM
    while [ ! -e "$TALLY_WRAP_UP" ]; do sleep 0.05; done
    date +%s%N > "$E2E_DIR/wrap-up-seen-$TALLY_RUN"
    while :; do sleep 0.1; done ;;
wrap-up-commit)
    while [ ! -e "$TALLY_WRAP_UP" ]; do sleep 0.05; done
    cp "$TALLY_WRAP_UP" "$E2E_DIR/wrap-up-seen-$TALLY_RUN"
    note ;;
huge)
    head -c 1073741824 /dev/zero
    commit_each ;;
esac
"#;

/// Defines `note` before the script's `case`: commits `notes-<run>.txt`.
const NOTE: &str = r#"note() {
    echo "run $TALLY_RUN" > "notes-$TALLY_RUN.txt"
    git add "notes-$TALLY_RUN.txt"
    git commit -qm "agent: notes of run $TALLY_RUN"
}
case "$mode" in
"#;

/// 1 GiB.
const GIB: u64 = 1 << 30;

/// A registered campaign (baseline `tok_s=1000`) with the scripted implementer and its extra
/// modes; `extra` goes into `[implementer]` and after it.
fn campaign(extra: &str) -> CampaignRepo {
    let repo = CampaignRepo::new();
    let script = SCRIPTED
        .replacen("case \"$mode\" in\n", NOTE, 1)
        .replacen("esac\n", MODES, 1);
    assert_ne!(script, SCRIPTED, "the script ends its case with `esac`");
    repo.write_executable("agent.sh", &script);
    repo.start_campaign(&config(extra), "tok_s=1000\n");
    repo
}

/// Two agents at once; the campaign stops once one candidate is judged.
const STOP_AFTER_ONE: &str = "max_concurrent = 2\noverlap = \"parallel\"\ntimeout = 60\n\
     stop_grace = STOP_GRACE\n[plugins.stop_rule]\nprovider = \"limits\"\nmax_runs = 1\n";

fn read_ns(repo: &CampaignRepo, name: &str) -> u128 {
    std::fs::read_to_string(repo.signals().join(name))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .trim()
        .parse()
        .unwrap()
}

/// The run of idea `n` (1-based) in `tally idea list --json`.
fn run_of(ideas: &Value, n: usize) -> &Value {
    &ideas[n - 1]["runs"][0]
}

/// Runs `tally run --until-idle`: the campaign stops (exit 0) with `max_runs: 1 runs`; returns
/// its stderr and how long it took.
fn run_to_the_stop(repo: &CampaignRepo) -> (String, Duration) {
    let started = Instant::now();
    let out = repo.run_until_idle();
    let took = started.elapsed();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "a stop exits 0: {stderr}");
    let status = repo.status_json();
    assert_eq!(status["campaign"]["state"], "stopped", "{stderr}");
    assert_eq!(status["campaign"]["reason"], "max_runs: 1 runs", "{stderr}");
    (stderr, took)
}

/// The quick agent's run: finished, its one commit judged `keep`.
fn assert_the_quick_run_was_judged(repo: &CampaignRepo, ideas: &Value) {
    let quick = run_of(ideas, 1);
    assert_eq!(quick["end"], "finished", "{quick}");
    assert_eq!(quick["commits"][0]["candidate"], 1);
    assert_eq!(candidate(&repo.status_json(), 1)["verdict"], "keep");
}

/// The stopped run of idea 2: `stopped` with the stop's reason, its commit queued (merged onto
/// the head the quick run moved) and left pending, its idea still `ready` (a stopped run is no
/// attempt).
fn assert_stopped_with_its_commit_pending(repo: &CampaignRepo, ideas: &Value) -> Value {
    let run = run_of(ideas, 2).clone();
    assert_eq!(run["end"], "stopped", "{run}");
    let error = run["error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with("the campaign stopped (max_runs: 1 runs)"),
        "{run}"
    );
    let commits = run["commits"].as_array().unwrap();
    assert_eq!(
        commits.len(),
        2,
        "its commit and its merge onto the head: {run}"
    );
    assert_eq!(
        commits[0]["note"],
        "head moved: merged onto candidate#1 as candidate#3"
    );
    assert_eq!(commits[1]["candidate"], 3);
    let status = repo.status_json();
    assert_eq!(candidate(&status, 3)["verdict"], "pending", "{run}");
    assert_eq!(ideas[1]["state"], "ready", "a stopped run uses no attempt");
    let show = repo.tally(&["implementer", "show", "2"]);
    assert_eq!(show.status.code(), Some(0), "{}", text(&show.stderr));
    assert!(
        text(&show.stdout).contains("stopped"),
        "{}",
        text(&show.stdout)
    );
    run
}

#[test]
fn a_stop_while_an_agent_works_gives_it_the_wrap_up_file_then_kills_it_after_stop_grace() {
    let repo = campaign(&STOP_AFTER_ONE.replace("STOP_GRACE", "2"));
    add_idea(&repo, "quick", "SCRIPT: mode=ok\nSCRIPT: conf=tok_s=1200\n");
    add_idea(
        &repo,
        "stubborn",
        "SCRIPT: mode=stubborn\nSCRIPT: conf=p50_ms=5\n",
    );
    let (stderr, took) = run_to_the_stop(&repo);
    let ideas = ideas(&repo);
    assert_the_quick_run_was_judged(&repo, &ideas);
    let run = assert_stopped_with_its_commit_pending(&repo, &ideas);
    assert_eq!(
        run["error"], "the campaign stopped (max_runs: 1 runs): killed after stop_grace",
        "{stderr}"
    );
    // It saw the wrap-up file, and SIGTERM came stop_grace (2 s) later: not at the wrap-up
    // time of its 60 s timeout (50 s), nor at the timeout.
    let seen = read_ns(&repo, "wrap-up-seen-2");
    let term = read_ns(&repo, "term-2");
    let grace = Duration::from_nanos(u64::try_from(term - seen).unwrap());
    assert!(
        grace >= Duration::from_millis(1500) && grace < Duration::from_secs(20),
        "SIGTERM came {grace:?} after the wrap-up file\n{stderr}"
    );
    assert!(took < Duration::from_secs(45), "took {took:?}\n{stderr}");
    let run_dir = PathBuf::from(run["run_dir"].as_str().unwrap());
    let wrap_up = std::fs::read_to_string(run_dir.join("wrap-up")).unwrap();
    assert!(
        wrap_up.contains("the campaign stopped (max_runs: 1 runs)") && wrap_up.contains("2 s"),
        "{wrap_up}"
    );
    assert!(stderr.contains("run#2 ended stopped"), "{stderr}");
    assert_nothing_survives(&repo, 1);
    assert_nothing_survives(&repo, 2);
}

#[test]
fn an_agent_that_commits_and_exits_on_the_wrap_up_file_ends_stopped_with_its_commit_queued() {
    // A grace far longer than the test: the agent's own exit ends the run.
    let repo = campaign(&STOP_AFTER_ONE.replace("STOP_GRACE", "600"));
    add_idea(&repo, "quick", "SCRIPT: mode=ok\nSCRIPT: conf=tok_s=1200\n");
    add_idea(
        &repo,
        "polite",
        "SCRIPT: mode=wrap-up-commit\nSCRIPT: conf=p50_ms=5\n",
    );
    let (stderr, took) = run_to_the_stop(&repo);
    let ideas = ideas(&repo);
    assert_the_quick_run_was_judged(&repo, &ideas);
    let run = assert_stopped_with_its_commit_pending(&repo, &ideas);
    assert_eq!(run["exit_code"], 0, "{run}");
    assert_eq!(
        run["error"], "the campaign stopped (max_runs: 1 runs): exit 0 after the wrap-up file",
        "{stderr}"
    );
    let seen = std::fs::read_to_string(repo.signals().join("wrap-up-seen-2")).unwrap();
    assert!(seen.starts_with("wrap up: the campaign stopped"), "{seen}");
    assert!(took < Duration::from_secs(45), "took {took:?}\n{stderr}");
    assert_nothing_survives(&repo, 2);
}

#[test]
fn an_agent_that_writes_1_gib_to_stdout_is_not_blocked_and_its_run_ends_as_usual() {
    let repo = campaign("");
    add_idea(
        &repo,
        "loud",
        "SCRIPT: mode=huge\nSCRIPT: conf=tok_s=1200\n",
    );
    let out = repo.run_until_idle();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let ideas = ideas(&repo);
    let run = run_of(&ideas, 1);
    let stdout_log = PathBuf::from(run["run_dir"].as_str().unwrap()).join("stdout.log");
    let size = std::fs::metadata(&stdout_log).map(|m| m.len());
    // The gigabyte is not kept: the disk is shared.
    std::fs::remove_file(&stdout_log).unwrap();
    assert_eq!(size.unwrap(), GIB, "the whole output is in the file");
    assert_eq!(run["end"], "finished", "{run}");
    assert_eq!(run["commits"][0]["candidate"], 1);
    assert_eq!(candidate(&repo.status_json(), 1)["verdict"], "keep");
    assert_nothing_survives(&repo, 1);
}
