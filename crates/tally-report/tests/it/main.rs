//! `tally-report` integration tests: one surface's sections rendered three ways, and the
//! evidence reports.

mod evidence;
mod render;
