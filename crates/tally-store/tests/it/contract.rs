//! The conformance suite against in-memory SQLite and against SQLite files.

use std::sync::atomic::{AtomicUsize, Ordering};

use tally_contract::conformance::store_contract;
use tally_store::{SqliteStore, Store};

#[test]
fn in_memory_sqlite_passes_the_store_contract() {
    store_contract(|| Box::new(SqliteStore::open_in_memory().unwrap()) as Box<dyn Store>);
}

#[test]
fn file_backed_sqlite_passes_the_store_contract() {
    let dir = tempfile::tempdir().unwrap();
    let count = AtomicUsize::new(0);
    store_contract(|| {
        let n = count.fetch_add(1, Ordering::Relaxed);
        let path = dir.path().join(format!("store-{n}.db"));
        Box::new(SqliteStore::open(path).unwrap()) as Box<dyn Store>
    });
    assert!(
        count.load(Ordering::Relaxed) >= 20,
        "the contract makes a store per check"
    );
}
