//! Implementers side by side (`docs/implementers.md#parallel`), through the binary with the
//! scripted implementer of `implementers_runs`: with `overlap = "parallel"` two agents work at
//! once while the queue is judged, evaluations never overlap one another; a commit made while
//! the head moved is merged onto the new head as a candidate of its own, or, when it conflicts,
//! recorded `interesting` with the paths (`docs/implementers.md#head-moved`), and so is a pending
//! agent candidate that a later keep left behind, a run's commits merged in order; a hold lets the
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
        "head moved: merged onto candidate#1 as candidate#3"
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

/// Evaluates `tok_s` = bench.conf's `tok_s` plus the number in boost.conf, when there is one.
const BOOSTED_EVALUATE: &str = r#"#!/bin/sh
set -eu
tok=$(sed -n 's/^tok_s=//p' bench.conf | tail -n 1)
boost=$(cat boost.conf 2>/dev/null || echo 0)
echo "METRIC tok_s=$((tok + boost))"
"#;

/// Two agents launched on the baseline (`first`, `second`: `SCRIPT:` lines of the scripted
/// implementer in `go-*` modes) whose commits are all queued on it, none judged: the scripted
/// agent reports no cost, so once the first has ended the campaign is held (`agent_usd`
/// unknown) before any evaluation; the second then ends, and both runs' costs are recorded.
fn both_queued_on_the_old_head(first: &str, second: &str) -> CampaignRepo {
    let repo = CampaignRepo::new();
    repo.write_executable("agent.sh", SCRIPTED);
    repo.write_executable("boosted-evaluate.sh", BOOSTED_EVALUATE);
    let config = config(&format!(
        "{PARALLEL}\n[plugins.stop_rule]\nhold_at = {{ agent_usd = 100 }}\n\n\
         [[plugins.fact_source]]\nprovider = \"agent_usage\"\n"
    ))
    .replace(
        r#"evaluate = ["./evaluate.sh"]"#,
        r#"evaluate = ["./boosted-evaluate.sh"]"#,
    );
    repo.start_campaign(&config, "tok_s=1000\n");
    add_idea(&repo, "first", first);
    add_idea(&repo, "second", second);
    let tally = repo
        .command(&["run", "--until-idle"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    repo.wait_for_signal("working-1");
    repo.wait_for_signal("working-2");
    repo.signal("go-1");
    let deadline = Instant::now() + Duration::from_secs(60);
    while repo.status_json()["campaign"]["state"] != "held" {
        assert!(Instant::now() < deadline, "the campaign was never held");
        std::thread::sleep(Duration::from_millis(100));
    }
    repo.signal("go-2");
    let out = tally.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let status = repo.status_json();
    for c in status["candidates"].as_array().unwrap().iter().skip(1) {
        assert_eq!(c["verdict"], "pending", "nothing judged yet: {c}");
    }
    for run in ["1", "2"] {
        let out = repo.tally(&["implementer", "usage", run, "--usd", "0"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    repo
}

/// The revision of candidate `id`.
fn revision(repo: &CampaignRepo, id: u32) -> String {
    candidate_json(repo, id)["revision"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn a_pending_agent_commit_left_behind_by_a_keep_is_merged_onto_the_new_head_in_order() {
    let repo = both_queued_on_the_old_head(
        "SCRIPT: mode=wait-go\nSCRIPT: conf=tok_s=1200\n",
        "SCRIPT: mode=go-boost\nSCRIPT: boost=300\nSCRIPT: boost=400\n",
    );
    // candidate#1: tok_s=1200 (run#1); #2, #3: boost 300 then 400 (run#2), all on the baseline.
    let out = repo.run_until_idle();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let status = repo.status_json();
    let verdict = |id| {
        let c = candidate(&status, id);
        (c["verdict"].clone(), c["reason"].clone())
    };
    assert_eq!(verdict(1).0, "keep", "{stderr}");
    assert_eq!(
        verdict(2),
        (
            "interesting".into(),
            "head moved: merged onto candidate#1 as candidate#4".into()
        ),
        "{stderr}"
    );
    // The run's second commit builds on the merge of its first, not on the head.
    assert_eq!(
        verdict(3),
        (
            "interesting".into(),
            "head moved: merged onto candidate#4 as candidate#5".into()
        )
    );
    assert!(
        stderr.contains("candidate#2: interesting — head moved: merged onto candidate#1 as candidate#4 (not measured)"),
        "{stderr}"
    );
    assert_eq!(verdict(4).0, "keep", "1200 + 300 beats 1200: {stderr}");
    assert_eq!(verdict(5).0, "keep", "1200 + 400 beats 1500: {stderr}");
    assert_eq!(status["head"]["candidate"], 5);
    let merge = candidate_json(&repo, 5);
    assert!(
        merge["note"].as_str().unwrap().ends_with(
            "(candidate#3) onto candidate#4 (the run's earlier commit merged onto head candidate#1)"
        ),
        "{merge}"
    );
    let parents = |id| repo.git(&["rev-list", "--parents", "-n", "1", &revision(&repo, id)]);
    assert_eq!(
        parents(4),
        format!(
            "{} {} {}",
            revision(&repo, 4),
            revision(&repo, 1),
            revision(&repo, 2)
        )
    );
    assert_eq!(
        parents(5),
        format!(
            "{} {} {}",
            revision(&repo, 5),
            revision(&repo, 4),
            revision(&repo, 3)
        )
    );
    // The head holds both agents' changes.
    let head = revision(&repo, 5);
    assert_eq!(
        repo.git(&["show", &format!("{head}:bench.conf")]),
        "tok_s=1200"
    );
    assert_eq!(repo.git(&["show", &format!("{head}:boost.conf")]), "400");
    // The merges are listed with the run that they merge, after its own commits.
    let run2 = &ideas(&repo)[1]["runs"][0];
    let listed: Vec<Value> = run2["commits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["candidate"].clone())
        .collect();
    assert_eq!(listed, [2, 3, 4, 5].map(Value::from), "{run2}");
    // Each merge is pinned by its candidate's number.
    for merge in [4, 5] {
        let name = format!("refs/tally/agents/runs/2/merge-{merge}");
        assert_eq!(
            repo.git(&["rev-parse", &name]),
            revision(&repo, merge),
            "{name}"
        );
    }
}

#[test]
fn a_pending_agent_commit_behind_a_head_kept_by_hand_is_merged_before_its_queued_remeasure_runs() {
    let repo = both_queued_on_the_old_head(
        "SCRIPT: mode=wait-go\nSCRIPT: conf=tok_s=1200\n",
        "SCRIPT: mode=go-boost\nSCRIPT: boost=300\n",
    );
    // A person keeps candidate#1 (the head moves with no judging), and asks for a
    // re-measurement of candidate#2, which does not contain it.
    let kept = repo.tally(&["candidate", "verdict", "1", "keep", "--reason", "by hand"]);
    assert_eq!(kept.status.code(), Some(0), "{}", text(&kept.stderr));
    let queued = repo.tally(&["candidate", "remeasure", "2"]);
    assert_eq!(queued.status.code(), Some(0), "{}", text(&queued.stderr));
    let out = repo.run_until_idle();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let status = repo.status_json();
    assert_eq!(
        (
            &candidate(&status, 2)["verdict"],
            &candidate(&status, 2)["reason"]
        ),
        (
            &Value::from("interesting"),
            &Value::from("head moved: merged onto candidate#1 as candidate#3")
        ),
        "the re-measurement never judged it: {stderr}"
    );
    assert!(
        candidate(&status, 2)["measurements"]
            .as_array()
            .unwrap()
            .is_empty(),
        "its re-measurement was abandoned, not run: {stderr}"
    );
    assert_eq!(candidate(&status, 3)["verdict"], "keep", "{stderr}");
    assert_eq!(status["head"]["candidate"], 3);
}

#[test]
fn a_pending_agent_commit_that_conflicts_with_a_later_keep_is_interesting_and_not_merged() {
    let repo = both_queued_on_the_old_head(
        "SCRIPT: mode=wait-go\nSCRIPT: conf=tok_s=1200\n",
        "SCRIPT: mode=wait-go\nSCRIPT: conf=tok_s=1300\n",
    );
    let out = repo.run_until_idle();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let status = repo.status_json();
    assert_eq!(candidate(&status, 1)["verdict"], "keep", "{stderr}");
    assert_eq!(candidate(&status, 2)["verdict"], "interesting", "{stderr}");
    assert_eq!(
        candidate(&status, 2)["reason"],
        "conflicts with head candidate#1 in bench.conf"
    );
    assert_eq!(
        status["candidates"].as_array().unwrap().len(),
        3,
        "the baseline and the two agents' commits, no merge"
    );
    assert_eq!(status["head"]["candidate"], 1);
    assert!(
        !stderr.contains("candidate#2: keep") && !stderr.contains("candidate#2: discard"),
        "candidate#2 was judged on its own: {stderr}"
    );
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
