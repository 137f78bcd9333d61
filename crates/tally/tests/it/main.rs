//! End-to-end tests of the `tally` binary: real processes, real files.

mod conformance;
mod import_cli;
mod reference;
mod support;
mod trace_cli;
