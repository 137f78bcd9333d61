//! Integration tests of `tally-evidence`, one binary, one module per area: the pure core
//! (resolution, accounting, intervals, alignment, shares) on records built in memory. The reader's
//! tests are `tally-artifact`'s.

mod account;
mod align;
mod build;
mod props;
mod resolve;
mod shares;
