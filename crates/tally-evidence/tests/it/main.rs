//! Integration tests of `tally-evidence`, one binary (one module per area).

mod read;
