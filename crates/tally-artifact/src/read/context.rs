//! Version-4 context interning on the reading side (`docs/evidence.md#v4-interning`, `docs/evidence.md#reader-api`): the
//! [`ContextRegistry`] of one file's definitions, and the [`CorrelationRecordDecoder`] that holds
//! one and turns each line's JSON into a record in file order.
//!
//! A registry maps ids to shared contexts (one `Arc` per distinct context, whichever alias names
//! it) and remembers, for each context, the first id that named it. The writer side (interning
//! contexts into definitions) lives in [`crate::write`] and may use the same registry. Nothing
//! here reads files.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use tally_evidence::error::{Error, Origin, Result};
use tally_evidence::model::{CorrelationContext, InferenceRecord, Text};

use super::decode::{self, Decoded};
use super::fields::Fault;

/// Validated contexts by id, for one file (the reference's `ContextRegistry`).
#[derive(Clone, Debug, Default)]
pub struct ContextRegistry {
    contexts: FxHashMap<Text, Arc<CorrelationContext>>,
    first_ids: FxHashMap<Arc<CorrelationContext>, Text>,
}

impl ContextRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Defines `id` as `context` and returns the shared context. Defining an id again with an
    /// equal context is a no-op; aliases (several ids for one context) share one `Arc` and keep
    /// the first id as the context's [`identity`](Self::identity).
    ///
    /// Errors: `context_id must be a non-empty string`, `conflicting context definition: {id}`.
    pub fn register(
        &mut self,
        id: &str,
        context: impl Into<Arc<CorrelationContext>>,
    ) -> Result<Arc<CorrelationContext>> {
        self.define(id, context.into()).map_err(refusal)
    }

    /// The context `id` names. Error: `unknown context_id: {id}`.
    pub fn lookup(&self, id: &str) -> Result<&Arc<CorrelationContext>> {
        self.find(id).map_err(refusal)
    }

    /// The first id registered for `context`, if any.
    pub fn identity(&self, context: &CorrelationContext) -> Option<&str> {
        self.first_ids.get(context).map(|id| id.as_ref())
    }

    /// Whether `id` could be registered as `context` without a conflict (registers nothing).
    /// Error: `conflicting context definition: {id}`.
    pub fn check(&self, id: &str, context: &CorrelationContext) -> Result<()> {
        match self.contexts.get(id) {
            Some(previous) if **previous != *context => Err(refusal(conflict(id))),
            _ => Ok(()),
        }
    }

    /// Number of ids defined.
    pub fn len(&self) -> usize {
        self.contexts.len()
    }

    /// Whether no id is defined.
    pub fn is_empty(&self) -> bool {
        self.contexts.is_empty()
    }

    pub(crate) fn define(
        &mut self,
        id: &str,
        context: Arc<CorrelationContext>,
    ) -> Result<Arc<CorrelationContext>, Fault> {
        if id.is_empty() {
            return Err(Fault::Value("context_id must be a non-empty string".into()));
        }
        if let Some(previous) = self.contexts.get(id) {
            return if **previous == *context {
                Ok(Arc::clone(previous))
            } else {
                Err(conflict(id))
            };
        }
        let shared = match self.first_ids.get_key_value(&*context) {
            Some((existing, _)) => Arc::clone(existing),
            None => {
                self.first_ids.insert(Arc::clone(&context), Text::from(id));
                context
            }
        };
        self.contexts.insert(Text::from(id), Arc::clone(&shared));
        Ok(shared)
    }

    pub(crate) fn find(&self, id: &str) -> Result<&Arc<CorrelationContext>, Fault> {
        self.contexts
            .get(id)
            .ok_or_else(|| Fault::Value(format!("unknown context_id: {id}")))
    }
}

fn conflict(id: &str) -> Fault {
    Fault::Value(format!("conflicting context definition: {id}"))
}

/// A [`Fault`] as this crate's error, at `origin`.
pub(crate) fn located(fault: Fault, origin: Origin) -> Error {
    match fault {
        Fault::Value(message) | Fault::Type(message) => Error::Record { origin, message },
        Fault::Range(message) => Error::OutOfRange { origin, message },
    }
}

fn refusal(fault: Fault) -> Error {
    located(fault, Origin::default())
}

/// Ids [`CorrelationRecordDecoder`] remembers at most (then it forgets them all).
const FOUND_CAPACITY: usize = 4096;

/// Decodes the records of one file in order, resolving v4 context ids against its registry (the
/// reference's `CorrelationRecordDecoder`). A decoder that is kept continues a file: its
/// definitions stay known.
#[derive(Clone, Debug, Default)]
pub struct CorrelationRecordDecoder {
    registry: ContextRegistry,
    /// Ids already looked up, by the address of their (per-thread shared) text, which each entry
    /// holds. An id, once defined, names the same context for good.
    found: FxHashMap<usize, (Text, Arc<CorrelationContext>)>,
}

impl CorrelationRecordDecoder {
    /// A decoder with an empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// A decoder that continues with `registry`'s definitions.
    pub fn with_registry(registry: ContextRegistry) -> Self {
        Self {
            registry,
            found: FxHashMap::default(),
        }
    }

    /// The definitions seen so far.
    pub fn registry(&self) -> &ContextRegistry {
        &self.registry
    }

    /// The registry, consuming the decoder.
    pub fn into_registry(self) -> ContextRegistry {
        self.registry
    }

    /// Decodes one line's JSON text: `None` for a definition (which is registered) or a blank
    /// line, else the record (legacy, or a validated event with its context restored). Errors
    /// carry no origin; the file readers add it.
    pub fn decode(&mut self, json: &str) -> Result<Option<InferenceRecord>> {
        let mut decoded =
            decode::decode_line(json.as_bytes(), 0, Some(&self.registry)).map_err(refusal)?;
        self.resolve(&mut decoded).map_err(refusal)?;
        Ok(decoded.finish())
    }

    /// Applies one decoded line to the registry, in file order: a definition is registered (and
    /// becomes blank); a compact record's id is looked up (the lookup error comes before the
    /// body's own) and it becomes [`Decoded::Resolved`].
    pub(crate) fn resolve(&mut self, decoded: &mut Decoded) -> Result<(), Fault> {
        match std::mem::replace(decoded, Decoded::Blank) {
            Decoded::Definition { id, context } => {
                self.registry.define(&id, context)?;
            }
            Decoded::Compact { id, event } => {
                let address = id.as_ptr() as usize;
                let context = match self.found.get(&address) {
                    Some((_, context)) => Arc::clone(context),
                    None => {
                        let context = Arc::clone(self.registry.find(&id)?);
                        if self.found.len() >= FOUND_CAPACITY {
                            self.found.clear();
                        }
                        self.found.insert(address, (id, Arc::clone(&context)));
                        context
                    }
                };
                *decoded = Decoded::Resolved(context, event?);
            }
            other => *decoded = other,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tally_evidence::model::{ClockKind, CollectionMode, Provenance};

    fn ctx(run: &str) -> CorrelationContext {
        CorrelationContext {
            run_id: run.into(),
            session_id: "s".into(),
            producer_id: "p".into(),
            source: "src".into(),
            clock_domain: "cd".into(),
            clock_kind: ClockKind::Monotonic,
            collection_mode: CollectionMode::Active,
            provenance: Provenance::Observed,
            source_version: None,
            engine: None,
            engine_version: None,
            backend: None,
            backend_version: None,
            host: None,
            device_uuid: None,
            pid: None,
            rank: None,
            local_rank: None,
            world_size: None,
        }
    }

    #[test]
    fn aliases_share_one_context_and_keep_the_first_id() {
        let mut r = ContextRegistry::new();
        let a = r.register("c1", ctx("r")).unwrap();
        let b = r.register("c2", ctx("r")).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert!(Arc::ptr_eq(r.lookup("c2").unwrap(), &a));
        assert_eq!(r.identity(&ctx("r")), Some("c1"));
        assert_eq!(r.len(), 2);
        // Redefinition with an equal context is a no-op.
        r.register("c1", ctx("r")).unwrap();
        let e = r.register("c1", ctx("other")).unwrap_err();
        assert_eq!(e.to_string(), "conflicting context definition: c1");
        assert_eq!(
            r.check("c2", &ctx("other")).unwrap_err().to_string(),
            "conflicting context definition: c2"
        );
        assert!(r.check("c3", &ctx("other")).is_ok());
        assert_eq!(
            r.lookup("c9").unwrap_err().to_string(),
            "unknown context_id: c9"
        );
        assert_eq!(
            r.register("", ctx("r")).unwrap_err().to_string(),
            "context_id must be a non-empty string"
        );
    }
}
