//! `tally init [--template minimal|inference]`, in two steps (`docs/campaign.md#commands`): without
//! `tally.toml`, write it, an evaluate script and `brief.md` from the template (never overwriting
//! anything) and say what to fill in; with it, validate it, refuse uncommitted changes to it or to
//! the evaluate script, measure the baseline (HEAD) and register the campaign.

use std::path::Path;

use anyhow::{Context, bail};
use tally_engine::InitOutcome;

use super::context::{CONFIG_FILE, Loaded, Workspace, engine};
use super::progress::{Progress, interrupt_token, interrupting_signal};
use crate::cli::{CampaignOptions, InitArgs, TemplateArg};
use crate::exit::Status;
use crate::printer;

/// The files of a template: (name, text, executable).
fn template_files(template: TemplateArg) -> [(&'static str, &'static str, bool); 3] {
    match template {
        TemplateArg::Minimal => [
            (
                CONFIG_FILE,
                include_str!("templates/minimal/tally.toml"),
                false,
            ),
            (
                "evaluate.sh",
                include_str!("templates/minimal/evaluate.sh"),
                true,
            ),
            (
                "brief.md",
                include_str!("templates/minimal/brief.md"),
                false,
            ),
        ],
        TemplateArg::Inference => [
            (
                CONFIG_FILE,
                include_str!("templates/inference/tally.toml"),
                false,
            ),
            (
                "evaluate.sh",
                include_str!("templates/inference/evaluate.sh"),
                true,
            ),
            (
                "brief.md",
                include_str!("templates/inference/brief.md"),
                false,
            ),
        ],
    }
}

/// Runs the command.
pub fn run(args: &InitArgs, options: &CampaignOptions) -> anyhow::Result<Status> {
    let workspace = Workspace::discover(options)?;
    if workspace.config_text()?.is_none() {
        return write_template(&workspace, args.template);
    }
    let loaded = workspace.load()?;
    let store = workspace.open_store()?;
    // A registered campaign with a measured baseline is only re-validated and compared: nothing
    // runs, so uncommitted edits (the usual reason to run init again) are fine.
    let measured = store
        .campaign_by_name(&loaded.settings.name)?
        .is_some_and(|c| c.head.is_some());
    if !measured {
        refuse_uncommitted(&workspace, &loaded)?;
    }
    let head = workspace
        .git
        .resolve_commit("HEAD")
        .context("the repository has no commit yet; commit tally.toml and your code first")?;
    let runner = workspace.runner(&loaded.settings, 0)?;
    // Measuring the baseline runs samples: one command at a time, and what a killed `tally init`
    // or `tally run` left (a benchmark's processes, a checkout) goes first.
    let _lock = if measured {
        None
    } else {
        workspace.ensure_tally_dir()?;
        let name = &loaded.settings.name;
        let lock = workspace.lock_campaign(name)?;
        // Jobs a killed run left are cancelled: `tally run` resumes their evaluations.
        super::run::clean_up_after_killed_commands(&workspace, &runner, &[])?;
        Some(lock)
    };
    let progress = Progress::new();
    let engine = engine(&workspace, &*store, &runner, &loaded, &progress);
    let cancel = interrupt_token();
    let name = &loaded.settings.name;
    let outcome = engine.init(&head, &cancel)?;
    // What was measured, as the store holds it (after a failed baseline, HEAD may be a new
    // candidate).
    let measured = match engine.baseline()? {
        Some(b) => format!(
            "candidate#{} = {}",
            b.id.0,
            &b.revision[..12.min(b.revision.len())]
        ),
        None => format!("HEAD {}", &head.as_str()[..12]),
    };
    match outcome {
        InitOutcome::Registered { primary } => {
            let primary_name = &loaded.settings.primary().name;
            printer::out_line(&format!(
                "registered campaign `{name}`: baseline {measured} (HEAD; {primary_name} {})",
                primary.map_or("—".into(), tally_stats::format_sig4)
            ))?;
            printer::out_line(
                "next: `tally candidate add REV...`, then `tally run --until-idle` (it returns when \
                 the queue is empty; `tally run` alone keeps waiting for new candidates)",
            )?;
            Ok(Status::Success)
        }
        InitOutcome::BaselineFailed(reason) => {
            bail!(
                "campaign `{name}` is registered but its baseline {measured} failed: {reason}; fix the \
                 benchmark, commit, and run `tally init` again (it measures the new HEAD)"
            )
        }
        InitOutcome::AlreadyRegistered { changes } => {
            if changes.is_empty() {
                printer::out_line(&format!(
                    "campaign `{name}` is registered and tally.toml is valid; nothing changed"
                ))?;
            } else {
                printer::out_line(&format!("campaign `{name}` is registered; what changed:"))?;
                for change in changes {
                    printer::out_line(&format!("  - {change}"))?;
                }
            }
            Ok(Status::Success)
        }
        InitOutcome::Interrupted => {
            let (signal, name) = interrupting_signal();
            printer::note(&format!(
                "interrupted ({name}): the baseline is measured by the next `tally init` or `tally run`"
            ));
            Ok(Status::Interrupted(signal))
        }
    }
}

/// The baseline runs in a clean checkout of HEAD, so it must see tally.toml and the script.
fn refuse_uncommitted(workspace: &Workspace, loaded: &Loaded) -> anyhow::Result<()> {
    let mut watched = vec![Path::new(CONFIG_FILE).to_path_buf()];
    if let Some(program) = loaded.settings.evaluate.first() {
        let program = Path::new(program);
        if workspace.root().join(program).is_file() {
            watched.push(program.to_path_buf());
        }
    }
    let watched_refs: Vec<&Path> = watched.iter().map(|p| p.as_path()).collect();
    let dirty = workspace.git.uncommitted(&watched_refs)?;
    if !dirty.is_empty() {
        bail!(
            "{} not committed; the baseline runs in a clean checkout of HEAD, so commit first: \
             git add {} && git commit",
            dirty.join(", "),
            dirty.join(" ")
        );
    }
    Ok(())
}

fn write_template(workspace: &Workspace, template: TemplateArg) -> anyhow::Result<Status> {
    let mut written = Vec::new();
    let mut kept = Vec::new();
    for (name, text, executable) in template_files(template) {
        let path = workspace.root().join(name);
        if path.exists() {
            kept.push(name);
            continue;
        }
        std::fs::write(&path, text).with_context(|| format!("{}: cannot write", path.display()))?;
        if executable {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
                .with_context(|| format!("{}: cannot make it executable", path.display()))?;
        }
        written.push(name);
    }
    let mut text = format!("wrote {}", written.join(", "));
    if !kept.is_empty() {
        text.push_str(&format!(" (kept your existing {})", kept.join(", ")));
    }
    text.push_str(".\nnext:\n");
    text.push_str(
        "  1. replace the stub in evaluate.sh with your benchmark (it prints METRIC lines)\n",
    );
    if template == TemplateArg::Inference {
        text.push_str(
            "  2. set usd_per_gpu_hour in tally.toml (the price of one GPU-hour) and check the metric names\n",
        );
    } else {
        text.push_str("  2. name your metric and its direction in tally.toml\n");
    }
    text.push_str("  3. git add tally.toml evaluate.sh brief.md && git commit\n");
    text.push_str("  4. tally init   (validates, measures the baseline, registers the campaign)\n");
    printer::out(&text)?;
    Ok(Status::Success)
}
