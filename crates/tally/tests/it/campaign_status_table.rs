//! The candidates table of `tally status` through the binary (`docs/campaign.md#candidates-table`):
//! the change it shows is against the bar the verdict used — the same delta as the reason — and
//! the parent follows, labelled, only where the head moved between queueing and judging; the
//! samples each mean is over are counted; `status --json` carries the bar as `judged_against`.

use regex::Regex;
use serde_json::Value;

use crate::campaign_repo::{CampaignRepo, candidate, section, text, verdicts};

const QUIET: &str = r#"
name = "quiet"
evaluate = ["./evaluate.sh"]

[[metrics]]
name = "tok_s"
direction = "higher"
role = "primary"
repeats = 3
"#;

/// The row of candidate `id` in the candidates section of `status`.
fn row(status: &Value, id: u64) -> Vec<String> {
    let table = &section(status, "candidates").expect("a candidates section")["blocks"][0]["table"];
    assert_eq!(
        table["columns"],
        serde_json::json!([
            "candidate",
            "verdict",
            "tok_s",
            "samples",
            "Δ bar",
            "reason"
        ])
    );
    table["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r.as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        })
        .find(|r| r[0].starts_with(&format!("#{id} ")))
        .unwrap_or_else(|| panic!("no row for #{id}: {table:#}"))
}

#[test]
fn the_table_compares_with_the_bar_the_verdict_used_and_labels_a_different_parent() {
    // Both candidates are queued while the baseline is the head, so both have parent #0. #1
    // (+10%) is kept and becomes the head; #2 (+5% over the baseline, −4.5% against #1) is then
    // judged against #1. Its row must not say +5% where its reason says −52.
    let repo = CampaignRepo::new();
    repo.start_campaign(QUIET, "tok_s=1000\nnoise=0.002\nseed=1\n");
    repo.propose(&[
        "tok_s=1100\nnoise=0.002\nseed=2\n",
        "tok_s=1050\nnoise=0.002\nseed=3\n",
    ]);
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let status = repo.status_json();
    assert_eq!(verdicts(&status), ["keep", "keep", "discard"]);

    let second = candidate(&status, 2);
    assert_eq!(second["parent"], 0);
    assert_eq!(second["judged_against"], 1);
    assert_eq!(candidate(&status, 1)["judged_against"], 0);
    assert_eq!(candidate(&status, 0)["judged_against"], Value::Null);

    // The reason's delta over the pairs is the table's, then the parent's change, labelled.
    let delta = Regex::new(r"^against candidate#(\d+): tok_s \S+ vs \S+ \((\S+);").unwrap();
    let parent = Regex::new(r"; parent #0: \+\S+ \(\+[45]\.\d%\)$").unwrap();
    for id in [1, 2] {
        let reason = candidate(&status, id)["reason"]
            .as_str()
            .unwrap()
            .to_owned();
        let caps = delta
            .captures(&reason)
            .unwrap_or_else(|| panic!("{reason}"));
        let cells = row(&status, id);
        assert!(
            cells[4].starts_with(&format!("{} (", &caps[2])),
            "{cells:?} against {reason}"
        );
        if id == 1 {
            assert_eq!(&caps[1], "0");
            assert!(!cells[4].contains("parent"), "{cells:?}");
        } else {
            assert_eq!(&caps[1], "1");
            assert!(caps[2].starts_with('-'), "{reason}");
            assert!(parent.is_match(&cells[4]), "{cells:?}");
        }
    }
    // The head's mean is over its own three samples and the three it ran as #2's bar; the
    // baseline's over its three and the three as #1's bar.
    assert_eq!(row(&status, 2)[3], "3");
    assert_eq!(row(&status, 1)[3], "3 + 3 as bar");
    assert_eq!(row(&status, 0)[3], "3 + 3 as bar");
    assert_eq!(row(&status, 0)[4], "—");
}
