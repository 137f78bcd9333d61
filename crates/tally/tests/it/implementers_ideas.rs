//! `tally idea add|list|show|park` through the binary (`docs/implementers.md#ideas`): ideas are
//! stored with the campaign, numbered from 1, their text from `--text` or `--file`, their base a
//! candidate named by id or revision, their default attempts the `[implementer]` table's; bad
//! input is refused with the flag or number named and nothing stored.

use serde_json::Value;

use crate::campaign_repo::{CampaignRepo, text};

const CAMPAIGN: &str = r#"
name = "ideas"
evaluate = ["./evaluate.sh"]

[[metrics]]
name = "tok_s"
direction = "higher"
role = "primary"

[implementer]
command = ["sh", "agent.sh", "{brief_file}"]
attempts = 3
"#;

fn ok(repo: &CampaignRepo, args: &[&str]) -> String {
    let out = repo.tally(args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "tally {args:?}: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

fn fails(repo: &CampaignRepo, args: &[&str], code: i32) -> String {
    let out = repo.tally(args);
    assert_eq!(out.status.code(), Some(code), "tally {args:?}");
    assert!(out.stdout.is_empty(), "tally {args:?}");
    text(&out.stderr)
}

#[test]
fn ideas_are_queued_listed_shown_and_parked() {
    let repo = CampaignRepo::new();
    let baseline = repo.start_campaign(CAMPAIGN, "tok_s=1000\n");
    assert_eq!(
        ok(&repo, &["idea", "list"]),
        "no ideas yet; queue one with `tally idea add TITLE --text TEXT`\n"
    );

    assert_eq!(
        ok(
            &repo,
            &[
                "idea",
                "add",
                "fuse the kernels",
                "--text",
                "SCRIPT: set speed=1.10"
            ]
        ),
        "idea#1 queued: fuse the kernels (attempts 3, base the head at launch)\n"
    );
    repo.write("notes/idea.md", "Try a bigger batch.\nKeep p95 flat.\n");
    assert_eq!(
        ok(
            &repo,
            &[
                "idea",
                "add",
                "bigger batch",
                "--file",
                "notes/idea.md",
                "--attempts",
                "1",
                "--base",
                &baseline[..10]
            ]
        ),
        "idea#2 queued: bigger batch (attempts 1, base candidate#0)\n"
    );
    assert_eq!(
        ok(&repo, &["idea", "add", "from the baseline", "--base", "#0"]),
        "idea#3 queued: from the baseline (attempts 3, base candidate#0)\n"
    );

    assert_eq!(
        ok(&repo, &["idea", "list"]),
        "idea     state   attempts  base           title
idea#1   ready          3  head           fuse the kernels
idea#2   ready          1  candidate#0    bigger batch
idea#3   ready          3  candidate#0    from the baseline
"
    );
    assert_eq!(
        ok(&repo, &["idea", "show", "idea#2"]),
        "idea#2: bigger batch
state:    ready
attempts: 1
base:     candidate#0
added by: E2E Tester

Try a bigger batch.
Keep p95 flat.
"
    );

    assert_eq!(ok(&repo, &["idea", "park", "1"]), "idea#1 parked\n");
    assert_eq!(
        ok(&repo, &["idea", "park", "#1"]),
        "idea#1 is already parked\n"
    );
    let list: Value = serde_json::from_str(&ok(&repo, &["idea", "list", "--json"])).unwrap();
    let first = &list[0];
    assert_eq!(first["state"], "parked");
    assert_eq!(first["reason"], "parked by E2E Tester");
    assert_eq!(first["text"], "SCRIPT: set speed=1.10");
    assert_eq!(
        (
            first["attempts"].as_u64(),
            first["attempts_default"].as_bool()
        ),
        (Some(3), Some(true))
    );
    assert_eq!(first["base"], Value::Null);
    assert_eq!(
        (
            list[1]["attempts"].as_u64(),
            list[1]["attempts_default"].as_bool()
        ),
        (Some(1), Some(false))
    );
    assert_eq!(list[1]["base"], 0);
    assert!(
        ok(&repo, &["idea", "show", "1"]).contains("\nstate:    parked (parked by E2E Tester)\n")
    );

    // Without [implementer] the default is 2, resolved when shown.
    repo.write(
        "tally.toml",
        &CAMPAIGN.replace(
            "[implementer]\ncommand = [\"sh\", \"agent.sh\", \"{brief_file}\"]\nattempts = 3\n",
            "",
        ),
    );
    assert!(ok(&repo, &["idea", "show", "3"]).contains("\nattempts: 2 (the default)\n"));
}

#[test]
fn bad_idea_input_is_refused_and_nothing_is_stored() {
    let repo = CampaignRepo::new();
    repo.write("tally.toml", CAMPAIGN);
    repo.commit_bench("baseline", "tok_s=1000\n");
    let err = fails(&repo, &["idea", "add", "x"], 1);
    assert_eq!(
        err,
        "error: campaign `ideas` is not registered; run `tally init` first\n"
    );

    let repo = CampaignRepo::new();
    let _ = repo.start_campaign(CAMPAIGN, "tok_s=1000\n");
    let unqueued = repo.commit_bench("not a candidate", "tok_s=1100\n");
    let err = fails(&repo, &["idea", "add", "t", "--base", &unqueued], 1);
    assert!(
        err.contains(&format!(
            "--base {unqueued}: commit {} is not a candidate of campaign `ideas`; queue it with `tally candidate add {unqueued}` first",
            &unqueued[..12]
        )),
        "{err}"
    );
    let err = fails(&repo, &["idea", "add", "t", "--base", "no-such-branch"], 1);
    assert!(
        err.contains("--base no-such-branch: neither a candidate id nor a revision"),
        "{err}"
    );
    let err = fails(&repo, &["idea", "add", "t", "--file", "missing.md"], 1);
    assert!(
        err.starts_with("error: --file missing.md: cannot read"),
        "{err}"
    );
    let err = fails(
        &repo,
        &["idea", "add", "t", "--text", "a", "--file", "b"],
        2,
    );
    assert!(err.contains("cannot be used with"), "{err}");
    let err = fails(&repo, &["idea", "add", "t", "--attempts", "0"], 2);
    assert!(err.contains("--attempts"), "{err}");
    let err = fails(&repo, &["idea", "add", " "], 1);
    assert!(err.contains("TITLE is empty"), "{err}");
    let err = fails(&repo, &["idea", "show", "candidate#1"], 1);
    assert_eq!(
        err,
        "error: \"candidate#1\" is not an idea number; write 1, #1 or idea#1\n"
    );
    let err = fails(&repo, &["idea", "park", "4"], 1);
    assert_eq!(
        err,
        "error: no idea#4 in campaign `ideas`; `tally idea list` shows them\n"
    );
    assert_eq!(ok(&repo, &["idea", "list", "--json"]), "[]\n");
}
