//! Renderers: turn library results into the text and JSON the commands print. Pure functions
//! from values to strings; nothing here reads files or writes to the terminal.

pub mod account_json;
pub mod account_text;
pub mod json;
pub mod units;
