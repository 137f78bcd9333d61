//! `tally-report` integration tests: one surface's sections rendered three ways.

mod render;
