//! Integration tests of `tally-import` (one binary): the real-trace corpus, corrupt inputs,
//! linking and the Perfetto export.

mod brute;
mod corpus;
mod corrupt;
mod link;
mod perfetto;
mod real;
mod records;
mod synthetic;
