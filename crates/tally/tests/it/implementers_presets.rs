//! The presets launched for real (`docs/implementers.md#presets`): a fake executable of each
//! preset's name on `PATH` records the argv and environment it got and the standard input it
//! read, then commits like an agent; the test checks the preset's argv with its placeholders
//! filled, the variables the preset clears, and that `stdin = "brief"` pipes the brief. Each
//! fake then prints what its harness prints at the end (`$E2E_DIR/out-<name>`), and the usage
//! tally reads from it is checked (`docs/implementers.md#usage`).

use std::path::Path;

use crate::campaign_repo::{CampaignRepo, candidate, text};

/// Records `$0 "$@"` one argument a line, the environment and stdin, commits a faster
/// `bench.conf`, then prints the harness output the test left in `$E2E_DIR/out-<name>`.
const FAKE: &str = r#"#!/bin/sh
set -eu
name=$(basename "$0")
for a in "$@"; do printf '%s\n' "$a"; done > "$E2E_DIR/argv-$name"
env > "$E2E_DIR/env-$name"
cat > "$E2E_DIR/stdin-$name"
printf 'tok_s=1300\n' > bench.conf
git commit -qam "$name: faster"
if [ -e "$E2E_DIR/out-$name" ]; then cat "$E2E_DIR/out-$name"; fi
"#;

const CAMPAIGN: &str = r#"
name = "presets"
evaluate = ["./evaluate.sh"]

[[metrics]]
name = "tok_s"
direction = "higher"
role = "primary"
repeats = 2
"#;

fn launch(preset: &str) -> (CampaignRepo, String) {
    launch_printing(preset, "", "")
}

/// Launches the fake of `preset`, which prints `output` on stdout after its commit; `toml` is
/// added to the `[implementer]` table.
fn launch_printing(preset: &str, output: &str, toml: &str) -> (CampaignRepo, String) {
    let repo = CampaignRepo::new();
    repo.start_campaign(
        &format!("{CAMPAIGN}\n[implementer]\npreset = \"{preset}\"\nmodel = \"model-x\"\n{toml}"),
        "tok_s=1000\n",
    );
    if !output.is_empty() {
        std::fs::write(repo.signals().join(format!("out-{preset}")), output).unwrap();
    }
    let bin = repo.signals().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let fake = bin.join(preset);
    std::fs::write(&fake, FAKE).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = repo.tally(&["idea", "add", "go", "--attempts", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = repo
        .command(&["run", "--until-idle"])
        .env("PATH", path)
        .env("CLAUDECODE", "1")
        .env("CLAUDE_CODE_ENTRYPOINT", "cli")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        candidate(&repo.status_json(), 1)["verdict"],
        "keep",
        "the fake's commit is judged"
    );
    let dir = repo.signals();
    let argv = std::fs::read_to_string(dir.join(format!("argv-{preset}"))).unwrap();
    (repo, argv)
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap()
}

fn brief_path(env: &str) -> String {
    env.lines()
        .find_map(|l| l.strip_prefix("TALLY_BRIEF="))
        .unwrap()
        .to_string()
}

#[test]
fn claude_gets_print_mode_a_session_id_and_no_claude_code_variables() {
    let (repo, argv) = launch("claude");
    let env = read(&repo.signals(), "env-claude");
    let lines: Vec<&str> = argv.lines().collect();
    assert_eq!(
        lines[..5],
        ["-p", "--output-format", "json", "--model", "model-x"]
    );
    assert_eq!(lines[5], "--session-id");
    assert_eq!(lines[6].len(), 36, "a UUID: {}", lines[6]);
    assert_eq!(lines[7], "--dangerously-skip-permissions");
    assert_eq!(
        lines[8],
        format!("Read the brief in {} and follow it.", brief_path(&env))
    );
    assert_eq!(lines.len(), 9);
    assert!(
        !env.contains("CLAUDECODE=") && !env.contains("CLAUDE_CODE_"),
        "{env}"
    );
    assert_eq!(read(&repo.signals(), "stdin-claude"), "", "stdin is closed");
}

#[test]
fn codex_reads_the_brief_on_stdin() {
    let (repo, argv) = launch("codex");
    let env = read(&repo.signals(), "env-codex");
    assert_eq!(
        argv,
        "exec\n--json\n--model\nmodel-x\n--skip-git-repo-check\n--dangerously-bypass-approvals-and-sandbox\n-\n"
    );
    let brief = std::fs::read_to_string(brief_path(&env)).unwrap();
    assert_eq!(read(&repo.signals(), "stdin-codex"), brief);
    assert!(
        env.contains("CLAUDECODE=1"),
        "only the claude preset clears it"
    );
}

#[test]
fn gemini_aider_and_pi_get_their_argv() {
    let (repo, argv) = launch("gemini");
    let brief = brief_path(&read(&repo.signals(), "env-gemini"));
    assert_eq!(
        argv,
        format!(
            "-p\nRead the brief in {brief} and follow it.\n-m\nmodel-x\n--approval-mode\nyolo\n--output-format\njson\n"
        )
    );
    let (repo, argv) = launch("aider");
    let brief = brief_path(&read(&repo.signals(), "env-aider"));
    assert_eq!(
        argv,
        format!(
            "--message-file\n{brief}\n--model\nmodel-x\n--yes-always\n--no-pretty\n--no-stream\n--no-gitignore\n--no-check-update\n--analytics-disable\n"
        )
    );
    let (_repo, argv) = launch("pi");
    let lines: Vec<&str> = argv.lines().collect();
    assert_eq!(
        lines[..6],
        ["-p", "--mode", "json", "--model", "model-x", "--session-id"]
    );
    assert_eq!(
        lines[7..11],
        [
            "--approve",
            "--no-extensions",
            "--no-skills",
            "--no-context-files"
        ]
    );
}

#[test]
fn implementer_check_finds_the_harness_and_asks_its_version() {
    let repo = CampaignRepo::new();
    repo.write(
        "tally.toml",
        &format!("{CAMPAIGN}\n[implementer]\npreset = \"claude\"\nmodel = \"m\"\n"),
    );
    repo.commit_bench("baseline", "tok_s=1000\n");
    let bin = repo.signals().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let fake = bin.join("claude");
    std::fs::write(
        &fake,
        "#!/bin/sh\n[ \"$1\" = --version ] && echo '1.0.3 (Claude Code)'\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();

    let out = repo
        .command(&["implementer", "check"])
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        "error: claude: not found on PATH; install it, or name another program in [implementer] command\n"
    );
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let out = repo
        .command(&["implementer", "check"])
        .env("PATH", &path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        format!("claude: {} (1.0.3 (Claude Code))\n", fake.display())
    );

    std::fs::write(&fake, "#!/bin/sh\necho 'unknown option' >&2; exit 2\n").unwrap();
    let out = repo
        .command(&["implementer", "check"])
        .env("PATH", &path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("--version` did not succeed (Exited(2)): unknown option"),
        "{}",
        text(&out.stderr)
    );
}

/// The usage `tally implementer list --json` holds for run#1.
fn usage_of(repo: &CampaignRepo) -> serde_json::Value {
    let out = repo.tally(&["implementer", "list", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let runs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    runs[0]["usage"].clone()
}

fn close(value: &serde_json::Value, expected: f64) -> bool {
    value.as_f64().is_some_and(|x| (x - expected).abs() < 1e-9)
}

#[test]
fn claude_usage_is_the_final_jsons_cost_and_tokens_after_megabytes_of_log() {
    // 5 MiB of output before the final object: more than the 4 MiB tail tally reads.
    let noise = "x".repeat(1023) + "\n";
    let output = format!(
        "{}{}\n",
        noise.repeat(5 * 1024),
        r#"{"type":"result","subtype":"success","is_error":false,"result":"done","total_cost_usd":0.1234,"usage":{"input_tokens":10,"cache_creation_input_tokens":200,"cache_read_input_tokens":3000,"output_tokens":450}}"#
    );
    let (repo, _) = launch_printing("claude", &output, "");
    assert_eq!(
        usage_of(&repo),
        serde_json::json!({"input": 210, "output": 450, "cached": 3000, "usd": 0.1234,
                           "source": "claude", "usd_source": "reported"})
    );
}

#[test]
fn codex_usage_sums_turns_and_is_priced_from_the_table() {
    let output = [
        r#"{"type":"thread.started","thread_id":"t-1"}"#,
        r#"{"type":"turn.completed","usage":{"input_tokens":1000,"cached_input_tokens":400,"output_tokens":50}}"#,
        r#"{"type":"item.completed","item":{"type":"agent_message","text":"ok"}}"#,
        r#"{"type":"turn.completed","usage":{"input_tokens":2000,"cached_input_tokens":1500,"output_tokens":70}}"#,
    ]
    .join("\n");
    let prices =
        "[implementer.prices.\"model-x\"]\ninput = 1.25\ncached_input = 0.125\noutput = 10.0\n";
    let (repo, _) = launch_printing("codex", &output, prices);
    let usage = usage_of(&repo);
    assert_eq!(
        (&usage["input"], &usage["cached"], &usage["output"]),
        (
            &serde_json::json!(1100),
            &serde_json::json!(1900),
            &serde_json::json!(120)
        )
    );
    // 1100 × 1.25 + 1900 × 0.125 + 120 × 10 USD per million tokens.
    assert!(close(&usage["usd"], 0.0028125), "{usage}");
    assert_eq!(
        (&usage["source"], &usage["usd_source"]),
        (&"codex".into(), &"priced".into())
    );
}

#[test]
fn gemini_usage_without_prices_has_tokens_and_an_unknown_cost() {
    let output = r#"{
  "response": "done",
  "stats": {
    "models": {
      "gemini-2.5-pro": {
        "api": {"totalRequests": 2},
        "tokens": {"prompt": 5000, "candidates": 300, "total": 5400, "cached": 1000, "thoughts": 100, "tool": 0}
      }
    }
  }
}
"#;
    let (repo, _) = launch_printing("gemini", output, "");
    assert_eq!(
        usage_of(&repo),
        serde_json::json!({"input": 4000, "output": 400, "cached": 1000, "usd": null,
                           "source": "gemini", "usd_source": null})
    );
    let out = repo.tally(&["implementer", "show", "1"]);
    assert!(
        text(&out.stdout).contains(
            "usage:   4000 in, 400 out, 1000 cached tokens, USD unknown (gemini); record it with `tally implementer usage run#1 --usd X`"
        ),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn implementer_usage_records_a_cost_by_hand_and_keeps_the_tokens() {
    let output =
        r#"{"stats": {"models": {"m": {"tokens": {"prompt": 50, "candidates": 5, "cached": 0}}}}}"#;
    let (repo, _) = launch_printing("gemini", output, "");
    for (args, code, said) in [
        (
            vec!["--usd=-1"],
            1,
            "error: --usd -1: expected a number of USD ≥ 0\n",
        ),
        (vec!["--usd", "abc"], 2, ""),
    ] {
        let mut argv = vec!["implementer", "usage", "run#1"];
        argv.extend(args);
        let out = repo.tally(&argv);
        assert_eq!(out.status.code(), Some(code), "{}", text(&out.stderr));
        assert!(text(&out.stderr).starts_with(said), "{}", text(&out.stderr));
    }
    let out = repo.tally(&["implementer", "usage", "run#9", "--usd", "1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("no run#9 in campaign"),
        "{}",
        text(&out.stderr)
    );
    let out = repo
        .command(&["implementer", "usage", "1", "--usd", "1"])
        .env("TALLY_ACTOR", "implementer#1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "an agent may not price itself");
    assert_eq!(usage_of(&repo)["usd"], serde_json::Value::Null);

    let out = repo.tally(&["implementer", "usage", "#1", "--usd", "0.42"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "run#1: cost $0.4200 recorded by hand (was unknown)\n"
    );
    assert_eq!(
        usage_of(&repo),
        serde_json::json!({"input": 50, "output": 5, "cached": 0, "usd": 0.42,
                           "source": "gemini", "usd_source": "manual"})
    );
    let out = repo.tally(&["implementer", "usage", "1", "--usd", "0.5"]);
    assert_eq!(
        text(&out.stdout),
        "run#1: cost $0.5000 recorded by hand (was $0.4200)\n"
    );
    let shown = text(&repo.tally(&["implementer", "show", "1"]).stdout);
    assert!(
        shown.contains("usage:   50 in, 5 out, 0 cached tokens, $0.5000 (manual, gemini)\n"),
        "{shown}"
    );
    let listed = text(&repo.tally(&["implementer", "list"]).stdout);
    assert!(
        listed.lines().nth(1).unwrap().contains("   0.5000  "),
        "{listed}"
    );
}

#[test]
fn aider_usage_sums_the_token_lines_and_takes_the_last_session_cost() {
    let output = "Applied edit to bench.conf\n\
Tokens: 2.5k sent, 93 received. Cost: $0.0062 message, $0.0062 session.\n\
Commit 1234567 faster\n\
Tokens: 3.0k sent, 1.2k cache write, 8.1k cache hit, 42 received. Cost: $0.01 message, $0.02 session.\n";
    let (repo, _) = launch_printing("aider", output, "");
    assert_eq!(
        usage_of(&repo),
        serde_json::json!({"input": 6700, "output": 135, "cached": 8100, "usd": 0.02,
                           "source": "aider", "usd_source": "reported"})
    );
}

#[test]
fn pi_usage_sums_the_assistant_message_ends() {
    let output = [
        r#"{"type":"session","id":"s-1"}"#,
        r#"{"type":"message_end","message":{"role":"user","usage":{"input":999}}}"#,
        r#"{"type":"message_end","message":{"role":"assistant","usage":{"input":100,"output":20,"cacheRead":50,"cacheWrite":10,"totalTokens":180,"cost":{"total":0.003}}}}"#,
        r#"{"type":"message_end","message":{"role":"assistant","usage":{"input":200,"output":30,"cacheRead":0,"cacheWrite":0,"totalTokens":230,"cost":{"total":0.004}}}}"#,
    ]
    .join("\n");
    let (repo, _) = launch_printing("pi", &output, "");
    let usage = usage_of(&repo);
    assert_eq!(
        (&usage["input"], &usage["cached"], &usage["output"]),
        (
            &serde_json::json!(310),
            &serde_json::json!(50),
            &serde_json::json!(50)
        )
    );
    assert!(close(&usage["usd"], 0.007), "{usage}");
    assert_eq!(usage["usd_source"], "reported");
}

#[test]
fn a_harness_that_reports_nothing_falls_back_to_the_usage_file_else_unknown() {
    let (repo, _) = launch_printing("claude", "not json at all\n", "");
    assert_eq!(
        usage_of(&repo),
        serde_json::Value::Null,
        "unknown, not zero"
    );

    // An agent that prints plain text and writes $TALLY_USAGE_FILE.
    let repo = with_script(
        "echo plain text\nprintf '{\"input\": 7, \"output\": 3, \"usd\": 0.5}' > \"$TALLY_USAGE_FILE\"\n",
    );
    let out = repo.tally(&["run", "--until-idle"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("run#1 usage: 7 in, 3 out, ? cached tokens, $0.5000 (file)"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(
        usage_of(&repo),
        serde_json::json!({"input": 7, "output": 3, "cached": null, "usd": 0.5,
                           "source": "file", "usd_source": "file"})
    );
}

#[test]
fn a_bad_usage_file_is_named_and_the_cost_stays_unknown() {
    let repo = with_script("printf '{\"usd\": -1}' > \"$TALLY_USAGE_FILE\"\n");
    let out = repo.tally(&["run", "--until-idle"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("usage.json: usd = -1: expected a number ≥ 0 (or null: unknown)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("run#1 usage: unknown (nothing reported); record its cost with `tally implementer usage run#1 --usd X`"),
        "{stderr}"
    );
    assert_eq!(usage_of(&repo), serde_json::Value::Null);
}

/// A campaign whose implementer is `sh <script>`: it commits a faster `bench.conf`, then runs
/// `tail`; one idea is queued.
fn with_script(tail: &str) -> CampaignRepo {
    let repo = CampaignRepo::new();
    let script = repo.signals().join("agent.sh");
    repo.start_campaign(
        &format!(
            "{CAMPAIGN}\n[implementer]\ncommand = [\"sh\", {:?}]\n",
            script.display().to_string()
        ),
        "tok_s=1000\n",
    );
    std::fs::write(
        &script,
        format!("set -eu\nprintf 'tok_s=1300\\n' > bench.conf\ngit commit -qam faster\n{tail}"),
    )
    .unwrap();
    let out = repo.tally(&["idea", "add", "go", "--attempts", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    repo
}
