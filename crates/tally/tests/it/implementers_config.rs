//! `[implementer]` through the binary (`docs/implementers.md#config`): its problems are reported
//! with every other problem of `tally.toml` by every command that reads the campaign, and
//! `tally plugins` lists the shipped presets, marking the one the campaign names; `tally run`
//! refuses `evaluation_slots` above 1 with an `[implementer]` table before it takes a slot.

use serde_json::Value;

use crate::campaign_repo::{CampaignRepo, text};

const CAMPAIGN: &str = r#"
name = "agents"
evaluate = ["./evaluate.sh"]

[[metrics]]
name = "tok_s"
direction = "higher"
role = "primary"
"#;

#[test]
fn implementer_problems_are_reported_with_the_others() {
    let repo = CampaignRepo::new();
    repo.write(
        "tally.toml",
        &format!(
            "{}\n[implementer]\ncommand = [\"sh\", \"agent.sh\", \"{{brief_file}}\", \"--at={{dir}}\"]\nwrap_up = 9000\nrequeue_unfinished = -1\nenv = {{ TALLY_ACTOR = \"me\" }}\n",
            CAMPAIGN.replace("direction = \"higher\"", "direction = \"up\"")
        ),
    );
    repo.commit_bench("baseline", "tok_s=1000\n");
    let expected = format!(
        "error: {}/tally.toml: 5 problems:
  metrics[0].direction = \"up\": expected \"higher\" or \"lower\"
  implementer.command[3] = \"--at={{dir}}\": unknown placeholder {{dir}}; expected one of: {{prompt}}, {{brief_file}}, {{model}}, {{worktree}}, {{run}}, {{session_id}}, {{deadline}}, {{log_dir}}
  implementer.wrap_up = 9000: expected seconds before the timeout, at least 0 and less than `timeout` (1800)
  implementer.requeue_unfinished = -1: expected a whole number ≥ 0 (extra runs of an unfinished idea; 0 turns requeueing off)
  implementer.env.TALLY_ACTOR: reserved: tally sets the TALLY_* variables of an implementer itself
",
        repo.root().display()
    );
    for args in [
        &["init"][..],
        &["status"],
        &["brief"],
        &["run", "--until-idle"],
    ] {
        let out = repo.tally(args);
        assert_eq!(out.status.code(), Some(1), "tally {args:?}");
        assert_eq!(text(&out.stderr), expected, "tally {args:?}");
    }
    assert!(
        !repo.root().join(".tally").exists(),
        "nothing was registered"
    );
}

#[test]
fn plugins_lists_the_presets_and_marks_the_chosen_one() {
    let repo = CampaignRepo::new();
    repo.write(
        "tally.toml",
        &format!("{CAMPAIGN}\n[implementer]\npreset = \"gemini\"\nmodel = \"gemini-2.5-pro\"\n"),
    );
    repo.commit_bench("baseline", "tok_s=1000\n");

    let out = repo.tally(&["plugins"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let listing = text(&out.stdout);
    let presets = listing
        .split("\nimplementer presets ([implementer] preset = \"NAME\")\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no presets block:\n{listing}"));
    let names: Vec<&str> = presets
        .lines()
        .filter(|l| !l.starts_with("      "))
        .map(|l| l.split(':').next().unwrap())
        .collect();
    assert_eq!(
        names,
        ["  claude", "  codex", "* gemini", "  aider", "  pi"]
    );
    assert!(
        presets.contains(
            "      argv: gemini -p {prompt} -m {model} --approval-mode yolo --output-format json\n"
        ),
        "{presets}"
    );
    assert!(
        presets.contains("      stdin null, usage aider, ignores .aider*\n"),
        "{presets}"
    );

    let out = repo.tally(&["plugins", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let presets = json["implementer_presets"].as_array().unwrap();
    let selected: Vec<(&str, &Value)> = presets
        .iter()
        .map(|p| (p["name"].as_str().unwrap(), &p["selected"]))
        .collect();
    assert_eq!(
        selected,
        [
            ("claude", &Value::Bool(false)),
            ("codex", &Value::Bool(false)),
            ("gemini", &Value::Bool(true)),
            ("aider", &Value::Bool(false)),
            ("pi", &Value::Bool(false)),
        ]
    );
    assert_eq!(presets[1]["stdin"], "brief");
    assert_eq!(presets[0]["clear_env"][1], "CLAUDE_CODE_*");
    // Outside a campaign nothing is selected.
    let out = repo
        .bare_command(&["plugins", "--json"])
        .current_dir("/")
        .output()
        .unwrap();
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        json["implementer_presets"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["selected"].is_null())
    );
}

#[test]
fn implementers_with_several_slurm_slots_are_refused_before_any_job() {
    let repo = CampaignRepo::new();
    repo.write(
        "tally.toml",
        &format!(
            "evaluation_slots = 2\n{CAMPAIGN}\n[executor]\nkind = \"slurm\"\n\n\
             [implementer]\ncommand = [\"sh\", \"agent.sh\", \"{{brief_file}}\"]\n\
             max_concurrent = 2\noverlap = \"parallel\"\n"
        ),
    );
    repo.commit_bench("baseline", "tok_s=1000\n");
    let out = repo.tally(&["run", "--until-idle"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("an [implementer] table with evaluation_slots = 2")
            && stderr.contains("the slots one run works with Slurm are not driven beside agents")
            && stderr.contains("set evaluation_slots = 1"),
        "{stderr}"
    );
    assert!(
        !repo.root().join(".tally").exists(),
        "refused before any slot was taken"
    );
}
