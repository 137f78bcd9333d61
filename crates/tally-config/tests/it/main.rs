//! `tally.toml` validation, end to end over the parser.

mod config;
mod executor;
mod implementer;
