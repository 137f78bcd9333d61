//! Integration tests of `tally-store`: the conformance suite on in-memory and file-backed
//! SQLite, the file-only behaviour (reopening, migrations, refusing foreign or newer files,
//! WAL and locking), atomicity under a failing write, and a real `kill -9` in the middle of
//! writes; the guard triggers that refuse writes from other programs.

mod contract;
mod crash;
mod fixtures;
mod guard;
mod ideas;
mod postgres;
mod postgres_workers;
mod sqlite_file;
mod sqlite_workers;
