//! `[implementer]` (`docs/implementers.md#config`): presets resolve with their defaults, a
//! `command` argv keeps its placeholders, and every problem of the table is reported with the
//! others, at its key.

use tally_config::{ConfigError, Overlap, StdinMode, parse_settings};

use crate::config::{MINIMAL, registry};

fn problems(text: &str) -> Vec<String> {
    match parse_settings(text, &registry()) {
        Err(ConfigError::Problems(problems)) => problems.iter().map(ToString::to_string).collect(),
        other => panic!("expected problems, got {other:?}"),
    }
}

#[test]
fn no_implementer_table_means_no_implementers() {
    assert_eq!(
        parse_settings(MINIMAL, &registry()).unwrap().implementer,
        None
    );
}

#[test]
fn a_preset_fills_argv_stdin_usage_and_ignore() {
    let text = format!("{MINIMAL}\n[implementer]\npreset = \"codex\"\nmodel = \"gpt-x\"\n");
    let s = parse_settings(&text, &registry()).unwrap();
    let i = s.implementer.unwrap();
    assert_eq!(i.preset.as_deref(), Some("codex"));
    assert_eq!(i.exe, "codex");
    assert_eq!(i.command[..2], ["codex", "exec"]);
    assert_eq!(i.command.last().map(String::as_str), Some("-"));
    assert_eq!(i.stdin, StdinMode::Brief);
    assert_eq!(i.usage, "codex");
    assert_eq!(i.model.as_deref(), Some("gpt-x"));
    assert_eq!(
        (i.timeout_s, i.wrap_up_s, i.stop_grace_s),
        (1800.0, 300.0, 300.0)
    );
    assert_eq!((i.max_concurrent, i.overlap), (1, Overlap::Serial));
    assert_eq!(
        (i.max_measured, i.attempts, i.requeue_unfinished),
        (5, 2, 1)
    );
    // The campaign's own inputs are protected by default: tally.toml, brief.md and the
    // evaluate argv's paths.
    assert_eq!(i.protect, ["tally.toml", "brief.md", "evaluate.sh"]);

    let aider = format!(
        "{MINIMAL}\n[implementer]\npreset = \"aider\"\nmodel = \"m\"\nignore = [\"cache/**\"]\n"
    );
    let i = parse_settings(&aider, &registry())
        .unwrap()
        .implementer
        .unwrap();
    assert_eq!(i.ignore, [".aider*", "cache/**"]);
    assert_eq!(i.stdin, StdinMode::Null);
}

#[test]
fn a_command_keeps_its_placeholders_and_reads_every_key() {
    // `link` is a top-level key, so it goes before the tables.
    let text = format!(
        r#"link = ["weights"]
{MINIMAL}
[implementer]
command = ["sh", "tests/agent.sh", "{{brief_file}}", "--run={{run}}", '{{"json": true}}']
timeout = 600
wrap_up = 60
stop_grace = 0
max_concurrent = 2
overlap = "parallel"
max_measured = 3
attempts = 4
requeue_unfinished = 0
protect = ["bench/**", "tally.toml"]
env = {{ ANTHROPIC_BASE_URL = "https://gw.example" }}
usage = "codex"
[implementer.prices."gpt-x"]
input = 1.25
output = 10.0
"#
    );
    let s = parse_settings(&text, &registry()).unwrap();
    let i = s.implementer.unwrap();
    assert_eq!(i.preset, None);
    assert_eq!(
        i.command,
        [
            "sh",
            "tests/agent.sh",
            "{brief_file}",
            "--run={run}",
            "{\"json\": true}"
        ]
    );
    assert_eq!(
        (i.timeout_s, i.wrap_up_s, i.stop_grace_s),
        (600.0, 60.0, 0.0)
    );
    assert_eq!((i.max_concurrent, i.overlap), (2, Overlap::Parallel));
    assert_eq!(
        (i.max_measured, i.attempts, i.requeue_unfinished),
        (3, 4, 0)
    );
    assert_eq!(
        i.protect,
        [
            "tally.toml",
            "brief.md",
            "evaluate.sh",
            "weights",
            "bench/**"
        ]
    );
    assert_eq!(i.env["ANTHROPIC_BASE_URL"], "https://gw.example");
    assert_eq!(i.usage, "codex");
    let price = &i.prices["gpt-x"];
    assert_eq!(
        (price.input, price.cached_input, price.output),
        (1.25, 1.25, 10.0)
    );
}

#[test]
fn every_implementer_problem_is_reported_with_the_others() {
    let text = format!(
        r#"{MINIMAL}
[implementer]
command = ["sh", "agent.sh", "{{brief}}", "{{model}}"]
timeout = 100
wrap_up = 100
stop_grace = -5
max_concurrent = 2
overlap = "sometimes"
attempts = 0
requeue_unfinished = 1.5
protect = ["/etc/passwd"]
env = {{ TALLY_RUN = "7", "1X" = "y" }}
usage = "tokens"
stdin = "file"
retries = 3
stop_grace_s = 1
[implementer.prices."gpt-x"]
input = -1
"#
    )
    .replace("name = \"demo\"", "name = \"\"");
    let lines = problems(&text);
    let expected = [
        "name = \"\": expected a non-empty string naming the campaign",
        "implementer.retries: unknown key; expected one of: preset, command, model, stdin, timeout, wrap_up, stop_grace, max_concurrent, overlap, max_measured, attempts, requeue_unfinished, protect, ignore, env, usage, prices",
        "implementer.stop_grace_s: unknown key; did you mean `stop_grace`?",
        "implementer.command[2] = \"{brief}\": unknown placeholder {brief}; expected one of: {prompt}, {brief_file}, {model}, {worktree}, {run}, {session_id}, {deadline}, {log_dir}",
        "implementer.model: missing: `command` uses {model}; add `model = \"...\"`",
        "implementer.stdin = \"file\": expected \"null\" (no input) or \"brief\" (the brief piped, then closed)",
        "implementer.wrap_up = 100: expected seconds before the timeout, at least 0 and less than `timeout` (100)",
        "implementer.stop_grace = -5: expected seconds an agent has after a stop before it is terminated, a number ≥ 0",
        "implementer.overlap = \"sometimes\": expected \"serial\" (nothing else runs while an implementer works) or \"parallel\"",
        "implementer.max_concurrent = 2: more than one implementer at once needs `overlap = \"parallel\"` (serial runs nothing beside an implementer)",
        "implementer.attempts = 0: expected a whole number ≥ 1",
        "implementer.requeue_unfinished = 1.5: expected a whole number ≥ 0 (extra runs of an unfinished idea; 0 turns requeueing off)",
        "implementer.protect[0] = \"/etc/passwd\": expected a repo-relative glob (no leading `/`, no `..`), e.g. \"bench/**\"",
        "implementer.env.1X: not a variable name: use letters, digits and `_`, not starting with a digit",
        "implementer.env.TALLY_RUN: reserved: tally sets the TALLY_* variables of an implementer itself",
        "implementer.usage = \"tokens\": expected one of: claude, codex, gemini, aider, pi, file, none",
        "implementer.prices.\"gpt-x\".input = -1: expected USD per million tokens, a number ≥ 0",
        "implementer.prices.\"gpt-x\".output: missing: USD per million tokens",
    ];
    assert_eq!(lines, expected);
}

#[test]
fn a_preset_needs_a_model_and_must_exist() {
    let lines = problems(&format!("{MINIMAL}\n[implementer]\npreset = \"claude\"\n"));
    assert_eq!(
        lines,
        [
            "implementer.model: missing: the claude preset's argv uses {model}; add `model = \"...\"`"
        ]
    );
    let lines = problems(&format!("{MINIMAL}\n[implementer]\npreset = \"cursor\"\n"));
    assert_eq!(
        lines,
        [
            "implementer.preset = \"cursor\": unknown preset; expected one of: claude, codex, gemini, aider, pi (or a `command` argv)"
        ]
    );
    let lines = problems(&format!("{MINIMAL}\n[implementer]\ntimeout = 60\n"));
    assert_eq!(
        lines,
        [
            "implementer.preset: missing: set `preset` (claude, codex, gemini, aider, pi) or `command = [\"sh\", \"agent.sh\", \"{brief_file}\"]`"
        ]
    );
}

#[test]
fn a_timeout_must_be_positive_and_at_most_thirty_days() {
    for bad in ["0", "-1", "1e300", "2592001"] {
        let lines = problems(&format!(
            "{MINIMAL}\n[implementer]\ncommand = [\"sh\", \"agent.sh\"]\ntimeout = {bad}\n"
        ));
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].starts_with("implementer.timeout = ")
                && lines[0].ends_with(
                    ": expected a positive number of seconds, at most 2592000 (30 days)"
                ),
            "{lines:?}"
        );
    }
    let text =
        format!("{MINIMAL}\n[implementer]\ncommand = [\"sh\", \"agent.sh\"]\ntimeout = 2592000\n");
    let i = parse_settings(&text, &registry())
        .unwrap()
        .implementer
        .unwrap();
    assert_eq!(i.timeout_s, 2_592_000.0);
}
