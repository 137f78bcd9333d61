//! The command line as the user typed it (clap derive). Nothing here acts; `commands` resolves
//! these values into what each command needs.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// tally: show that an inference change really is faster, what it cost in GPU time, and where
/// the GPU time went.
#[derive(Debug, Parser)]
#[command(name = "tally", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// A campaign command's own arguments and the campaign options (after the subcommand's name;
/// the evidence commands, which use no store and no repository, do not have them).
#[derive(Debug, Args)]
pub struct WithCampaign<T: Args> {
    /// Where the campaign is.
    #[command(flatten)]
    pub options: CampaignOptions,
    /// The command's own arguments.
    #[command(flatten)]
    pub args: T,
}

/// A group of campaign subcommands and the campaign options (accepted anywhere after the
/// group's name).
#[derive(Debug, Args)]
pub struct CampaignGroup<T: Subcommand> {
    /// Where the campaign is.
    #[command(flatten)]
    pub options: CampaignOptions,
    /// Which one.
    #[command(subcommand)]
    pub command: T,
}

/// Options of the campaign commands.
#[derive(Debug, Args, Clone)]
pub struct CampaignOptions {
    /// The campaign store: a SQLite file path or `sqlite:PATH` (default `.tally/tally.db` at the
    /// repository root), or a PostgreSQL database shared by a team,
    /// `postgres://USER:PASSWORD@HOST:PORT/DATABASE` (docs/team.md).
    #[arg(long, env = "TALLY_DATABASE_URL", value_name = "URL", global = true)]
    pub database: Option<String>,
    /// The repository (default: the one containing the current directory).
    #[arg(short = 'C', long = "repo", value_name = "DIR", global = true)]
    pub repo: Option<PathBuf>,
}

/// Top-level commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Set up a campaign: write tally.toml from a template, or register it and measure the
    /// baseline.
    Init(WithCampaign<InitArgs>),
    /// Propose, inspect and judge candidates.
    Candidate(CampaignGroup<CandidateCommand>),
    /// Queue and inspect ideas for implementers (coding agents).
    Idea(CampaignGroup<IdeaCommand>),
    /// Inspect and cancel implementer runs.
    Implementer(CampaignGroup<ImplementerCommand>),
    /// Evaluate and judge the queued candidates.
    Run(WithCampaign<RunArgs>),
    /// Show the campaign: head, goal, evaluations, candidates, facts.
    Status(WithCampaign<StatusArgs>),
    /// Record measurements taken outside `tally run`.
    Measurement(CampaignGroup<MeasurementCommand>),
    /// Campaign state.
    Campaign(CampaignGroup<CampaignCommand>),
    /// List every capability, its providers and their parameters.
    Plugins(WithCampaign<PluginsArgs>),
    /// Print the implementer brief (Markdown).
    Brief(WithCampaign<BriefArgs>),
    /// Run a complete demo campaign on a toy inference workload in a throwaway repository.
    Demo(DemoArgs),
    /// Inference evidence: account GPU time, align clocks, validate request shares, convert.
    #[command(subcommand)]
    Trace(TraceCommand),
    /// Load-test an OpenAI-compatible endpoint, serve a fake one, convert a run to evidence.
    #[command(subcommand)]
    Bench(crate::commands::bench::BenchCommand),
    /// Check a campaign store's guard against foreign writes, or move a store between backends.
    #[command(subcommand)]
    Store(StoreCommand),
}

/// `tally store ...`
#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Copy a SQLite store into an empty PostgreSQL database, ids and values unchanged.
    Copy(StoreCopyArgs),
    /// Check that only tally wrote the SQLite store: its guard triggers are all there, unchanged
    /// (docs/store.md#guard); with --repair, restore them.
    Check(WithCampaign<StoreCheckArgs>),
}

/// `tally store check`
#[derive(Debug, Args)]
pub struct StoreCheckArgs {
    /// Restore the missing or changed guard triggers and drop the triggers that are not tally's.
    #[arg(long)]
    pub repair: bool,
}

/// `tally store copy`
#[derive(Debug, Args)]
pub struct StoreCopyArgs {
    /// The SQLite store: `sqlite:PATH` or a path (e.g. `.tally/tally.db`).
    #[arg(long, value_name = "URL")]
    pub from: String,
    /// The PostgreSQL database, `postgres://USER:PASSWORD@HOST:PORT/DATABASE`; it must hold no
    /// campaign yet.
    #[arg(long, value_name = "URL")]
    pub to: String,
}

/// `tally init`
#[derive(Debug, Args)]
pub struct InitArgs {
    /// The template for a new tally.toml.
    #[arg(long, value_enum, default_value_t = TemplateArg::Minimal)]
    pub template: TemplateArg,
}

/// A campaign template.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TemplateArg {
    /// One primary metric, the defaults everywhere.
    Minimal,
    /// An inference server: throughput, latency guardrails, GPU budget, min speedup.
    Inference,
}

/// `tally candidate ...`
#[derive(Debug, Subcommand)]
pub enum CandidateCommand {
    /// Queue revisions (pending; parent = the head).
    Add(CandidateAddArgs),
    /// Show one candidate with its measurements.
    Show(CandidateShowArgs),
    /// Measure a candidate again and judge it again.
    Remeasure(CandidateRemeasureArgs),
    /// Set a verdict by hand (the loop never overwrites it).
    Verdict(CandidateVerdictArgs),
}

/// `tally candidate add`
#[derive(Debug, Args)]
pub struct CandidateAddArgs {
    /// Git revisions (anything `git rev-parse` understands).
    #[arg(required = true, value_name = "REV")]
    pub revisions: Vec<String>,
    /// A note kept with each candidate.
    #[arg(long)]
    pub note: Option<String>,
    /// Queue a revision even when it (or a commit with the same tree) is already a candidate.
    #[arg(long)]
    pub again: bool,
}

/// `tally candidate show`
#[derive(Debug, Args)]
pub struct CandidateShowArgs {
    /// The candidate (`3`, `#3` or `candidate#3`).
    #[arg(value_name = "ID")]
    pub id: String,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `tally candidate remeasure`
#[derive(Debug, Args)]
pub struct CandidateRemeasureArgs {
    /// The candidate.
    #[arg(value_name = "ID")]
    pub id: String,
    /// Pairs to take (default: the campaign's repeats).
    #[arg(long)]
    pub repeats: Option<u32>,
}

/// `tally candidate verdict`
#[derive(Debug, Args)]
pub struct CandidateVerdictArgs {
    /// The candidate.
    #[arg(value_name = "ID")]
    pub id: String,
    /// keep, interesting, discard, crash or pending.
    #[arg(value_name = "OUTCOME")]
    pub outcome: String,
    /// Why (kept with the verdict).
    #[arg(long, required = true)]
    pub reason: String,
}

/// `tally idea ...`
#[derive(Debug, Subcommand)]
pub enum IdeaCommand {
    /// Queue an idea (ready).
    Add(IdeaAddArgs),
    /// List the ideas, oldest first.
    List(IdeaListArgs),
    /// Show one idea with its text.
    Show(IdeaShowArgs),
    /// Set an idea aside: it is never launched.
    Park(IdeaParkArgs),
}

/// `tally idea add`
#[derive(Debug, Args)]
pub struct IdeaAddArgs {
    /// One line saying what to try.
    #[arg(value_name = "TITLE")]
    pub title: String,
    /// What to try, in more words.
    #[arg(long, conflicts_with = "file")]
    pub text: Option<String>,
    /// Read the text from this file.
    #[arg(long, value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Attempts allowed (default: `[implementer] attempts`, else 2).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub attempts: Option<u32>,
    /// The candidate to start from: an id or a revision that is a candidate (default: the head
    /// at launch).
    #[arg(long, value_name = "REV")]
    pub base: Option<String>,
}

/// `tally idea list`
#[derive(Debug, Args)]
pub struct IdeaListArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `tally idea show`
#[derive(Debug, Args)]
pub struct IdeaShowArgs {
    /// The idea (`1`, `#1` or `idea#1`).
    #[arg(value_name = "N")]
    pub id: String,
}

/// `tally idea park`
#[derive(Debug, Args)]
pub struct IdeaParkArgs {
    /// The idea (`1`, `#1` or `idea#1`).
    #[arg(value_name = "N")]
    pub id: String,
}

/// `tally implementer ...`
#[derive(Debug, Subcommand)]
pub enum ImplementerCommand {
    /// List the runs, oldest first.
    List(IdeaListArgs),
    /// Show one run: its end, commits and their verdicts, logs.
    Show(RunIdArgs),
    /// Stop a running implementer: its processes are killed and `tally run` collects its work.
    Cancel(RunIdArgs),
    /// Find the configured harness on PATH and run its `--version`.
    Check,
    /// Record a run's cost by hand (when its harness reported none, or to correct it).
    Usage(RunUsageArgs),
}

/// `tally implementer usage`
#[derive(Debug, Args)]
pub struct RunUsageArgs {
    /// The run (`1`, `#1` or `run#1`).
    #[arg(value_name = "RUN")]
    pub id: String,
    /// What the run cost, in USD (a number ≥ 0).
    #[arg(long, value_name = "X")]
    pub usd: f64,
}

/// A run argument.
#[derive(Debug, Args)]
pub struct RunIdArgs {
    /// The run (`1`, `#1` or `run#1`).
    #[arg(value_name = "RUN")]
    pub id: String,
}

/// `tally run`
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Return when nothing is queued instead of waiting for new candidates.
    #[arg(long)]
    pub until_idle: bool,
}

/// `tally status`
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Print one JSON object (the contract in docs/cli.md).
    #[arg(long)]
    pub json: bool,
}

/// `tally measurement ...`
#[derive(Debug, Subcommand)]
pub enum MeasurementCommand {
    /// Record a report for a candidate under the current evaluator.
    Add(MeasurementAddArgs),
}

/// `tally measurement add`
#[derive(Debug, Args)]
pub struct MeasurementAddArgs {
    /// The candidate.
    #[arg(value_name = "ID")]
    pub id: String,
    /// `{"metrics": {"name": number}, "seconds": number|null, "error": null|"text"}`.
    #[arg(long, value_name = "FILE")]
    pub report: PathBuf,
}

/// `tally campaign ...`
#[derive(Debug, Subcommand)]
pub enum CampaignCommand {
    /// Make a held or stopped campaign active again.
    Resume(ResumeArgs),
}

/// `tally campaign resume`
#[derive(Debug, Args)]
pub struct ResumeArgs {}

/// `tally plugins`
#[derive(Debug, Args)]
pub struct PluginsArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `tally brief`
#[derive(Debug, Args)]
pub struct BriefArgs {
    /// Print the brief an implementer launched on this idea gets (`1`, `#1` or `idea#1`).
    #[arg(long, value_name = "N")]
    pub idea: Option<String>,
}

/// `tally demo`
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Where to create the demo repository (default: a new temporary directory, removed at the
    /// end unless --keep).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Keep the temporary repository (without --keep the demo removes it at the end and says so).
    #[arg(long)]
    pub keep: bool,
}

/// `tally trace ...`
#[derive(Debug, Subcommand)]
pub enum TraceCommand {
    /// Resolve evidence artifacts and account GPU time per device and iteration.
    Account(AccountArgs),
    /// Move a timestamp from one clock domain to another with its uncertainty.
    Align(AlignArgs),
    /// Validate a per-request share model against an iteration's measured GPU budget.
    Shares(SharesArgs),
    /// Rewrite artifacts as one v2 (embedded contexts) or v4 (interned contexts) artifact.
    Convert(ConvertArgs),
    /// Generate a synthetic artifact of a continuous-batching server (seeded, realistic).
    Synth(SynthArgs),
    /// Import profiler traces (PyTorch/Kineto JSON, Nsight Systems SQLite) as an artifact.
    #[command(subcommand)]
    Import(ImportCommand),
    /// Export artifacts for viewers.
    #[command(subcommand)]
    Export(ExportCommand),
    /// Link a trace's activities to an engine's iterations by correlation ids.
    Link(LinkArgs),
    /// Parse and validate artifacts without resolving them (for benchmarks).
    #[command(hide = true)]
    ParseOnly(ParseOnlyArgs),
}

/// Inputs shared by the evidence commands.
#[derive(Debug, Args)]
pub struct EvidenceFiles {
    /// Evidence artifacts (JSONL, optionally gzip-compressed; `-` reads standard input). Several
    /// files resolve together as one artifact.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

/// `tally trace account`
#[derive(Debug, Args)]
pub struct AccountArgs {
    #[command(flatten)]
    pub input: EvidenceFiles,
    /// Print one JSON object (the contract in docs/cli.md) instead of the report.
    #[arg(long)]
    pub json: bool,
    /// How many iterations (busiest first), and kernels per device clock (most summed time
    /// first), the report lists.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub top: usize,
}

/// `tally trace align`
#[derive(Debug, Args)]
pub struct AlignArgs {
    /// The clock domain the timestamp is in.
    #[arg(long, value_name = "DOMAIN")]
    pub from: String,
    /// The clock domain to move it to.
    #[arg(long, value_name = "DOMAIN")]
    pub to: String,
    /// The timestamp, integer nanoseconds in the `--from` domain.
    #[arg(value_name = "TIMESTAMP_NS", allow_hyphen_values = true)]
    pub timestamp_ns: String,
    #[command(flatten)]
    pub input: EvidenceFiles,
    /// Print `{"value_ns", "uncertainty_ns", "clock_domain"}`.
    #[arg(long)]
    pub json: bool,
}

/// `tally trace shares`
#[derive(Debug, Args)]
pub struct SharesArgs {
    #[command(flatten)]
    pub input: EvidenceFiles,
    /// The iteration: its producer id and id.
    #[arg(long, num_args = 2, value_names = ["PRODUCER_ID", "ID"], required = true)]
    pub iteration: Vec<String>,
    /// The device UUID of the budget.
    #[arg(long, value_name = "UUID")]
    pub device: String,
    /// The clock domain of the budget.
    #[arg(long, value_name = "DOMAIN")]
    pub clock_domain: String,
    /// The clock kind of the budget.
    #[arg(long, value_enum, default_value_t = ClockKindArg::Monotonic)]
    pub clock_kind: ClockKindArg,
    /// JSON list of share estimates: `[{"request_ref": {...}, "attempt_ref": null,
    /// "duration_ns": 6000000, "model": "token-weighted-v1"}, ...]`.
    #[arg(long, value_name = "SHARES.json")]
    pub shares: PathBuf,
    /// GPU time of the iteration not attributed to any request, in ns.
    #[arg(long, value_name = "NS", allow_hyphen_values = true)]
    pub unattributed: String,
    /// Print the validated budget as JSON.
    #[arg(long)]
    pub json: bool,
}

/// A clock kind on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ClockKindArg {
    /// A monotonic host clock.
    Monotonic,
    /// A wall clock.
    Wall,
    /// A device clock.
    Device,
}

/// `tally trace convert`
#[derive(Debug, Args)]
pub struct ConvertArgs {
    #[command(flatten)]
    pub input: EvidenceFiles,
    /// Output form: `v2` embeds every context, `v4` interns them.
    #[arg(long, value_enum)]
    pub to: FormArg,
    /// Output file (`-` for standard output).
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    pub output: PathBuf,
}

/// An artifact schema form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FormArg {
    /// Embedded contexts (schema versions 2 and 3).
    V2,
    /// Interned contexts (schema version 4).
    V4,
}

/// `tally trace synth`
#[derive(Debug, Args)]
pub struct SynthArgs {
    /// Number of requests to simulate (about 20 records each).
    #[arg(long, default_value_t = 1000)]
    pub requests: u64,
    /// Seed: the same seed gives a byte-identical file.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Number of serving hosts.
    #[arg(long, default_value_t = 4)]
    pub hosts: u32,
    /// Output form.
    #[arg(long, value_enum, default_value_t = FormArg::V2)]
    pub form: FormArg,
    /// Fraction of records delivered twice (0 to 1).
    #[arg(long, default_value_t = 0.0)]
    pub duplicates: f64,
    /// Deliver records in a seeded random order.
    #[arg(long)]
    pub shuffle: bool,
    /// Number of legacy (v1) client records to mix in.
    #[arg(long, default_value_t = 0)]
    pub legacy: u64,
    /// Write PyTorch profiler (Kineto) traces instead of an artifact, one per GPU worker
    /// process: OUT is the file when one trace is selected (`--trace-host`, `--trace-gpu`, or a
    /// topology with one GPU), otherwise a directory of `rank{H}-dev{G}.pt.trace.json` files.
    #[arg(long, conflicts_with_all = ["form", "duplicates", "shuffle", "legacy"])]
    pub kineto: bool,
    /// With --kineto: stop once the traces hold this many bytes together (`500M`, `2.5G`,
    /// decimal units); the request count is then unbounded.
    #[arg(long, value_name = "SIZE", requires = "kineto", value_parser = parse_byte_size)]
    pub target_bytes: Option<u64>,
    /// With --kineto: only the traces of this host (0-based).
    #[arg(long, value_name = "HOST", requires = "kineto")]
    pub trace_host: Option<u32>,
    /// With --kineto: only the traces of this GPU index (within each host).
    #[arg(long, value_name = "GPU", requires = "kineto")]
    pub trace_gpu: Option<u32>,
    /// With --kineto: engine iterations per `ProfilerStep#N` range.
    #[arg(long, default_value_t = 1, value_name = "N", requires = "kineto")]
    pub iterations_per_step: u32,
    /// With --kineto: write `baseTimeNanoseconds` and timestamps relative to it.
    #[arg(long, requires = "kineto")]
    pub base_time: bool,
    /// Output file (`-` for standard output).
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    pub output: PathBuf,
}

/// Parses a byte count with an optional decimal unit (`k`, `M`, `G`, `T`; a trailing `B` is
/// allowed): `500M`, `2.5G`, `1000000`.
fn parse_byte_size(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let number = trimmed.trim_end_matches(['B', 'b']);
    let (digits, scale) = match number.char_indices().last() {
        Some((i, 'k' | 'K')) => (&number[..i], 1e3),
        Some((i, 'M' | 'm')) => (&number[..i], 1e6),
        Some((i, 'G' | 'g')) => (&number[..i], 1e9),
        Some((i, 'T' | 't')) => (&number[..i], 1e12),
        _ => (number, 1.0),
    };
    match digits.parse::<f64>() {
        Ok(value) if value.is_finite() && value >= 0.0 && value * scale < 1.8e19 => {
            Ok((value * scale).round() as u64)
        }
        _ => Err(format!(
            "expected a byte count such as 500M or 2.5G, not {text:?}"
        )),
    }
}

/// `tally trace import ...`
#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// PyTorch profiler (Kineto / Chrome trace) JSON, optionally gzip-compressed.
    Kineto(ImportArgs),
    /// Nsight Systems SQLite exports (`nsys export --type sqlite`), optionally gzip-compressed.
    Nsys(ImportArgs),
}

/// Options of `tally trace import kineto|nsys`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Trace files (several files, e.g. ranks of one job, go into one artifact).
    #[arg(required = true, value_name = "TRACE")]
    pub traces: Vec<PathBuf>,
    /// The artifact to write (JSONL; `-` for standard output).
    #[arg(short = 'o', long = "output", value_name = "ARTIFACT.jsonl")]
    pub output: PathBuf,
    /// The run id (default: derived from the traces' bytes).
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
    /// A GPU's UUID: `UUID` (device 0), `INDEX=UUID`, or `TRACE_FILE:INDEX=UUID`; repeatable.
    #[arg(long = "device-uuid", value_name = "UUID")]
    pub device_uuids: Vec<String>,
    /// Ranges whose name matches this regular expression become iterations too.
    #[arg(long, value_name = "REGEX")]
    pub iterations: Option<String>,
    /// One activity per GPU event (`kernel`) or per launch (`launch`, CUDA graphs carry their
    /// busy sub-intervals).
    #[arg(long, value_enum, default_value_t = DetailArg::Kernel)]
    pub detail: DetailArg,
    /// Also write each runtime launch call as a `runtime` activity (for the Perfetto view).
    #[arg(long)]
    pub runtime: bool,
    /// Artifact form.
    #[arg(long, value_enum, default_value_t = FormArg::V4)]
    pub form: FormArg,
}

/// Import granularity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DetailArg {
    /// One activity per GPU event.
    Kernel,
    /// One activity per launch.
    Launch,
}

/// `tally trace export ...`
#[derive(Debug, Subcommand)]
pub enum ExportCommand {
    /// A Chrome trace-event file for the Perfetto UI and chrome://tracing.
    Perfetto(PerfettoArgs),
}

/// `tally trace export perfetto`
#[derive(Debug, Args)]
pub struct PerfettoArgs {
    #[command(flatten)]
    pub input: EvidenceFiles,
    /// The trace-event JSON to write (`-` for standard output).
    #[arg(short = 'o', long = "output", value_name = "OUT.json")]
    pub output: PathBuf,
}

/// `tally trace link`
#[derive(Debug, Args)]
pub struct LinkArgs {
    /// The engine's artifact (iterations, engine activity refs with correlation ids).
    #[arg(value_name = "ENGINE.jsonl")]
    pub engine: PathBuf,
    /// The trace's artifact (imported GPU activities).
    #[arg(value_name = "TRACE.jsonl")]
    pub trace: PathBuf,
    /// The linked artifact (engine records, then the trace's with new links).
    #[arg(short = 'o', long = "output", value_name = "OUT.jsonl")]
    pub output: PathBuf,
    /// Artifact form.
    #[arg(long, value_enum, default_value_t = FormArg::V4)]
    pub form: FormArg,
}

/// `tally trace parse-only`
#[derive(Debug, Args)]
pub struct ParseOnlyArgs {
    #[command(flatten)]
    pub input: EvidenceFiles,
    /// Only parse every line as JSON (the floor under reading), without reading records.
    #[arg(long)]
    pub json_only: bool,
}
