//! What tally recovers after an agent through the binary (`docs/implementers.md#pins`,
//! `docs/implementers.md#requeue`): the `refs/tally/*` pins an agent deleted are restored at
//! collection, and an idea whose run ended unfinished is launched again from that run's last
//! commit.

use crate::campaign_repo::{CampaignRepo, candidate, text};
use crate::implementers_runs::{add_idea, campaign, ideas};

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
