//! What both backends share for the optional store parts (ideas, implementer runs and their
//! usage, `[checks]` runs): the SQL, the rules and the row decoding, written once.
//!
//! The statements are written with SQLite's numbered placeholders (`?1`); the PostgreSQL
//! backend runs them through [`dialect::dollar`]. Rows of either driver decode through
//! [`dialect::Cells`]. Each backend keeps only its transaction plumbing: which write or read
//! transaction a call takes, and the parameter types its driver wants.

pub(crate) mod checks;
pub(crate) mod dialect;
pub(crate) mod ideas;
pub(crate) mod runs;
