//! `tally demo`: a complete campaign on a real CPU workload in a throwaway git repository.
//!
//! The repository holds a toy inference server (`demo/bench.py`: batched matrix-vector products
//! in pure Python, so its speed depends on its code) and four candidate commits with real effects
//! of different sizes: a state cache (a large speed-up), a rename (within the noise), a
//! double-checked matmul (a regression) and a typo (a crash). tally measures the baseline, runs
//! the campaign with paired repeats, and shows status with real verdicts. Nothing is faked.

use tally_runner::Git;

use anyhow::{Context, bail};

use crate::cli::DemoArgs;
use crate::cli::{CampaignOptions, CandidateAddArgs, InitArgs, RunArgs, StatusArgs, TemplateArg};
use crate::exit::Status;
use crate::printer;

const BENCH: &str = include_str!("demo/bench.py");
const CONFIG: &str = include_str!("demo/tally.toml");

/// An edit of `bench.py`.
type Edit = fn(&str) -> String;

/// The candidate changes: (commit message, edit of bench.py).
fn changes() -> Vec<(&'static str, Edit)> {
    vec![
        (
            "Cache the decoder state instead of re-running the whole sequence every step",
            |s| {
                s.replace(
                "    \"\"\"Generates NEW_TOKENS tokens. Every step runs the model over the whole sequence again.\"\"\"\n    tokens = list(prompt)\n    for _ in range(NEW_TOKENS):\n        state = [0.0] * HIDDEN\n        for token in tokens:\n            state = layer_step(weights, [s + token * 0.01 for s in state])\n        tokens.append(int(abs(state[0]) * 1000) % 97)\n    return tokens[len(prompt):]\n",
                "    \"\"\"Generates NEW_TOKENS tokens, carrying the state forward (a cache).\"\"\"\n    state = [0.0] * HIDDEN\n    for token in prompt:\n        state = layer_step(weights, [s + token * 0.01 for s in state])\n    out = []\n    for _ in range(NEW_TOKENS):\n        token = int(abs(state[0]) * 1000) % 97\n        out.append(token)\n        state = layer_step(weights, [s + token * 0.01 for s in state])\n    return out\n",
            )
            },
        ),
        ("Rename BATCH to BATCH_SIZE", |s| {
            s.replace("BATCH", "BATCH_SIZE")
        }),
        (
            "Check every layer's output against a second computation",
            |s| {
                s.replace(
                "    for matrix in weights:\n        x = [math.tanh(v) for v in matvec(matrix, x)]\n",
                "    for matrix in weights:\n        y = matvec(matrix, x)\n        assert y == matvec(matrix, x), \"non-deterministic matmul\"\n        x = [math.tanh(v) for v in y]\n",
            )
            },
        ),
        ("Inline the layer loop", |s| {
            s.replace("state = layer_step(weights,", "state = layer_stpe(weights,")
        }),
    ]
}

/// Runs the command.
pub fn run(args: &DemoArgs) -> anyhow::Result<Status> {
    let mut temp: Option<tempfile::TempDir> = None;
    let dir: std::path::PathBuf = match &args.dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("{}: cannot create", dir.display()))?;
            if std::fs::read_dir(dir)?.next().is_some() {
                bail!(
                    "{}: not empty; give --dir a new or empty directory",
                    dir.display()
                );
            }
            // Absolute: the campaign commands work in the repository's root once they start.
            std::path::absolute(dir)
                .with_context(|| format!("{}: cannot resolve", dir.display()))?
        }
        None => {
            let t = tempfile::Builder::new().prefix("tally-demo-").tempdir()?;
            let path = t.path().to_path_buf();
            temp = Some(t);
            path
        }
    };
    let dir = dir.as_path();
    let started = std::time::Instant::now();
    printer::out_line(&format!("demo repository: {}", dir.display()))?;
    let git = Git::init(dir, "main").context("the demo needs git on PATH")?;
    git.command(&["config", "user.name", "tally demo"])?;
    git.command(&["config", "user.email", "demo@tally.invalid"])?;
    git.command(&["config", "commit.gpgsign", "false"])?;
    std::fs::write(dir.join("bench.py"), BENCH)?;
    std::fs::write(dir.join("tally.toml"), CONFIG)?;
    git.command(&["add", "bench.py", "tally.toml"])?;
    git.command(&[
        "commit",
        "-q",
        "-m",
        "A toy inference server and its benchmark",
    ])?;

    let campaign = CampaignOptions {
        database: None,
        repo: Some(dir.to_path_buf()),
    };
    printer::out_line("\n$ tally init")?;
    let status = super::init::run(
        &InitArgs {
            template: TemplateArg::Minimal,
        },
        &campaign,
    )?;
    if status != Status::Success {
        return Ok(status);
    }

    let mut text = std::fs::read_to_string(dir.join("bench.py"))?;
    let mut revisions = Vec::new();
    for (message, edit) in changes() {
        let next = edit(&text);
        if next == text {
            bail!("the demo's change `{message}` did not apply (the workload changed)");
        }
        text = next;
        std::fs::write(dir.join("bench.py"), &text)?;
        git.command(&["commit", "-q", "-am", message])?;
        revisions.push(git.resolve_commit("HEAD")?.as_str().to_owned());
    }
    printer::out_line("\n$ tally candidate add <4 commits>")?;
    super::candidate::run(
        &crate::cli::CandidateCommand::Add(CandidateAddArgs {
            revisions,
            note: Some("demo".into()),
            again: false,
        }),
        &campaign,
    )?;
    printer::out_line("\n$ tally run --until-idle")?;
    let status = super::run::run(&RunArgs { until_idle: true }, &campaign)?;
    if matches!(status, Status::Interrupted(_)) {
        return Ok(status);
    }
    printer::out_line("\n$ tally status")?;
    super::status::run(&StatusArgs { json: false }, &campaign)?;
    printer::out_line(&format!(
        "\ndemo finished in {:.1}s{}",
        started.elapsed().as_secs_f64(),
        if args.dir.is_some() || args.keep {
            format!("; the repository is at {}", dir.display())
        } else {
            String::new()
        }
    ))?;
    if args.keep {
        // Keep the temporary directory: the user asked to look at it.
        if let Some(t) = temp {
            let _ = t.keep();
        }
    }
    Ok(Status::Success)
}
