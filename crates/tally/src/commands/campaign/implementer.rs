//! `tally implementer list|show|cancel` (`docs/implementers.md#runs`): the implementer runs of
//! the campaign — how each ended, its commits and what became of them, where its brief and logs
//! are — and stopping one that runs: its processes (found by the run's tag) are killed and a
//! `cancelled` file left in its directory, so the `tally run` that launched it collects its work,
//! ends it `cancelled` and parks its idea.

use anyhow::{Context, bail};
use tally_model::{Campaign, CandidateId};
use tally_store::{ImplementerStore, Run};

use super::context::Session;
use super::idea::{idea_store, registered, run_json};
use super::implement::{CANCELLED_FILE, usage_text};
use crate::cli::{CampaignOptions, IdeaListArgs, ImplementerCommand, RunIdArgs, RunUsageArgs};
use crate::exit::Status;
use crate::printer;

/// Runs one `tally implementer` subcommand.
pub fn run(command: &ImplementerCommand, options: &CampaignOptions) -> anyhow::Result<Status> {
    match command {
        ImplementerCommand::List(args) => list(args, options),
        ImplementerCommand::Show(args) => show(args, options),
        ImplementerCommand::Cancel(args) => cancel(args, options),
        ImplementerCommand::Check => check(options),
        ImplementerCommand::Usage(args) => record_usage(args, options),
    }
}

/// Where `exe` is: a path with `/` relative to the repository, else the first match on `PATH`.
fn locate(exe: &str, root: &std::path::Path) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &std::path::Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if exe.contains('/') {
        let path = root.join(exe);
        return executable(&path).then_some(path);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(exe))
            .find(|p| executable(p))
    })
}

/// `tally implementer check`: the harness's executable on `PATH` and, for a preset, what its
/// `--version` says (10 s at most, its process group killed after).
fn check(options: &CampaignOptions) -> anyhow::Result<Status> {
    let workspace = super::context::Workspace::discover(options)?;
    let loaded = workspace.load()?;
    let settings =
        loaded.settings.implementer.as_ref().context(
            "tally.toml has no [implementer] table; add one (docs/implementers.md#config)",
        )?;
    let exe = &settings.exe;
    let Some(path) = locate(exe, workspace.root()) else {
        bail!(
            "{exe}: not found on PATH; install it, or name another program in [implementer] command"
        );
    };
    if settings.preset.is_none() {
        printer::out_line(&format!("{exe}: {}", path.display()))?;
        return Ok(Status::Success);
    }
    let argv = vec![path.display().to_string(), "--version".to_string()];
    let run = tally_process::run_in_group(
        tally_process::Command {
            argv: &argv,
            dir: Some(workspace.root()),
            env: Vec::new(),
            stdin: None,
            stdout: tally_process::Sink::memory(),
            stderr: tally_process::Sink::memory(),
        },
        b"TALLY_IMPLEMENTER_CHECK=1",
        std::time::Duration::from_secs(10),
        &tally_process::CancelToken::new(),
    )
    .map_err(|e| anyhow::anyhow!("{exe}: cannot run {}: {e:?}", path.display()))?;
    let said = String::from_utf8_lossy(if run.stdout.is_empty() {
        &run.stderr
    } else {
        &run.stdout
    })
    .lines()
    .next()
    .unwrap_or("")
    .trim()
    .to_string();
    match run.end {
        tally_process::End::Exited(0) => {
            printer::out_line(&format!("{exe}: {} ({said})", path.display()))?;
            Ok(Status::Success)
        }
        end => bail!(
            "{exe}: `{} --version` did not succeed ({end:?}): {said}",
            path.display()
        ),
    }
}

/// `1`, `#1` or `run#1`.
fn run_number(text: &str) -> anyhow::Result<u32> {
    let digits = text
        .strip_prefix("run#")
        .or_else(|| text.strip_prefix('#'))
        .unwrap_or(text);
    match digits.parse::<u32>() {
        Ok(n) if n >= 1 && !digits.starts_with('+') => Ok(n),
        _ => bail!("{text:?} is not a run number; write 1, #1 or run#1"),
    }
}

fn find(store: &dyn ImplementerStore, campaign: &Campaign, text: &str) -> anyhow::Result<Run> {
    let number = run_number(text)?;
    store
        .list_runs(campaign.id)?
        .into_iter()
        .find(|r| r.number == number)
        .with_context(|| {
            format!(
                "no run#{number} in campaign `{}`; `tally implementer list` shows them",
                campaign.name
            )
        })
}

fn end_text(run: &Run) -> &'static str {
    run.settled.as_ref().map_or("running", |s| s.end.as_str())
}

fn list(args: &IdeaListArgs, options: &CampaignOptions) -> anyhow::Result<Status> {
    let session = Session::open_read_only(options)?;
    let campaign = registered(idea_store(&session)?, &session)?;
    let runs = idea_store(&session)?.list_runs(campaign.id)?;
    if args.json {
        let list: Vec<_> = runs.iter().map(run_json).collect();
        let mut text = serde_json::to_string_pretty(&list)?;
        text.push('\n');
        printer::out(&text)?;
        return Ok(Status::Success);
    }
    if runs.is_empty() {
        printer::out_line("no implementer runs yet; `tally run` launches one per ready idea")?;
        return Ok(Status::Success);
    }
    let mut text = format!(
        "{:<7} {:<7} {:<12} {:<13} {:>7} {:>9}  error\n",
        "run", "idea", "end", "base", "commits", "usd"
    );
    for run in &runs {
        let commits = run.settled.as_ref().map_or(0, |s| s.commits.len());
        let error = run
            .settled
            .as_ref()
            .and_then(|s| s.error.as_deref())
            .and_then(|e| e.lines().next())
            .unwrap_or("");
        let usd = match (&run.settled, run.usage.as_ref().and_then(|u| u.usd)) {
            (None, _) => "-".to_string(),
            (Some(s), _) if s.end == tally_store::RunEnd::NotStarted => "-".to_string(),
            (Some(_), Some(usd)) => format!("{usd:.4}"),
            (Some(_), None) => "unknown".to_string(),
        };
        text.push_str(&format!(
            "{:<7} {:<7} {:<12} {:<13} {:>7} {usd:>9}  {error}\n",
            format!("run#{}", run.number),
            format!("idea#{}", run.started.idea),
            end_text(run),
            run.started.base.to_string(),
            commits
        ));
    }
    printer::out(&text)?;
    Ok(Status::Success)
}

fn show(args: &RunIdArgs, options: &CampaignOptions) -> anyhow::Result<Status> {
    let session = Session::open_read_only(options)?;
    let campaign = registered(idea_store(&session)?, &session)?;
    let run = find(idea_store(&session)?, &campaign, &args.id)?;
    let dir = std::path::Path::new(&run.started.run_dir);
    let mut text = format!("run#{}: idea#{}\n", run.number, run.started.idea);
    text.push_str(&format!("end:     {}", end_text(&run)));
    if let Some(code) = run.settled.as_ref().and_then(|s| s.exit_code) {
        text.push_str(&format!(" (exit {code})"));
    }
    text.push('\n');
    if let Some(error) = run.settled.as_ref().and_then(|s| s.error.as_deref()) {
        text.push_str(&format!("error:   {error}\n"));
    }
    text.push_str(&format!("base:    {}\n", run.started.base));
    if run.settled.is_some() {
        text.push_str(&format!("usage:   {}", usage_text(run.usage.as_ref())));
        if run.usage.as_ref().and_then(|u| u.usd).is_none() {
            text.push_str(&format!(
                "; record it with `tally implementer usage run#{} --usd X`",
                run.number
            ));
        }
        text.push('\n');
    }
    text.push_str(&format!("brief:   {}\n", dir.join("brief.md").display()));
    text.push_str(&format!("stdout:  {}\n", dir.join("stdout.log").display()));
    text.push_str(&format!("stderr:  {}\n", dir.join("stderr.log").display()));
    if let Some(s) = &run.settled {
        text.push_str("commits:\n");
        if s.commits.is_empty() {
            text.push_str("  (none)\n");
        }
        for c in &s.commits {
            let verdict = match c.candidate {
                Some(id) => verdict_of(idea_store(&session)?, &campaign, id)?,
                None => String::new(),
            };
            text.push_str(&format!(
                "  {} {}{verdict}\n",
                &c.revision[..12.min(c.revision.len())],
                match c.candidate {
                    Some(id) if c.note == "queued" => format!("{id}"),
                    _ => c.note.clone(),
                }
            ));
        }
    }
    printer::out(&text)?;
    Ok(Status::Success)
}

fn verdict_of(
    store: &dyn ImplementerStore,
    campaign: &Campaign,
    id: CandidateId,
) -> anyhow::Result<String> {
    Ok(store
        .candidate(campaign.id, id)?
        .map(|c| format!(": {}", c.verdict.as_str()))
        .unwrap_or_default())
}

fn cancel(args: &RunIdArgs, options: &CampaignOptions) -> anyhow::Result<Status> {
    let session = Session::open(options)?;
    let campaign = registered(idea_store(&session)?, &session)?;
    let run = find(idea_store(&session)?, &campaign, &args.id)?;
    if let Some(s) = &run.settled {
        bail!(
            "run#{} has ended ({}); there is nothing to cancel",
            run.number,
            s.end.as_str()
        );
    }
    let dir = std::path::Path::new(&run.started.run_dir);
    std::fs::write(dir.join(CANCELLED_FILE), "cancelled by hand\n")
        .with_context(|| format!("{}: cannot write", dir.display()))?;
    let marker = format!("TALLY_RUN_TAG={}", run.started.tag).into_bytes();
    let mut stopped = Vec::new();
    for _ in 0..10 {
        let live = tally_process::kill_marked(std::slice::from_ref(&marker));
        if live.is_empty() {
            break;
        }
        stopped.extend(live);
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    stopped.sort_unstable();
    stopped.dedup();
    printer::out_line(&format!(
        "run#{} cancelled: {} process(es) stopped; the `tally run` that launched it collects its work",
        run.number,
        stopped.len()
    ))?;
    Ok(Status::Success)
}

/// `tally implementer usage RUN --usd X`: records a run's cost by hand (its token counts, if
/// any were read, are kept).
fn record_usage(args: &RunUsageArgs, options: &CampaignOptions) -> anyhow::Result<Status> {
    if !(args.usd.is_finite() && args.usd >= 0.0) {
        bail!("--usd {}: expected a number of USD ≥ 0", args.usd);
    }
    let session = Session::open(options)?;
    let store = idea_store(&session)?;
    let campaign = registered(store, &session)?;
    let run = find(store, &campaign, &args.id)?;
    if run.settled.is_none() {
        bail!(
            "run#{} is still running; record its cost once it has ended",
            run.number
        );
    }
    let before = run.usage.clone();
    let usage = tally_store::RunUsage {
        usd: Some(args.usd),
        usd_source: Some("manual".to_string()),
        source: before
            .as_ref()
            .map_or_else(|| "manual".to_string(), |u| u.source.clone()),
        ..before.clone().unwrap_or(tally_store::RunUsage {
            input: None,
            output: None,
            cached: None,
            usd: None,
            source: String::new(),
            usd_source: None,
        })
    };
    idea_store(&session)?.set_run_usage(campaign.id, run.number, &usage)?;
    let was = match before.and_then(|u| u.usd) {
        Some(usd) => format!("was ${usd:.4}"),
        None => "was unknown".to_string(),
    };
    printer::out_line(&format!(
        "run#{}: cost ${:.4} recorded by hand ({was})",
        run.number, args.usd
    ))?;
    Ok(Status::Success)
}
