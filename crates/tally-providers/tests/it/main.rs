//! `tally-providers` integration tests: every built-in provider through the registry, as the
//! engine builds and calls them, and `exec` against real external providers written in Python.

mod agent_usage;
mod exec;
mod fixture;
mod gpu_hours;
mod limits;
mod registry;
mod sections;
mod verdicts;
