//! Context interning: equal contexts of kept events share one allocation, so the graph holds one
//! `CorrelationContext` per distinct context whatever the reader delivered.
//!
//! A context already known by address costs one pointer lookup (the reader shares one `Arc` per
//! v4 definition and caches embedded ones, so this is the common case); an unknown one is
//! fingerprinted once and either becomes canonical or is replaced by the canonical equal one.
//!
//! Strings inside bodies (reference producers, kinds, roles) are deliberately *not* interned
//! here: replacing a reader's fresh string means freeing it on the resolving thread, which was
//! measured to cost about 1 µs per record (4× the rest of `push`) for about 110 bytes saved per
//! record. A reader that wants that saving should share those strings when it makes them.

use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::fingerprint::{self, Fingerprint};
use crate::model::CorrelationContext;

/// Canonical contexts.
#[derive(Debug, Default)]
pub(super) struct Interner {
    contexts: FxHashMap<Fingerprint, Arc<CorrelationContext>>,
    /// Addresses of the canonical contexts (all held alive by `contexts`).
    canonical: FxHashSet<usize>,
    last_context: usize,
}

impl Interner {
    /// The canonical context equal to `context`.
    pub fn context(&mut self, context: Arc<CorrelationContext>) -> Arc<CorrelationContext> {
        let address = Arc::as_ptr(&context) as usize;
        if address == self.last_context || self.canonical.contains(&address) {
            self.last_context = address;
            return context;
        }
        let kept = self
            .contexts
            .entry(fingerprint::context(&context))
            .or_insert(context);
        let address = Arc::as_ptr(kept) as usize;
        self.canonical.insert(address);
        self.last_context = address;
        kept.clone()
    }
}
