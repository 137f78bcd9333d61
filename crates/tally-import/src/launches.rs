//! The launch-call table: what linking needs to know about every runtime call with a
//! correlation id, in 40 bytes per call.
//!
//! A trace can hold millions of launch calls, and this table is the importer's largest structure
//! (GPU events are never buffered), so it is a sorted vector of compact entries — process, start,
//! and indexes into one shared list of API names and thread labels — looked up by binary search,
//! instead of a hash map of full records (which cost about 2.5× as much at its growth peaks). A
//! later call with the same key replaces an earlier one, as in the reference. Pure data: no I/O.

use rustc_hash::FxHashMap;
use tally_evidence::{Nanos, Text};

use crate::linking::LaunchCall;

/// Key process of single-process formats (Kineto keys launches by correlation id alone).
const ANY_PROCESS: i64 = i64::MIN;

#[derive(Clone, Copy, Debug)]
struct Entry {
    process: i64,
    correlation: u64,
    pid: i64,
    start: Nanos,
    tid: u32,
    name: u32,
}

/// Launch calls keyed by (process for multi-process formats, correlation id).
#[derive(Debug, Default)]
pub struct LaunchTable {
    entries: Vec<Entry>,
    strings: Vec<Text>,
    string_index: FxHashMap<Text, u32>,
    sealed: bool,
    duplicates: u64,
}

impl LaunchTable {
    fn intern(&mut self, text: &Text) -> u32 {
        if let Some(&at) = self.string_index.get(text) {
            return at;
        }
        let at = u32::try_from(self.strings.len()).expect("fewer than 2^32 distinct names");
        self.strings.push(text.clone());
        self.string_index.insert(text.clone(), at);
        at
    }

    /// Adds a call; `process` is `None` for formats whose GPU events do not name their process.
    pub fn insert(&mut self, process: Option<i64>, correlation: u64, call: &LaunchCall) {
        let tid = self.intern(&call.tid);
        let name = self.intern(&call.name);
        self.entries.push(Entry {
            process: process.unwrap_or(ANY_PROCESS),
            correlation,
            pid: call.pid,
            start: call.start,
            tid,
            name,
        });
        self.sealed = false;
    }

    /// Sorts the table for lookups, keeping the last call inserted under each key.
    pub fn seal(&mut self) {
        self.entries.sort_by_key(|e| (e.process, e.correlation));
        let mut write = 0usize;
        for read in 0..self.entries.len() {
            let current = self.entries[read];
            let superseded = self.entries.get(read + 1).is_some_and(|next| {
                (next.process, next.correlation) == (current.process, current.correlation)
            });
            if superseded {
                self.duplicates += 1;
            } else {
                self.entries[write] = current;
                write += 1;
            }
        }
        self.entries.truncate(write);
        self.entries.shrink_to_fit();
        self.sealed = true;
    }

    /// The call with this key (the table must be sealed). Its `end` is not kept: it equals `start`.
    pub fn get(&self, process: Option<i64>, correlation: u64) -> Option<LaunchCall> {
        debug_assert!(self.sealed, "seal the launch table before lookups");
        let key = (process.unwrap_or(ANY_PROCESS), correlation);
        let at = self
            .entries
            .binary_search_by_key(&key, |e| (e.process, e.correlation))
            .ok()?;
        let e = self.entries[at];
        Some(LaunchCall {
            pid: e.pid,
            tid: self.strings[e.tid as usize].clone(),
            start: e.start,
            end: e.start,
            name: self.strings[e.name as usize].clone(),
        })
    }

    /// Number of distinct keys (after sealing) or calls inserted (before).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Calls that a later call with the same key replaced (known after sealing).
    pub fn duplicates(&self) -> u64 {
        self.duplicates
    }

    /// Adds `by` to every start (a base time learnt after the calls were read).
    pub fn shift(&mut self, by: i128) -> Option<()> {
        for e in &mut self.entries {
            e.start = Nanos::try_from(i128::from(e.start) + by).ok()?;
        }
        Some(())
    }

    /// (pid, API name, start) of every call.
    pub fn calls(&self) -> impl Iterator<Item = (i64, &str, Nanos)> + '_ {
        self.entries
            .iter()
            .map(|e| (e.pid, &*self.strings[e.name as usize], e.start))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(pid: i64, start: Nanos, name: &str) -> LaunchCall {
        LaunchCall {
            pid,
            tid: "t".into(),
            start,
            end: start + 5,
            name: name.into(),
        }
    }

    #[test]
    fn later_calls_replace_earlier_ones_and_processes_stay_apart() {
        let mut table = LaunchTable::default();
        table.insert(Some(1), 7, &call(1, 100, "a"));
        table.insert(Some(2), 7, &call(2, 200, "b"));
        table.insert(Some(1), 7, &call(1, 300, "c"));
        table.insert(None, 9, &call(3, 400, "d"));
        table.seal();
        assert_eq!(table.len(), 3);
        assert_eq!(table.duplicates(), 1);
        assert_eq!(table.get(Some(1), 7).unwrap().start, 300);
        assert_eq!(&*table.get(Some(2), 7).unwrap().name, "b");
        assert_eq!(table.get(None, 9).unwrap().pid, 3);
        assert!(table.get(Some(3), 9).is_none());
        assert!(table.get(None, 7).is_none());
        assert_eq!(std::mem::size_of::<Entry>(), 40);
    }
}
