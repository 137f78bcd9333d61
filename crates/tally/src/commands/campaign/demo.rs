//! `tally demo`: a complete campaign on a simulated inference engine in a throwaway git repository.
//!
//! The repository holds an engine configuration (`demo/engine.conf`) and a benchmark
//! (`demo/evaluate.sh`) that serves it with `tally bench fake-server --mode batched` — a
//! continuous-batching engine behind a real HTTP server on loopback — and measures it with `tally
//! bench openai`. Five candidate commits change the engine as real work would: a 20 % cheaper
//! decode step (a large speed-up), a comment (noise), a 3 % cheaper step (a real gain that the
//! `min_speedup` rule finds merely interesting), a prefill regression and a typo (a crash). tally
//! measures the baseline, runs the campaign with paired repeats, and shows status with real
//! verdicts from real load and what the evaluations cost at the demo's notional GPU price.
//!
//! Without `--dir` the repository is a temporary directory, removed when the demo ends (it says
//! so, and `--keep` keeps it).

use tally_runner::Git;

use anyhow::{Context, bail};

use crate::cli::DemoArgs;
use crate::cli::{CampaignOptions, CandidateAddArgs, InitArgs, RunArgs, StatusArgs, TemplateArg};
use crate::exit::Status;
use crate::printer;

const ENGINE: &str = include_str!("demo/engine.conf");
const BENCH: &str = include_str!("demo/evaluate.sh");
const CONFIG: &str = include_str!("demo/tally.toml");

/// An edit of `engine.conf`.
type Edit = fn(&str) -> String;

/// The candidate changes: (commit message, edit of engine.conf).
fn changes() -> Vec<(&'static str, Edit)> {
    vec![
        (
            "Fuse the decode kernels: 20% less time per running sequence",
            |s| s.replace("step_per_seq=0.5", "step_per_seq=0.4"),
        ),
        ("Explain the engine's settings", |s| {
            s.replace(
                "# The demo's inference engine:",
                "# The demo's simulated engine:",
            )
        }),
        (
            "Skip the scheduler's bookkeeping on steps without admissions: 0.12 ms less per step",
            |s| s.replace("step_base=1.0", "step_base=0.88"),
        ),
        (
            "Recompute the prompt's attention when a sequence is admitted",
            |s| s.replace("prefill_per_token=0.002", "prefill_per_token=0.2"),
        ),
        ("Tune the decode step", |s| {
            s.replace("step_per_seq=0.4", "step_per_seq=O.4")
        }),
    ]
}

/// The benchmark with this tally binary's path in it (single-quoted for sh).
fn bench_script() -> anyhow::Result<String> {
    let exe = std::env::current_exe().context("cannot find the tally binary")?;
    let quoted = format!("'{}'", exe.display().to_string().replace('\'', "'\\''"));
    Ok(BENCH.replace("@TALLY@", &quoted))
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
    printer::out_line(&if temp.is_some() && !args.keep {
        format!(
            "demo repository: {} (temporary: removed when the demo ends; `tally demo --keep` keeps it)",
            dir.display()
        )
    } else {
        format!("demo repository: {}", dir.display())
    })?;
    let git = Git::init(dir, "main").context("the demo needs git on PATH")?;
    git.command(&["config", "user.name", "tally demo"])?;
    git.command(&["config", "user.email", "demo@tally.invalid"])?;
    git.command(&["config", "commit.gpgsign", "false"])?;
    std::fs::write(dir.join("engine.conf"), ENGINE)?;
    std::fs::write(dir.join("evaluate.sh"), bench_script()?)?;
    std::fs::write(dir.join("tally.toml"), CONFIG)?;
    git.command(&["add", "engine.conf", "evaluate.sh", "tally.toml"])?;
    git.command(&[
        "commit",
        "-q",
        "-m",
        "A simulated inference engine and its benchmark",
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

    let mut text = std::fs::read_to_string(dir.join("engine.conf"))?;
    let mut revisions = Vec::new();
    for (message, edit) in changes() {
        let next = edit(&text);
        if next == text {
            bail!("the demo's change `{message}` did not apply (the workload changed)");
        }
        text = next;
        std::fs::write(dir.join("engine.conf"), &text)?;
        git.command(&["commit", "-q", "-am", message])?;
        revisions.push(git.resolve_commit("HEAD")?.as_str().to_owned());
    }
    printer::out_line(&format!(
        "\n$ tally candidate add <{} commits>",
        revisions.len()
    ))?;
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
    let elapsed = started.elapsed().as_secs_f64();
    match temp {
        Some(t) if !args.keep => {
            let shown = dir.display().to_string();
            t.close()
                .with_context(|| format!("{shown}: cannot remove the demo repository"))?;
            printer::out_line(&format!(
                "\ndemo finished in {elapsed:.1}s; removed {shown} (`tally demo --keep` keeps it)"
            ))?;
        }
        kept => {
            // Keep the temporary directory: the user asked to look at it.
            if let Some(t) = kept {
                let _ = t.keep();
            }
            printer::out_line(&format!(
                "\ndemo finished in {elapsed:.1}s; the repository is at {}",
                dir.display()
            ))?;
        }
    }
    Ok(Status::Success)
}
