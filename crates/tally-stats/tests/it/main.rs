//! Integration tests of `tally-stats`: the statistics, the `bootstrap` and `min_speedup` rules,
//! their JSON shape, and properties of the bound. One binary, several modules.

mod bounds;
mod cases;
mod min_speedup;
mod properties;
mod rule;
mod sequential;
mod wire;
