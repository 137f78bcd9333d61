//! End-to-end tests of the `tally` binary: real processes, real files.

mod bench_cli;
mod campaign_config;
mod campaign_evidence;
mod campaign_external;
mod campaign_first_hour;
mod campaign_holds;
mod campaign_inference;
mod campaign_postgres;
mod campaign_repo;
mod campaign_safety;
mod campaign_slurm;
mod campaign_snapshots;
mod campaign_status_table;
mod campaign_verdicts;
mod campaign_worktree_cache;
mod conformance;
mod hostile;
mod implementers_config;
mod implementers_guard;
mod implementers_ideas;
mod implementers_presets;
mod implementers_runs;
mod import_cli;
mod reference;
mod support;
mod trace_cli;
