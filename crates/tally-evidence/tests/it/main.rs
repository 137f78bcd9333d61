//! Integration tests of `tally-evidence`, one binary, one module per area: the reader on files,
//! and the pure core (resolution, accounting, intervals, alignment, shares) on records built in
//! memory.

mod account;
mod align;
mod build;
mod props;
mod read;
mod resolve;
mod shares;
