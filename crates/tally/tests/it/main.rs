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
mod campaign_snapshots;
mod campaign_status_table;
mod campaign_verdicts;
mod campaign_worktree_cache;
mod conformance;
mod hostile;
mod import_cli;
mod reference;
mod support;
mod trace_cli;
