//! Integration tests of `tally-evidence`'s pure core: resolution, accounting, intervals,
//! alignment and share validation, on records built in memory.

mod account;
mod align;
mod build;
mod props;
mod resolve;
mod shares;
