//! What every campaign command needs first: the repository, `tally.toml` read and validated into
//! settings and built providers, the store, and an engine over them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use tally_config::{ConfigError, Settings, parse_settings};
use tally_engine::{Engine, Observer, Providers, SystemClock};
use tally_runner::{
    Attempt, CancelToken, Failure, Git, Outcome, RunLock, SampleRequest, SampleRunner,
    become_child_subreaper, run_lock_path,
};
use tally_store::{SqliteStore, Store};

pub use super::executor::CampaignRunner;
use crate::cli::CampaignOptions;

/// The file name of the campaign config at the repository root.
pub const CONFIG_FILE: &str = "tally.toml";

/// The repository a command works in.
pub struct Workspace {
    /// Git, at the repository root.
    pub git: Git,
    /// `tally.toml`.
    pub config_path: PathBuf,
    /// `.tally/` (store, logs, locks).
    pub tally_dir: PathBuf,
    database: Option<Database>,
}

/// Where the store is, from `--database` / `TALLY_DATABASE_URL` (`docs/cli.md#database`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Database {
    /// A SQLite file (a path, or `sqlite:PATH`), made absolute.
    Sqlite(PathBuf),
    /// A PostgreSQL database: `postgres://…` or `postgresql://…`.
    Postgres(String),
}

impl Database {
    /// Parses a `--database` value; relative SQLite paths are taken from `cwd`.
    pub fn parse(url: &str, cwd: &Path) -> Self {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Self::Postgres(url.to_owned())
        } else {
            Self::Sqlite(cwd.join(url.strip_prefix("sqlite:").unwrap_or(url)))
        }
    }
}

/// The per-campaign lock of `tally run` and a baseline-measuring `tally init`: a lock file next
/// to a SQLite store, an advisory lock in a PostgreSQL one (`docs/team.md#guarantees`). Held
/// until dropped (the variants' contents are never read: holding them is the lock).
#[allow(dead_code)]
pub enum CampaignLock {
    /// `.tally/run-<campaign>.lock`.
    File(RunLock),
    /// `pg_try_advisory_lock` on a connection of its own.
    #[cfg(feature = "postgres")]
    Postgres(Box<tally_store::PgRunLock>),
}

/// `tally.toml`, validated and built.
pub struct Loaded {
    /// The text as read.
    pub text: String,
    /// Resolved settings.
    pub settings: Settings,
    /// Built providers.
    pub providers: Providers,
}

impl Workspace {
    /// The repository containing `-C DIR` or the current directory. The process then works in
    /// the repository's root, so that relative paths of `tally.toml` (an external provider's
    /// `command = ["./rule.py"]`) mean the same from any directory and with `-C`; a relative
    /// `--database` path keeps meaning what it meant where tally was started.
    pub fn discover(options: &CampaignOptions) -> anyhow::Result<Self> {
        let cwd = std::env::current_dir().context("cannot read the current directory")?;
        let start = match &options.repo {
            Some(dir) => cwd.join(dir),
            None => cwd.clone(),
        };
        let git = Git::discover(&start).with_context(|| {
            format!(
                "{}: not inside a git repository; tally campaigns live in one (run `git init`, or pass -C DIR)",
                start.display()
            )
        })?;
        let root = git.root().to_path_buf();
        std::env::set_current_dir(&root)
            .with_context(|| format!("{}: cannot work in the repository", root.display()))?;
        let database = options
            .database
            .as_ref()
            .map(|url| Database::parse(url, &cwd));
        Ok(Self {
            config_path: root.join(CONFIG_FILE),
            tally_dir: root.join(".tally"),
            git,
            database,
        })
    }

    /// The repository root.
    pub fn root(&self) -> &Path {
        self.git.root()
    }

    /// `tally.toml`'s text, or `None` when there is none.
    pub fn config_text(&self) -> anyhow::Result<Option<String>> {
        match std::fs::read_to_string(&self.config_path) {
            Ok(text) => Ok(Some(text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => {
                Err(e).with_context(|| format!("{}: cannot read", self.config_path.display()))
            }
        }
    }

    /// How the working tree's evaluation differs from HEAD's, if it does: the samples run in
    /// checkouts of commits, so an uncommitted change to what defines a measurement — `tally.toml`'s
    /// evaluator (`evaluate`, `link`, the judged metrics) or the evaluate program's own file —
    /// would be measured as something it is not. Other keys (limits, plugins, sections) take
    /// effect from the working tree. `None` when both agree.
    pub fn uncommitted_evaluation(&self, loaded: &Loaded) -> anyhow::Result<Option<String>> {
        let committed = match self.git.command(&["show", &format!("HEAD:{CONFIG_FILE}")]) {
            Ok(text) => text,
            Err(_) => return Ok(Some(format!("{CONFIG_FILE} is not committed"))),
        };
        let same = match parse_settings(&committed, &tally_providers::builtins()) {
            Ok(settings) => {
                tally_engine::evaluator_identity(&settings)
                    == tally_engine::evaluator_identity(&loaded.settings)
            }
            Err(_) => false,
        };
        if !same {
            return Ok(Some(format!(
                "{CONFIG_FILE}'s evaluation (evaluate, link or the judged metrics) differs from the \
                 committed one"
            )));
        }
        if let Some(program) = loaded.settings.evaluate.first() {
            let program = Path::new(program);
            if self.root().join(program).is_file() {
                let dirty = self.git.uncommitted(&[program])?;
                if !dirty.is_empty() {
                    return Ok(Some(format!(
                        "{} has uncommitted changes",
                        dirty.join(", ")
                    )));
                }
            }
        }
        Ok(None)
    }

    /// Refuses to run samples while [`Workspace::uncommitted_evaluation`] finds a difference.
    pub fn refuse_uncommitted_evaluation(&self, loaded: &Loaded) -> anyhow::Result<()> {
        if let Some(what) = self.uncommitted_evaluation(loaded)? {
            bail!(
                "{what}; samples run the committed files, so commit the change first (git add \
                 {CONFIG_FILE} && git commit), or `git stash` it to run with the committed one"
            );
        }
        Ok(())
    }

    /// `tally.toml` read, validated (every problem at once) and its providers built.
    pub fn load(&self) -> anyhow::Result<Loaded> {
        let Some(text) = self.config_text()? else {
            bail!(
                "{}: not found; run `tally init` to write one from a template",
                self.config_path.display()
            );
        };
        let name = self.config_path.display().to_string();
        let settings = match parse_settings(&text, &tally_providers::builtins()) {
            Ok(s) => s,
            Err(ConfigError::Syntax {
                line,
                column,
                message,
            }) => bail!("{name}: line {line}, column {column}: {message}"),
            Err(ConfigError::Problems(problems)) => bail!(problems_message(&name, &problems)),
        };
        let providers = Providers::build(&settings, tally_providers::builtins())
            .map_err(|problems| anyhow::anyhow!(problems_message(&name, &problems)))?;
        Ok(Loaded {
            text,
            settings,
            providers,
        })
    }

    /// Where the store is: `--database`, `TALLY_DATABASE_URL`, or `.tally/tally.db`.
    pub fn database(&self) -> Database {
        self.database
            .clone()
            .unwrap_or_else(|| Database::Sqlite(self.tally_dir.join("tally.db")))
    }

    /// Opens the store of `campaign` for a command that only reads it. A SQLite file is opened
    /// read-only, so that no write access is needed (a read-only mount, another user's
    /// campaign), and nothing is created where there is no store yet.
    pub fn open_store_read_only(&self, campaign: &str) -> anyhow::Result<Box<dyn Store>> {
        match self.database() {
            Database::Sqlite(path) => {
                if !path.exists() {
                    bail!(
                        "campaign `{campaign}` is not registered: there is no store at {} yet; \
                         run `tally init` first",
                        path.display()
                    );
                }
                Ok(Box::new(SqliteStore::open_read_only(&path)?))
            }
            Database::Postgres(url) => open_postgres(&url),
        }
    }

    /// Opens (creating) the store: `--database`, `TALLY_DATABASE_URL`, or `.tally/tally.db`.
    pub fn open_store(&self) -> anyhow::Result<Box<dyn Store>> {
        if self.database.is_none() {
            self.ensure_tally_dir()?;
        }
        match self.database() {
            Database::Sqlite(path) => {
                if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                    std::fs::create_dir_all(parent).with_context(|| {
                        format!("{}: cannot create the store's directory", parent.display())
                    })?;
                }
                Ok(Box::new(SqliteStore::open(&path)?))
            }
            Database::Postgres(url) => open_postgres(&url),
        }
    }

    /// Takes the campaign's run lock (`tally run`, a baseline-measuring `tally init`), or fails
    /// naming who holds it.
    pub fn lock_campaign(&self, campaign: &str) -> anyhow::Result<CampaignLock> {
        match self.database() {
            Database::Sqlite(_) => {
                self.ensure_tally_dir()?;
                Ok(CampaignLock::File(RunLock::acquire(
                    &run_lock_path(&self.tally_dir, campaign),
                    campaign,
                )?))
            }
            #[cfg(feature = "postgres")]
            Database::Postgres(url) => {
                let lock = tally_store::PgRunLock::acquire(&url, campaign)?;
                Ok(CampaignLock::Postgres(Box::new(lock)))
            }
            #[cfg(not(feature = "postgres"))]
            Database::Postgres(_) => Err(no_postgres()),
        }
    }

    /// Takes a free worker slot of the campaign for `tally run` (`docs/team.md#workers`): the
    /// run lock when `slots` is 1; above 1 only on a PostgreSQL store (SQLite keeps one
    /// `tally run` per campaign, and says so). Returns the lock and its slot.
    pub fn lock_worker_slot(
        &self,
        campaign: &str,
        slots: u32,
    ) -> anyhow::Result<(CampaignLock, u32)> {
        match self.database() {
            Database::Sqlite(path) if slots > 1 => bail!(
                "tally.toml: evaluation_slots = {slots}, but this campaign's store is the SQLite \
                 file {}, which one `tally run` at a time drives; set evaluation_slots = 1, or \
                 share the campaign through a PostgreSQL store (--database / \
                 TALLY_DATABASE_URL, docs/team.md#workers)",
                path.display()
            ),
            #[cfg(feature = "postgres")]
            Database::Postgres(url) => {
                let lock = tally_store::PgRunLock::acquire_slot(&url, campaign, slots)?;
                let slot = lock.slot();
                Ok((CampaignLock::Postgres(Box::new(lock)), slot))
            }
            _ => Ok((self.lock_campaign(campaign)?, 0)),
        }
    }

    /// Opens the store as the worker of `slot` (a PostgreSQL store claims work as that slot's
    /// worker); a SQLite store opens as [`Self::open_store`] does.
    pub fn open_store_as_worker(&self, slot: u32) -> anyhow::Result<Box<dyn Store>> {
        match self.database() {
            #[cfg(feature = "postgres")]
            Database::Postgres(url) => {
                Ok(Box::new(tally_store::PgStore::open(&url)?.as_worker(slot)))
            }
            _ => self.open_store(),
        }
    }

    /// Creates `.tally/` and keeps it out of git (`.git/info/exclude`).
    pub fn ensure_tally_dir(&self) -> anyhow::Result<()> {
        std::fs::create_dir_all(&self.tally_dir)
            .with_context(|| format!("{}: cannot create", self.tally_dir.display()))?;
        let exclude = self.root().join(".git/info/exclude");
        if exclude.parent().is_some_and(Path::is_dir) {
            let current = std::fs::read_to_string(&exclude).unwrap_or_default();
            if !current
                .lines()
                .any(|l| l.trim() == "/.tally/" || l.trim() == ".tally/")
            {
                let mut text = current;
                if !text.is_empty() && !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str("/.tally/\n");
                std::fs::write(&exclude, text)
                    .with_context(|| format!("{}: cannot update", exclude.display()))?;
            }
        }
        Ok(())
    }

    /// The real runner for a campaign, as `[executor]` says (`docs/team.md#executor`): worktrees
    /// under the user's cache directory, or Slurm jobs with checkouts under the shared workdir.
    /// Makes this process a child subreaper first, so descendants that an evaluate command
    /// orphans are re-parented to tally and reaped by its sweep (`docs/evaluate-protocol.md` §6).
    pub fn runner(&self, settings: &Settings, slot: u32) -> anyhow::Result<CampaignRunner> {
        become_child_subreaper()?;
        CampaignRunner::build(&self.git, settings, slot)
    }

    /// Where an evaluation's logs go.
    pub fn log_root(&self, campaign: &str) -> PathBuf {
        self.tally_dir.join("logs").join(sanitize(campaign))
    }
}

/// Connects to a PostgreSQL store (`docs/team.md`).
#[cfg(feature = "postgres")]
fn open_postgres(url: &str) -> anyhow::Result<Box<dyn Store>> {
    Ok(Box::new(tally_store::PgStore::open(url)?))
}

/// A build without the `postgres` feature cannot open a PostgreSQL store.
#[cfg(not(feature = "postgres"))]
fn open_postgres(_url: &str) -> anyhow::Result<Box<dyn Store>> {
    Err(no_postgres())
}

#[cfg(not(feature = "postgres"))]
fn no_postgres() -> anyhow::Error {
    anyhow::anyhow!(
        "--database: this tally was built without PostgreSQL support; rebuild it with the \
         `postgres` feature (cargo build --features postgres), or use a SQLite file"
    )
}

/// Builds an engine over the loaded config.
pub fn engine<'a>(
    workspace: &Workspace,
    store: &'a dyn Store,
    runner: &'a dyn SampleRunner,
    loaded: &'a Loaded,
    observer: &'a dyn Observer,
) -> Engine<'a> {
    Engine::new(
        store,
        runner,
        &loaded.settings,
        &loaded.providers,
        &loaded.text,
        &SystemClock,
        observer,
        workspace.log_root(&loaded.settings.name),
    )
}

/// The set-up of a campaign command that runs no samples: the repository, `tally.toml` loaded and
/// built, the store, and a progress display for what the engine says.
pub struct Session {
    /// The repository.
    pub workspace: Workspace,
    /// `tally.toml`, validated and built.
    pub loaded: Loaded,
    /// The store.
    pub store: Box<dyn Store>,
    progress: super::progress::Progress,
}

impl Session {
    /// Finds the repository, loads `tally.toml` and opens the store.
    pub fn open(options: &CampaignOptions) -> anyhow::Result<Self> {
        Self::open_with(options, |workspace, _| workspace.open_store())
    }

    /// [`open`](Self::open) for a command that only reads the store (status, brief, show): the
    /// store is opened read-only, so that reading needs no write access.
    pub fn open_read_only(options: &CampaignOptions) -> anyhow::Result<Self> {
        Self::open_with(options, |workspace, loaded| {
            workspace.open_store_read_only(&loaded.settings.name)
        })
    }

    fn open_with(
        options: &CampaignOptions,
        open_store: impl FnOnce(&Workspace, &Loaded) -> anyhow::Result<Box<dyn Store>>,
    ) -> anyhow::Result<Self> {
        let workspace = Workspace::discover(options)?;
        let loaded = workspace.load()?;
        let store = open_store(&workspace, &loaded)?;
        Ok(Self {
            workspace,
            loaded,
            store,
            progress: super::progress::Progress::new(),
        })
    }

    /// An engine over the session, with a runner that runs nothing.
    pub fn engine(&self) -> Engine<'_> {
        engine(
            &self.workspace,
            &*self.store,
            &NoRunner,
            &self.loaded,
            &self.progress,
        )
    }
}

/// A runner for commands that never run samples (status, brief, verdicts by hand).
pub struct NoRunner;

impl SampleRunner for NoRunner {
    fn run_attempt(&self, _: &SampleRequest, attempt: u32, _: &CancelToken) -> Attempt {
        Attempt {
            attempt,
            outcome: Outcome::SpawnFailed("this command does not run samples".into()),
            wall: Duration::ZERO,
            metrics: BTreeMap::new(),
            units: None,
            failure: Some(Failure::Spawn {
                why: "this command does not run samples; use `tally run`".into(),
            }),
            logs: None,
            retried: false,
            stray_pids: Vec::new(),
            held: None,
            evidence: None,
        }
    }
}

/// Who the caller is, for hand-set verdicts and reports: `git config user.name`, else `$USER`.
pub fn caller(git: &Git) -> String {
    git.config_value("user.name")
        .or_else(|| std::env::var("USER").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "someone".into())
}

/// Parses a candidate id argument.
pub fn candidate_id(text: &str) -> anyhow::Result<tally_model::CandidateId> {
    text.parse()
        .map_err(|_| anyhow::anyhow!("{text:?} is not a candidate id; write 3, #3 or candidate#3"))
}

fn problems_message(name: &str, problems: &[tally_plugin::ConfigProblem]) -> String {
    let mut message = format!(
        "{name}: {} problem{}:",
        problems.len(),
        if problems.len() == 1 { "" } else { "s" }
    );
    for p in problems {
        message.push_str("\n  ");
        message.push_str(&p.to_string());
    }
    message
}

fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
