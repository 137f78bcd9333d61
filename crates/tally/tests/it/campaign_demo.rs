//! `tally demo` (issue 3): a whole campaign on a real CPU workload. Timings on a shared machine
//! vary, so the test asserts only what cannot flake: the large speed-up (candidate#1) is kept,
//! the crash (candidate#4) is a crash, the regression (candidate#3) is not kept.

use crate::campaign_repo::{CampaignRepo, candidate, text};

#[test]
fn the_demo_keeps_the_speed_up_and_not_the_regression_or_the_crash() {
    let sandbox = CampaignRepo::new();
    let dir = sandbox.signals().join("demo");
    let dir_arg = dir.to_str().unwrap();
    let out = sandbox
        .bare_command(&["demo", "--dir", dir_arg])
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.starts_with(&format!("demo repository: {dir_arg}\n")),
        "{stdout}"
    );
    assert!(stdout.contains("\ndemo finished in "), "{stdout}");

    let status = sandbox
        .bare_command(&["status", "--json", "-C", dir_arg])
        .output()
        .unwrap();
    assert_eq!(status.status.code(), Some(0), "{}", text(&status.stderr));
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(candidate(&status, 0)["verdict"], "keep", "the baseline");
    assert_eq!(
        candidate(&status, 1)["verdict"],
        "keep",
        "{:#}",
        candidate(&status, 1)
    );
    assert_eq!(
        candidate(&status, 4)["verdict"],
        "crash",
        "{:#}",
        candidate(&status, 4)
    );
    assert_ne!(
        candidate(&status, 3)["verdict"],
        "keep",
        "{:#}",
        candidate(&status, 3)
    );
    assert!(
        status["candidates"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["verdict"] != "pending")
    );
    assert!(sandbox.leftover_checkouts().is_empty());
}
