//! The evidence reports of `tally trace` (`docs/cli.md`): turn `tally-evidence` results into the
//! text and JSON the commands print. Pure functions from values to strings (or into a writer the
//! caller gives); nothing here reads files or writes to the terminal.

pub mod account_json;
pub mod account_kernels;
pub mod account_text;
pub mod align;
pub mod json;
pub mod names;
pub mod shares;
pub mod units;
