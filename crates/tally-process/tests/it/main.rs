//! Integration tests of `tally-process` on real processes: process groups, deadlines,
//! cancellation, the sweep of leftovers and marked escapees, drains, and a command in the
//! caller's group.

mod group;
mod probe;
mod spawn;
