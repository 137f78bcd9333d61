//! Out-of-tree providers in a real campaign (`docs/campaign.md#external-providers`): a verdict rule and a
//! fact source written in Python, speaking the exec protocol to the real binary. `tally plugins`
//! lists them as they describe themselves; a fact source that fails holds the campaign with its
//! error, a verdict rule that answers nonsense leaves the candidate pending with its error, each
//! naming the provider, and the campaign goes on once they are fixed.
//!
//! The providers misbehave while a file of the signal directory says so (`broken-gather`,
//! `broken-decide`), so a test can break and mend them without touching the repository.

use crate::campaign_repo::{CampaignRepo, candidate, text, verdicts};

/// Keeps a candidate whose primary mean beats the bar's by `threshold` (a fraction).
const RULE: &str = r#"#!/usr/bin/env python3
import json, os, sys
request = json.load(sys.stdin)
method, params, case = request["method"], request["params"], request["input"]
if method == "describe":
    result = {"name": "relative_gain", "doc": "keeps a mean that beats the bar's by a threshold",
              "params": [{"name": "threshold", "kind": "number", "required": True,
                          "doc": "the smallest relative gain kept"}]}
elif os.path.exists(os.path.join(os.environ["E2E_DIR"], "broken-decide")):
    print("hello")
    sys.exit(0)
else:
    name = case["primary"]["name"]
    cand, bar = case["candidate"]["means"].get(name), case["bar"]["means"].get(name)
    if cand is None:
        result = {"outcome": "crash", "reason": "no successful measurement"}
    elif bar is None:
        result = {"outcome": "keep", "reason": "no bar"}
    else:
        gain = (cand - bar) / abs(bar)
        outcome = "keep" if gain >= params["threshold"] else "discard"
        result = {"outcome": outcome, "reason": f"{name} {gain:+.1%} against candidate#{case['bar']['id']}"}
json.dump({"ok": result}, sys.stdout)
"#;

/// Prices the campaign's seconds at a spot rate (`spot_usd`).
const SPOT: &str = r#"#!/usr/bin/env python3
import json, os, sys
request = json.load(sys.stdin)
method, data = request["method"], request["input"]
if method == "describe":
    json.dump({"ok": {"name": "spot_price", "doc": "evaluation time at a spot price",
                      "params": [], "facts": [{"name": "spot_usd", "unit": "USD",
                                               "doc": "evaluation time at $3 per hour"}]}}, sys.stdout)
elif os.path.exists(os.path.join(os.environ["E2E_DIR"], "broken-gather")):
    print("the spot market is closed", file=sys.stderr)
    sys.exit(3)
else:
    seconds = sum(m["seconds"] or 0 for m in data["measurements"])
    json.dump({"ok": {"spot_usd": seconds / 3600 * 3.0}}, sys.stdout)
"#;

const EXTERNAL: &str = r#"
name = "external"
evaluate = ["./evaluate.sh"]

[[metrics]]
name = "tok_s"
direction = "higher"
role = "primary"
repeats = 2

[plugins.verdict_rule]
provider = "exec"
command = ["./rule.py"]
params = { threshold = 0.05 }

[plugins.stop_rule]
provider = "limits"
hold_at = { spot_usd = 100 }

[[plugins.fact_source]]
provider = "exec"
command = ["./spot.py"]
"#;

#[test]
fn external_providers_are_listed_and_their_failures_named_while_the_campaign_stays_whole() {
    let repo = CampaignRepo::new();
    repo.write_executable("rule.py", RULE);
    repo.write_executable("spot.py", SPOT);
    repo.start_campaign(EXTERNAL, "tok_s=1000\nnoise=0.01\n");

    let plugins = text(&repo.tally(&["plugins"]).stdout);
    assert!(
        plugins.contains(
            "* relative_gain (external): keeps a mean that beats the bar's by a threshold\n      threshold (number, required): the smallest relative gain kept\n"
        ),
        "{plugins}"
    );
    assert!(
        plugins.contains(
            "* spot_price (external): evaluation time at a spot price\n      fact spot_usd [USD]: evaluation time at $3 per hour\n"
        ),
        "{plugins}"
    );

    repo.propose(&["tok_s=1100\nnoise=0.01\n"]);
    // A failing fact source holds the campaign before anything runs: never read as zero.
    repo.signal("broken-gather");
    let out = repo.run_until_idle();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    let status = repo.status_json();
    assert_eq!(
        status["campaign"]["reason"],
        "hold_at: spot_usd unknown: exec ./spot.py: exited with status 3; stderr: the spot market is closed"
    );
    assert_eq!(verdicts(&status), ["keep", "pending"]);
    assert!(
        candidate(&status, 1)["measurements"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    // A verdict rule that answers nonsense leaves the candidate pending, saying why.
    std::fs::remove_file(repo.signals().join("broken-gather")).unwrap();
    repo.signal("broken-decide");
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let status = repo.status_json();
    assert_eq!(status["campaign"]["state"], "active");
    assert_eq!(verdicts(&status), ["keep", "pending"]);
    let reason = candidate(&status, 1)["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        reason.starts_with("the verdict rule failed: exec ./rule.py: answered malformed JSON"),
        "{reason}"
    );

    // Mended, the next run judges it with the external rule.
    std::fs::remove_file(repo.signals().join("broken-decide")).unwrap();
    let out = repo.run_until_idle();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let status = repo.status_json();
    assert_eq!(verdicts(&status), ["keep", "keep"]);
    let reason = candidate(&status, 1)["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        regex::Regex::new(r"^tok_s \+(9|10|11)\.\d% against candidate#0$")
            .unwrap()
            .is_match(&reason),
        "{reason}"
    );
    let spot = status["facts"]["spot_usd"].as_f64().unwrap();
    assert!(spot > 0.0 && spot < 0.01, "{spot}");
}
