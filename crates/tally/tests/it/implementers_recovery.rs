//! What tally recovers after an agent through the binary (`docs/implementers.md#pins`,
//! `docs/implementers.md#requeue`): the `refs/tally/*` pins an agent deleted are restored at
//! collection, and an idea whose run ended unfinished is launched again from that run's last
//! commit.

use crate::campaign_repo::{CampaignRepo, candidate, processes_mentioning, text};
use crate::implementers_runs::{add_idea, campaign, ideas, kill_tally_while_the_agent_works, tag};

/// The campaign's pins, `name commit` lines.
fn pins(repo: &CampaignRepo) -> String {
    repo.git(&[
        "for-each-ref",
        "--format=%(refname) %(objectname)",
        "refs/tally/",
    ])
}

/// Two ideas, one after the other: the first commits `tok_s=1200`, the second (in `mode`)
/// `tok_s=1500`. Answers the repository and what `tally run` printed.
fn two_runs(second_mode: &str) -> (CampaignRepo, String) {
    let repo = campaign("");
    add_idea(&repo, "first", "SCRIPT: mode=ok\nSCRIPT: conf=tok_s=1200\n");
    add_idea(
        &repo,
        "second",
        &format!("SCRIPT: mode={second_mode}\nSCRIPT: conf=tok_s=1500\n"),
    );
    let out = repo.run_until_idle();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    (repo, stderr)
}

/// Every candidate's verdict, in order, and the head.
fn outcome(repo: &CampaignRepo) -> (Vec<String>, serde_json::Value) {
    let status = repo.status_json();
    let verdicts = status["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["verdict"].as_str().unwrap().to_string())
        .collect();
    (verdicts, status["head"]["candidate"].clone())
}

#[test]
fn pins_an_agent_deletes_are_restored_at_collection() {
    let (repo, stderr) = two_runs("delete-pins");
    assert!(
        stderr.contains(
            "restored 1 pin(s) under refs/tally/agents/ deleted or moved while run#2 worked"
        ),
        "{stderr}"
    );
    // Every pin exists again, at the commit the store records for it.
    let ideas = ideas(&repo);
    let first = ideas[0]["runs"][0]["commits"][0]["revision"]
        .as_str()
        .unwrap();
    let second = ideas[1]["runs"][0]["commits"][0]["revision"]
        .as_str()
        .unwrap();
    assert_eq!(
        pins(&repo),
        format!("refs/tally/agents/runs/1/1 {first}\nrefs/tally/agents/runs/2/1 {second}")
    );
    // The deleting agent's commit was judged; head and verdicts are those of a run that
    // deleted nothing.
    assert_eq!(ideas[1]["runs"][0]["end"], "finished");
    assert_eq!(candidate(&repo.status_json(), 2)["verdict"], "keep");
    let (plain, plain_stderr) = two_runs("ok");
    assert!(!plain_stderr.contains("restored"), "{plain_stderr}");
    assert_eq!(outcome(&repo), outcome(&plain));
    assert_eq!(outcome(&repo).1, 2);
}

/// An idea whose agent leaves its edit unsaved on run 1 and commits it on a later run that
/// finds it in its worktree; `conf-<run>` records the `bench.conf` each run started with.
fn continued(extra: &str, attempts: &str) -> (CampaignRepo, serde_json::Value) {
    let repo = campaign(extra);
    let out = repo.tally(&[
        "idea",
        "add",
        "finish it",
        "--text",
        "SCRIPT: mode=continue\n",
        "--attempts",
        attempts,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let idea = ideas(&repo)[0].clone();
    assert_eq!(idea["runs"][0]["end"], "interrupted", "{idea}");
    assert_eq!(
        idea["runs"][0]["commits"][0]["note"],
        "recovered: unsaved work, not measured"
    );
    (repo, idea)
}

fn started_with(repo: &CampaignRepo, run: u32) -> String {
    std::fs::read_to_string(repo.signals().join(format!("conf-{run}"))).unwrap()
}

#[test]
fn an_interrupted_idea_is_requeued_once_from_its_recovered_commit() {
    // One attempt: the requeue is a run beyond it.
    let (repo, idea) = continued("", "1");
    let runs = idea["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{idea}");
    let recovered = runs[0]["commits"][0]["revision"].as_str().unwrap();
    // Run 2's worktree started at the recovered commit: the edit was there.
    assert_eq!(started_with(&repo, 1), "tok_s=1000\n");
    assert_eq!(started_with(&repo, 2), "tok_s=1300\n");
    let brief = std::fs::read_to_string(repo.signals().join("brief-2")).unwrap();
    let continues = format!(
        "This run continues run#1's unfinished work: your worktree starts at its last commit {}, not at candidate#0.",
        &recovered[..12]
    );
    assert!(brief.contains(&continues), "{brief}");
    assert!(
        brief.contains("is continued by a later run of this idea from its last commit"),
        "the rules say so: {brief}"
    );
    assert!(
        brief.contains(&format!(
            "at commit {}, the last commit of run#1",
            &recovered[..12]
        )),
        "{brief}"
    );
    // Its own commit, not run 1's again, was queued and judged against the base.
    assert_eq!(runs[1]["end"], "finished");
    let commits = runs[1]["commits"].as_array().unwrap();
    assert_eq!(commits.len(), 1, "{idea}");
    assert_eq!(commits[0]["candidate"], 1);
    let own = commits[0]["revision"].as_str().unwrap();
    assert_eq!(repo.git(&["rev-parse", &format!("{own}^")]), recovered);
    let status = repo.status_json();
    assert_eq!(candidate(&status, 1)["verdict"], "keep");
    assert_eq!(status["candidates"].as_array().unwrap().len(), 2);
    // Once: the idea is done, not requeued again.
    assert_eq!(idea["state"], "done");
}

#[test]
fn with_requeue_unfinished_0_the_next_attempt_starts_at_the_base() {
    let (repo, idea) = continued("requeue_unfinished = 0", "2");
    let runs = idea["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{idea}");
    assert_eq!(started_with(&repo, 2), "tok_s=1000\n");
    assert_eq!(runs[1]["end"], "no_commits");
    let brief = std::fs::read_to_string(repo.signals().join("brief-2")).unwrap();
    assert!(!brief.contains("continues run#1"), "{brief}");
    assert!(!brief.contains("is continued by a later run"), "{brief}");
    assert_eq!(idea["state"], "done");
}

#[test]
fn once_the_head_moved_past_it_the_requeued_run_starts_at_the_head_told_where_the_work_is() {
    let repo = campaign("");
    add_idea(&repo, "finish it", "SCRIPT: mode=continue-later\n");
    // Run 1 is left unfinished: tally killed, then its agent.
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
    // A faster candidate by hand: the next `tally run` collects run 1, keeps this (the head
    // moves), then launches the requeued run.
    let baseline = repo.git(&["rev-parse", "HEAD"]);
    repo.commit_bench("by hand", "tok_s=1200\n");
    let out = repo.tally(&["candidate", "add", "HEAD"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(candidate(&repo.status_json(), 1)["verdict"], "keep");

    let idea = ideas(&repo)[0].clone();
    let runs = idea["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{idea}");
    assert_eq!(runs[0]["end"], "interrupted");
    let recovered = runs[0]["commits"][0]["revision"].as_str().unwrap();
    assert_eq!(runs[1]["base"], 1, "run 2 started at the head");
    assert_eq!(
        std::fs::read_to_string(repo.signals().join("conf-2")).unwrap(),
        "tok_s=1200\n"
    );
    let brief = std::fs::read_to_string(repo.signals().join("brief-2")).unwrap();
    let note = format!(
        "run#1 left unfinished work in commit {}, built on candidate#0; the head has moved past it since, so your worktree starts at the head: port what is worth keeping (`git diff {} {}`).",
        &recovered[..12],
        &baseline[..12],
        &recovered[..12]
    );
    assert!(brief.contains(&note), "{brief}");
    assert_eq!(idea["state"], "done", "the one requeue is used");
}
