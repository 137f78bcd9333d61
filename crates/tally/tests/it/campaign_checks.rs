//! The `[checks]` gate through the binary (`docs/campaign.md#checks`): the commands run in each
//! candidate's checkout before its first sample; a failing one ends the candidate `discard`
//! unmeasured, its name and last output lines in the reason; passing and failing runs are
//! recorded and shown by `candidate show`; a `tally run` killed during a check leaves nothing
//! recorded, and the next one checks again; `[checks]` problems are reported with the others.

use std::process::Stdio;

use serde_json::Value;

use crate::campaign_repo::{CampaignRepo, candidate, text};

/// The check: `check=` of `bench.conf` says what it does. It logs each run to `$E2E_DIR/order`.
const CHECK: &str = r#"#!/bin/sh
set -eu
printf 'check %s %s\n' "$TALLY_CANDIDATE" "$TALLY_CHECK" >> "$E2E_DIR/order"
pwd > "$E2E_DIR/check-pwd-$TALLY_CANDIDATE"
case "$(sed -n 's/^check=//p' bench.conf | tail -n 1)" in
fail)
    echo "running 3 tests"
    echo "test parse ... ok" >&2
    echo "test decode ... FAILED" >&2
    echo "1 of 3 tests failed" >&2
    exit 101 ;;
stall)
    if [ ! -e "$E2E_DIR/stalled" ]; then
        : > "$E2E_DIR/stalled"
        while [ ! -e "$E2E_DIR/release" ] && [ -d "$E2E_DIR" ]; do sleep 0.05; done
    fi ;;
esac
"#;

/// The benchmark, logging each sample to `$E2E_DIR/order` before it runs.
const WRAP: &str = r#"#!/bin/sh
printf 'sample %s %s\n' "$TALLY_CANDIDATE" "$TALLY_SIDE" >> "$E2E_DIR/order"
exec ./evaluate.sh
"#;

const CONFIG: &str = r#"
name = "checked"
evaluate = ["sh", "wrap.sh"]

[[metrics]]
name = "tok_s"
direction = "higher"
role = "primary"
repeats = 2

[checks]
timeout = 60
commands = [
    ["sh", "check.sh"],
    { name = "lint", argv = ["sh", "check.sh"] },
]
"#;

fn campaign() -> CampaignRepo {
    let repo = CampaignRepo::new();
    repo.write_executable("check.sh", CHECK);
    repo.write_executable("wrap.sh", WRAP);
    repo.start_campaign(CONFIG, "tok_s=1000\n");
    repo
}

fn order(repo: &CampaignRepo) -> Vec<String> {
    std::fs::read_to_string(repo.signals().join("order"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

fn show(repo: &CampaignRepo, id: &str) -> Value {
    let out = repo.tally(&["candidate", "show", id, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_failing_check_discards_the_candidate_unmeasured_and_a_passing_one_is_measured() {
    let repo = campaign();
    repo.propose(&["tok_s=1500\n", "tok_s=3000\ncheck=fail\n"]);
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    let status = repo.status_json();
    let passed = candidate(&status, 1);
    assert_eq!(passed["verdict"], "keep", "{passed}");
    let failed = candidate(&status, 2);
    assert_eq!(failed["verdict"], "discard", "{failed}");
    assert_eq!(
        failed["reason"],
        "check `sh check.sh` failed: exit 101: test parse ... ok | test decode ... FAILED | 1 of 3 tests failed"
    );

    // Checks before samples; the failed candidate has no sample at all.
    let seen = order(&repo);
    let first_sample_of_1 = seen
        .iter()
        .position(|l| l.starts_with("sample 1 "))
        .unwrap();
    let check_of_1 = seen
        .iter()
        .position(|l| l == "check 1 sh check.sh")
        .unwrap();
    assert!(check_of_1 < first_sample_of_1, "{seen:?}");
    assert!(!seen.iter().any(|l| l.starts_with("sample 2 ")), "{seen:?}");
    assert!(
        seen.contains(&"check 2 sh check.sh".to_string()),
        "{seen:?}"
    );
    // The baseline is not checked; the second check of candidate 3 never ran.
    assert!(!seen.iter().any(|l| l.starts_with("check 0 ")), "{seen:?}");
    assert!(!seen.iter().any(|l| l == "check 2 lint"), "{seen:?}");
    assert!(seen.contains(&"check 1 lint".to_string()), "{seen:?}");

    // In the candidate's own checkout, not the repository.
    let pwd = std::fs::read_to_string(repo.signals().join("check-pwd-1")).unwrap();
    assert!(
        !pwd.trim().starts_with(&repo.root().display().to_string()),
        "{pwd}"
    );

    let shown = show(&repo, "2");
    assert_eq!(shown["measurements"], Value::Array(vec![]));
    assert_eq!(shown["checks"][0]["passed"], false);
    assert_eq!(shown["checks"][0]["failed_check"], "sh check.sh");
    assert_eq!(shown["checks"][0]["current"], true);
    let shown = show(&repo, "1");
    assert_eq!(shown["checks"][0]["passed"], true);
    assert_eq!(shown["checks"][0]["commands"], 2);
    let out = repo.tally(&["candidate", "show", "2"]);
    assert!(
        text(&out.stdout).contains("  checks: failed at `sh check.sh`\n"),
        "{}",
        text(&out.stdout)
    );

    // A passed candidate is not checked again: remeasuring it runs samples only.
    let before = seen.iter().filter(|l| l.starts_with("check 1 ")).count();
    let out = repo.tally(&["candidate", "remeasure", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let after = order(&repo);
    assert_eq!(
        after.iter().filter(|l| l.starts_with("check 1 ")).count(),
        before,
        "{after:?}"
    );
}

#[test]
fn a_tally_run_killed_during_a_check_records_nothing_and_the_next_one_checks_again() {
    let repo = campaign();
    repo.propose(&["tok_s=1500\ncheck=stall\n"]);
    let mut child = repo
        .command(&["run", "--until-idle"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    repo.wait_for_signal("stalled");
    child.kill().unwrap();
    child.wait().unwrap();
    repo.signal("release");
    assert_eq!(show(&repo, "1")["checks"], Value::Array(vec![]));
    assert_eq!(candidate(&repo.status_json(), 1)["verdict"], "pending");

    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(candidate(&repo.status_json(), 1)["verdict"], "keep");
    let checks = order(&repo)
        .iter()
        .filter(|l| *l == "check 1 sh check.sh")
        .count();
    assert_eq!(checks, 2, "{:?}", order(&repo));
    let shown = show(&repo, "1");
    assert_eq!(shown["checks"].as_array().map(Vec::len), Some(1), "{shown}");
    assert_eq!(shown["checks"][0]["passed"], true);
}

#[test]
fn checks_problems_are_reported_with_the_others() {
    let repo = CampaignRepo::new();
    repo.write(
        "tally.toml",
        "name = \"checked\"\nevaluate = [\"./evaluate.sh\"]\nevaluate_timeout = -1\n\n\
         [[metrics]]\nname = \"tok_s\"\ndirection = \"higher\"\nrole = \"primary\"\n\n\
         [checks]\ntimout = 5\ncommands = [[\"cargo\", \"test\"], [], { name = \"cargo test\", argv = [\"x\"] }, 7]\n",
    );
    repo.commit_bench("baseline", "tok_s=1000\n");
    let out = repo.tally(&["status"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        format!(
            "error: {}/tally.toml: 5 problems:
  evaluate_timeout = -1: expected a positive number of seconds per sample
  checks.timout: unknown key; did you mean `timeout`?
  checks.commands[1] = []: expected a non-empty argv, a list of strings such as [\"cargo\", \"test\"] (use [\"sh\", \"-c\", \"...\"] for a shell)
  checks.commands[2] = \"cargo test\": another check has this name; give each entry its own `name`
  checks.commands[3] = 7: expected an argv such as [\"cargo\", \"test\"] or a table {{ name = \"unit\", argv = [...] }}
",
            repo.root().display()
        )
    );
}
