//! [`CancelToken`]: how the binary's Ctrl-C handler stops a sample in flight.
//!
//! Owns: a flag that, once set, stays set, and waking every sample that is waiting on its
//! process so the process group is killed at once (not at the next poll). Clones share the flag.
//! Whoever drives processes (`tally-process`) registers its wake-up channel with
//! [`CancelToken::listen`].
//!
//! Deliberately absent: installing a signal handler. The binary does that (e.g. a thread that
//! waits for SIGINT) and calls [`CancelToken::cancel`] from an ordinary thread — `cancel` takes
//! a lock, so it must not be called from inside a raw async-signal handler.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, PoisonError};

/// What a waiting sample is woken up for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// The process group's leader has exited (not yet reaped).
    LeaderExited,
    /// The token was cancelled.
    Cancelled,
}

#[derive(Debug, Default)]
struct Shared {
    cancelled: AtomicBool,
    next_id: AtomicU64,
    listeners: Mutex<Vec<(u64, Sender<Wake>)>>,
}

/// A cancellation handle shared between the thread running samples and the one that handles
/// Ctrl-C. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct CancelToken {
    shared: Arc<Shared>,
}

impl CancelToken {
    /// A token that is not cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels: every sample running with this token (or a clone) kills its process group and
    /// ends as `Cancelled`; samples started later end as `Cancelled` without running.
    pub fn cancel(&self) {
        self.shared.cancelled.store(true, Ordering::SeqCst);
        let listeners = self
            .shared
            .listeners
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for (_, listener) in listeners.iter() {
            // A sample that has already finished waiting may have dropped its receiver.
            let _ = listener.send(Wake::Cancelled);
        }
    }

    /// Whether [`cancel`](Self::cancel) has been called.
    pub fn is_cancelled(&self) -> bool {
        self.shared.cancelled.load(Ordering::SeqCst)
    }

    /// Registers a wake-up channel until the returned guard is dropped. Check
    /// [`is_cancelled`](Self::is_cancelled) *after* this, so a cancellation between the two
    /// cannot be missed.
    pub fn listen(&self, listener: Sender<Wake>) -> Listening<'_> {
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let mut listeners = self
            .shared
            .listeners
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        listeners.push((id, listener));
        Listening { token: self, id }
    }
}

/// Keeps a wake-up channel registered with a [`CancelToken`]; unregisters it on drop.
#[derive(Debug)]
pub struct Listening<'a> {
    token: &'a CancelToken,
    id: u64,
}

impl Drop for Listening<'_> {
    fn drop(&mut self) {
        let shared = &self.token.shared;
        let mut listeners = shared
            .listeners
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        listeners.retain(|(id, _)| *id != self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::channel;

    #[test]
    fn cancel_wakes_listeners_and_sticks() {
        let token = CancelToken::new();
        let (tx, rx) = channel();
        let _listening = token.listen(tx);
        assert!(!token.is_cancelled());
        token.clone().cancel();
        assert_eq!(rx.recv().unwrap(), Wake::Cancelled);
        assert!(token.is_cancelled());
    }

    #[test]
    fn dropped_listeners_are_forgotten() {
        let token = CancelToken::new();
        let (tx, _rx) = channel();
        drop(token.listen(tx));
        assert!(token.shared.listeners.lock().unwrap().is_empty());
    }
}
