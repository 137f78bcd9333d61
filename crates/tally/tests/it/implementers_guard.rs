//! Inside an implementer's environment (`TALLY_ACTOR` or `TALLY_RUN_TAG` set), every command that
//! changes the campaign refuses with exit 1 and records nothing, while the reading commands work
//! (`docs/implementers.md#protection`).

use crate::campaign_repo::{CampaignRepo, text};

const CAMPAIGN: &str = r#"
name = "guarded"
evaluate = ["./evaluate.sh"]

[[metrics]]
name = "tok_s"
direction = "higher"
role = "primary"
"#;

#[test]
fn write_commands_refuse_inside_an_implementer_and_record_nothing() {
    let repo = CampaignRepo::new();
    let baseline = repo.start_campaign(CAMPAIGN, "tok_s=1000\n");
    let change = repo.commit_bench("a change", "tok_s=1100\n");
    repo.write(
        "report.json",
        r#"{"metrics": {"tok_s": 5000}, "seconds": 1, "error": null}"#,
    );
    let before = repo.status_json();

    let writes: &[(&[&str], &str)] = &[
        (&["init"], "init"),
        (&["run", "--until-idle"], "run"),
        (&["candidate", "add", &change], "candidate add"),
        (&["candidate", "remeasure", "0"], "candidate remeasure"),
        (
            &["candidate", "verdict", "0", "discard", "--reason", "x"],
            "candidate verdict",
        ),
        (
            &["measurement", "add", "0", "--report", "report.json"],
            "measurement add",
        ),
        (&["campaign", "resume"], "campaign resume"),
        (&["idea", "add", "sneaky"], "idea add"),
        (&["idea", "park", "1"], "idea park"),
        (&["implementer", "cancel", "1"], "implementer cancel"),
        (&["store", "check", "--repair"], "store check"),
    ];
    for (marker, value) in [("TALLY_ACTOR", "implementer#3"), ("TALLY_RUN_TAG", "5f0c")] {
        for (args, name) in writes {
            let out = repo.command(args).env(marker, value).output().unwrap();
            assert_eq!(out.status.code(), Some(1), "tally {args:?} with {marker}");
            assert_eq!(
                text(&out.stderr),
                format!(
                    "error: not for implementers: `tally {name}` changes the campaign, and \
                     {marker}={value} says this runs inside an implementer's environment; commit \
                     your change and exit, and tally measures and judges it\n"
                ),
                "tally {args:?}"
            );
        }
    }
    // Nothing was recorded: the same candidates, verdicts and measurements, and no idea.
    assert_eq!(repo.status_json()["candidates"], before["candidates"]);
    assert_eq!(repo.tally(&["idea", "list", "--json"]).stdout, b"[]\n");
    assert_eq!(before["head"]["revision"], baseline.as_str());

    // Reading works inside the environment; an empty marker is no marker.
    for args in [
        &["status"][..],
        &["brief"],
        &["plugins"],
        &["candidate", "show", "0"],
        &["idea", "list"],
    ] {
        let out = repo
            .command(args)
            .env("TALLY_ACTOR", "implementer#3")
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "tally {args:?}: {}",
            text(&out.stderr)
        );
    }
    let out = repo
        .command(&["idea", "add", "fine"])
        .env("TALLY_ACTOR", "")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}
