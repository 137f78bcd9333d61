//! Implementers side by side (`docs/implementers.md#parallel`), through the binary with the
//! scripted implementer of `implementers_runs`: with `overlap = "parallel"` two agents work at
//! once while the queue is judged, evaluations never overlap one another; a commit made while
//! the head moved is merged onto the new head as a candidate of its own, or, when it conflicts,
//! recorded `interesting` with the paths (`docs/implementers.md#head-moved`); a hold lets the
//! working agent finish and its commits wait; Ctrl-C or SIGTERM stops both agents, collects
//! their work and leaves nothing running.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::campaign_repo::{CampaignRepo, candidate, text};
use crate::implementers_runs::{SCRIPTED, add_idea, assert_nothing_survives, config, ideas};

/// Runs `./evaluate.sh` and appends `start end` (Unix nanoseconds) to `$E2E_DIR/evaluations`.
const TIMED_EVALUATE: &str = r#"#!/bin/sh
start=$(date +%s%N)
./evaluate.sh
rc=$?
printf '%s %s\n' "$start" "$(date +%s%N)" >> "$E2E_DIR/evaluations"
exit $rc
"#;

const PARALLEL: &str = "max_concurrent = 2\noverlap = \"parallel\"";

/// A registered campaign (baseline `tok_s=1000`) whose implementers run two at a time, its
/// evaluations timed.
fn parallel_campaign() -> CampaignRepo {
    let repo = CampaignRepo::new();
    repo.write_executable("agent.sh", SCRIPTED);
    repo.write_executable("timed-evaluate.sh", TIMED_EVALUATE);
    let config = config(PARALLEL).replace(
        r#"evaluate = ["./evaluate.sh"]"#,
        r#"evaluate = ["./timed-evaluate.sh"]"#,
    );
    repo.start_campaign(&config, "tok_s=1000\n");
    repo
}

/// The `start end` pairs of a file of such lines, sorted.
fn intervals(text: &str) -> Vec<(u128, u128)> {
    let mut all: Vec<(u128, u128)> = text
        .lines()
        .map(|l| {
            let (a, b) = l.split_once(' ').expect("`start end`");
            (a.parse().unwrap(), b.parse().unwrap())
        })
        .collect();
    all.sort();
    all
}

fn read_ns(repo: &CampaignRepo, name: &str) -> u128 {
    std::fs::read_to_string(repo.signals().join(name))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .trim()
        .parse()
        .unwrap()
}

fn candidate_json(repo: &CampaignRepo, id: u32) -> Value {
    let out = repo.tally(&["candidate", "show", &id.to_string(), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Waits (a minute at most) until candidate `id` has the verdict `verdict`.
fn wait_for_verdict(repo: &CampaignRepo, id: u64, verdict: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = repo.tally(&["status", "--json"]);
        if out.status.code() == Some(0) {
            let status: Value = serde_json::from_slice(&out.stdout).unwrap();
            let found = status["candidates"]
                .as_array()
                .is_some_and(|all| all.iter().any(|c| c["id"] == id));
            if found && candidate(&status, id)["verdict"] == verdict {
                return;
            }
        }
        assert!(
            Instant::now() < deadline,
            "candidate#{id} never became {verdict}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn two_agents_work_at_once_while_evaluations_stay_one_at_a_time() {
    let repo = parallel_campaign();
    // Queued before the agents start: judged while they work.
    repo.propose(&["tok_s=900\n"]);
    add_idea(
        &repo,
        "first",
        "SCRIPT: mode=timed\nSCRIPT: conf=tok_s=1200\n",
    );
    add_idea(
        &repo,
        "second",
        "SCRIPT: mode=timed\nSCRIPT: conf=p50_ms=5\n",
    );
    let out = repo.run_until_idle();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let ideas = ideas(&repo);
    for idea in ideas.as_array().unwrap() {
        assert_eq!(idea["runs"][0]["end"], "finished", "{idea}");
    }
    let agents = [1, 2].map(|n| {
        (
            read_ns(&repo, &format!("agent-start-{n}")),
            read_ns(&repo, &format!("agent-end-{n}")),
        )
    });
    assert!(
        agents[0].0 < agents[1].1 && agents[1].0 < agents[0].1,
        "the two agents did not overlap: {agents:?}\n{stderr}"
    );
    let evaluations =
        intervals(&std::fs::read_to_string(repo.signals().join("evaluations")).unwrap());
    for pair in evaluations.windows(2) {
        assert!(
            pair[0].1 <= pair[1].0,
            "two evaluations overlapped: {pair:?}"
        );
    }
    let (first_start, last_end) = (agents[0].0.min(agents[1].0), agents[0].1.max(agents[1].1));
    assert!(
        evaluations
            .iter()
            .any(|(start, _)| (first_start..last_end).contains(start)),
        "no evaluation ran while the agents worked: {evaluations:?} vs {agents:?}\n{stderr}"
    );
    assert_ne!(candidate(&repo.status_json(), 1)["verdict"], "pending");
    assert_nothing_survives(&repo, 1);
    assert_nothing_survives(&repo, 2);
}

#[test]
fn a_commit_made_while_the_head_moved_is_merged_onto_the_new_head() {
    let repo = parallel_campaign();
    add_idea(
        &repo,
        "faster",
        "SCRIPT: mode=ok\nSCRIPT: conf=tok_s=1200\n",
    );
    add_idea(&repo, "notes", "SCRIPT: mode=wait-notes\n");
    let tally = repo.command(&["run", "--until-idle"]).spawn().unwrap();
    // The first agent's commit becomes the head while the second still works.
    wait_for_verdict(&repo, 1, "keep");
    repo.signal("release-agent");
    let out = tally.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");

    let status = repo.status_json();
    assert_eq!(candidate(&status, 2)["verdict"], "interesting", "{stderr}");
    assert_eq!(
        candidate(&status, 2)["reason"],
        "head moved: merged as candidate#3"
    );
    let merge = candidate_json(&repo, 3);
    assert_ne!(merge["verdict"], "pending", "the merge is judged: {merge}");
    let note = merge["note"].as_str().unwrap();
    assert!(
        note.starts_with("merge: run#2's ")
            && note.ends_with("(candidate#2) onto head candidate#1"),
        "{note}"
    );
    // The merge's parents are the head and the agent's commit; its tree has both changes.
    let revision = merge["revision"].as_str().unwrap();
    let parents = repo.git(&["rev-list", "--parents", "-n", "1", revision]);
    let head = candidate_json(&repo, 1)["revision"]
        .as_str()
        .unwrap()
        .to_string();
    let own = candidate_json(&repo, 2)["revision"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(parents, format!("{revision} {head} {own}"));
    assert_eq!(
        repo.git(&["show", &format!("{revision}:bench.conf")]),
        "tok_s=1200"
    );
    assert_eq!(
        repo.git(&["show", &format!("{revision}:notes.txt")]),
        "batch the prefill"
    );
    let run2 = &ideas(&repo)[1]["runs"][0];
    assert_eq!(run2["commits"][1]["candidate"], 3, "{run2}");
    assert_nothing_survives(&repo, 2);
}

#[test]
fn a_commit_that_conflicts_with_the_moved_head_is_interesting_and_not_merged() {
    let repo = parallel_campaign();
    add_idea(
        &repo,
        "faster",
        "SCRIPT: mode=ok\nSCRIPT: conf=tok_s=1200\n",
    );
    add_idea(
        &repo,
        "other",
        "SCRIPT: mode=wait\nSCRIPT: conf=tok_s=1300\n",
    );
    let tally = repo.command(&["run", "--until-idle"]).spawn().unwrap();
    wait_for_verdict(&repo, 1, "keep");
    repo.signal("release-agent");
    let out = tally.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let status = repo.status_json();
    assert_eq!(candidate(&status, 2)["verdict"], "interesting", "{stderr}");
    assert_eq!(
        candidate(&status, 2)["reason"],
        "conflicts with head candidate#1 in bench.conf"
    );
    let count = status["candidates"].as_array().unwrap().len();
    assert_eq!(
        count, 3,
        "the baseline and the two agents' commits, no merge"
    );
    assert_eq!(status["head"]["candidate"], 1);
}

#[test]
fn ctrl_c_stops_both_agents_collects_their_work_and_exits_130() {
    interrupt_two_agents("INT", 130);
}

#[test]
fn sigterm_stops_both_agents_collects_their_work_and_exits_143() {
    interrupt_two_agents("TERM", 143);
}

/// Sends `signal` to `tally run` while two agents work: it exits `code`, both runs end
/// `cancelled` with their commits queued and pending, and nothing of theirs survives.
fn interrupt_two_agents(signal: &str, code: i32) {
    let repo = parallel_campaign();
    add_idea(
        &repo,
        "one",
        "SCRIPT: mode=sleep\nSCRIPT: conf=tok_s=1200\n",
    );
    add_idea(&repo, "two", "SCRIPT: mode=sleep\nSCRIPT: conf=p50_ms=5\n");
    let tally = repo
        .command(&["run", "--until-idle"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    repo.wait_for_signal("working-1");
    repo.wait_for_signal("working-2");
    let kill = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &tally.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = tally.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{stderr}");
    assert!(
        stderr.contains("2 implementer(s) stopped, their work collected and queued"),
        "{stderr}"
    );
    let ideas = ideas(&repo);
    let status = repo.status_json();
    for idea in ideas.as_array().unwrap() {
        let run = &idea["runs"][0];
        assert_eq!(run["end"], "cancelled", "{idea}");
        let id = run["commits"][0]["candidate"].as_u64().expect("queued");
        assert_eq!(candidate(&status, id)["verdict"], "pending");
    }
    for n in [1, 2] {
        assert_nothing_survives(&repo, n);
    }
}

#[test]
fn a_hold_lets_the_working_agent_finish_and_its_commits_wait() {
    let repo = CampaignRepo::new();
    repo.write_executable("agent.sh", SCRIPTED);
    // The scripted agent reports no cost: once a run has ended, `agent_usd` is unknown and the
    // next evaluation is held.
    let config = config(&format!(
        "{PARALLEL}\n[plugins.stop_rule]\nhold_at = {{ agent_usd = 100 }}\n\n\
         [[plugins.fact_source]]\nprovider = \"agent_usage\"\n"
    ));
    repo.start_campaign(&config, "tok_s=1000\n");
    add_idea(&repo, "quick", "SCRIPT: mode=ok\nSCRIPT: conf=tok_s=1200\n");
    add_idea(&repo, "slow", "SCRIPT: mode=wait\nSCRIPT: conf=p50_ms=5\n");
    let tally = repo
        .command(&["run", "--until-idle"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while repo.status_json()["campaign"]["state"] != "held" {
        assert!(Instant::now() < deadline, "the campaign was never held");
        std::thread::sleep(Duration::from_millis(100));
    }
    repo.signal("release-agent");
    let out = tally.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("agent_usd unknown"), "{stderr}");
    let ideas = ideas(&repo);
    let status = repo.status_json();
    for idea in ideas.as_array().unwrap() {
        let run = &idea["runs"][0];
        assert_eq!(run["end"], "finished", "the hold killed no agent: {idea}");
        let id = run["commits"][0]["candidate"].as_u64().expect("queued");
        assert_eq!(candidate(&status, id)["verdict"], "pending", "{idea}");
    }
    assert_nothing_survives(&repo, 2);
}
