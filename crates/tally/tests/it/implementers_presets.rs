//! The presets launched for real (`docs/implementers.md#presets`): a fake executable of each
//! preset's name on `PATH` records the argv and environment it got and the standard input it
//! read, then commits like an agent; the test checks the preset's argv with its placeholders
//! filled, the variables the preset clears, and that `stdin = "brief"` pipes the brief.

use std::path::Path;

use crate::campaign_repo::{CampaignRepo, candidate, text};

/// Records `$0 "$@"` one argument a line, the environment and stdin, then commits a faster
/// `bench.conf`.
const FAKE: &str = r#"#!/bin/sh
set -eu
name=$(basename "$0")
for a in "$@"; do printf '%s\n' "$a"; done > "$E2E_DIR/argv-$name"
env > "$E2E_DIR/env-$name"
cat > "$E2E_DIR/stdin-$name"
printf 'tok_s=1300\n' > bench.conf
git commit -qam "$name: faster"
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
    let repo = CampaignRepo::new();
    repo.start_campaign(
        &format!("{CAMPAIGN}\n[implementer]\npreset = \"{preset}\"\nmodel = \"model-x\"\n"),
        "tok_s=1000\n",
    );
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
