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

/// Options of the campaign commands.
#[derive(Debug, Args, Clone)]
pub struct CampaignOptions {
    /// The campaign store: a SQLite file path or `sqlite:PATH` (default `.tally/tally.db` at the
    /// repository root).
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
    Init(InitArgs),
    /// Propose, inspect and judge candidates.
    #[command(subcommand)]
    Candidate(CandidateCommand),
    /// Evaluate and judge the queued candidates.
    Run(RunArgs),
    /// Show the campaign: head, goal, evaluations, candidates, facts.
    Status(StatusArgs),
    /// Record measurements taken outside `tally run`.
    #[command(subcommand)]
    Measurement(MeasurementCommand),
    /// Campaign state.
    #[command(subcommand)]
    Campaign(CampaignCommand),
    /// List every capability, its providers and their parameters.
    Plugins(PluginsArgs),
    /// Print the implementer brief (Markdown).
    Brief(BriefArgs),
    /// Run a complete demo campaign on a toy inference workload in a throwaway repository.
    Demo(DemoArgs),
    /// Inference evidence: account GPU time, align clocks, validate request shares, convert.
    #[command(subcommand)]
    Trace(TraceCommand),
}

/// `tally init`
#[derive(Debug, Args)]
pub struct InitArgs {
    /// The template for a new tally.toml.
    #[arg(long, value_enum, default_value_t = TemplateArg::Minimal)]
    pub template: TemplateArg,
    #[command(flatten)]
    pub campaign: CampaignOptions,
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
    #[command(flatten)]
    pub campaign: CampaignOptions,
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
    #[command(flatten)]
    pub campaign: CampaignOptions,
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
    #[command(flatten)]
    pub campaign: CampaignOptions,
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
    #[command(flatten)]
    pub campaign: CampaignOptions,
}

/// `tally run`
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Return when nothing is queued instead of waiting for new candidates.
    #[arg(long)]
    pub until_idle: bool,
    #[command(flatten)]
    pub campaign: CampaignOptions,
}

/// `tally status`
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Print one JSON object (the contract in docs/cli.md).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub campaign: CampaignOptions,
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
    #[command(flatten)]
    pub campaign: CampaignOptions,
}

/// `tally campaign ...`
#[derive(Debug, Subcommand)]
pub enum CampaignCommand {
    /// Make a held or stopped campaign active again.
    Resume(ResumeArgs),
}

/// `tally campaign resume`
#[derive(Debug, Args)]
pub struct ResumeArgs {
    #[command(flatten)]
    pub campaign: CampaignOptions,
}

/// `tally plugins`
#[derive(Debug, Args)]
pub struct PluginsArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub campaign: CampaignOptions,
}

/// `tally brief`
#[derive(Debug, Args)]
pub struct BriefArgs {
    #[command(flatten)]
    pub campaign: CampaignOptions,
}

/// `tally demo`
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Where to create the demo repository (default: a new temporary directory, removed at the
    /// end unless --keep).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Keep the temporary repository.
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
    /// How many iterations the report lists (busiest first).
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
    /// Output file (`-` for standard output).
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    pub output: PathBuf,
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
