//! Early stop (docs/bench.md#interrupt): a signal closes the measurement window at once — no
//! new request is sent, an open-loop arrival still waiting for a slot is dropped — and the
//! requests in flight get a bounded grace to finish ([`STOP_GRACE`], or `--drain-timeout` if
//! shorter); a second stop request cancels them at once. What completed is summarised as usual,
//! and the run records when and why it stopped.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

/// How long requests in flight may go on after the first stop request.
pub const STOP_GRACE: Duration = Duration::from_secs(5);

#[derive(Clone, Debug, Default)]
struct StopState {
    /// The first request: when, and why (e.g. `SIGINT`).
    first: Option<(Instant, String)>,
    /// How many stop requests arrived.
    count: u32,
}

/// A handle that asks a run to stop early; clones share one state.
#[derive(Clone, Debug)]
pub struct StopHandle {
    state: Arc<watch::Sender<StopState>>,
}

impl Default for StopHandle {
    fn default() -> Self {
        Self::new()
    }
}

impl StopHandle {
    /// A handle nobody has asked to stop yet.
    pub fn new() -> Self {
        Self {
            state: Arc::new(watch::Sender::new(StopState::default())),
        }
    }

    /// Asks the run to stop; `reason` (e.g. `SIGINT`) is kept from the first request. Safe to
    /// call from any thread.
    pub fn request(&self, reason: &str) {
        self.state.send_modify(|state| {
            state.count += 1;
            if state.first.is_none() {
                state.first = Some((Instant::now(), reason.to_owned()));
            }
        });
    }

    /// When the first stop request arrived, and why.
    pub fn stopped(&self) -> Option<(Instant, String)> {
        self.state.borrow().first.clone()
    }

    /// Whether a stop was requested.
    pub fn is_stopping(&self) -> bool {
        self.state.borrow().count > 0
    }

    /// Resolves once a stop is requested.
    pub async fn wait(&self) {
        let mut rx = self.state.subscribe();
        let _ = rx.wait_for(|s| s.count > 0).await;
    }

    /// Resolves when a request in flight must be cancelled: `grace` after the first stop
    /// request, or at the second.
    pub async fn cut(&self, grace: Duration) {
        let mut rx = self.state.subscribe();
        let first = rx
            .wait_for(|s| s.count > 0)
            .await
            .ok()
            .and_then(|state| state.first.as_ref().map(|(at, _)| *at))
            .unwrap_or_else(Instant::now);
        tokio::select! {
            () = tokio::time::sleep_until((first + grace).into()) => {}
            _ = rx.wait_for(|s| s.count > 1) => {}
        }
    }
}

/// The end of a window that a stop at `stopped` may have closed early (never before `start`).
pub fn clip_window(window: (Instant, Instant), stopped: Option<Instant>) -> (Instant, Instant) {
    match stopped {
        Some(at) if at < window.1 => (window.0, at.max(window.0)),
        _ => window,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_second_request_cuts_at_once_and_the_first_reason_is_kept() {
        let stop = StopHandle::new();
        assert!(!stop.is_stopping());
        stop.request("SIGTERM");
        assert_eq!(stop.stopped().unwrap().1, "SIGTERM");
        let cut = tokio::spawn({
            let stop = stop.clone();
            async move { stop.cut(Duration::from_secs(3600)).await }
        });
        tokio::task::yield_now().await;
        assert!(!cut.is_finished());
        stop.request("SIGINT");
        tokio::time::timeout(Duration::from_secs(30), cut)
            .await
            .expect("the second request cuts")
            .unwrap();
        assert_eq!(stop.stopped().unwrap().1, "SIGTERM");
    }

    #[test]
    fn a_stop_closes_the_window_early_but_never_before_it_opens() {
        let t0 = Instant::now();
        let w = (t0 + Duration::from_secs(1), t0 + Duration::from_secs(3));
        assert_eq!(clip_window(w, None), w);
        assert_eq!(clip_window(w, Some(t0 + Duration::from_secs(5))), w);
        let at = t0 + Duration::from_secs(2);
        assert_eq!(clip_window(w, Some(at)), (w.0, at));
        assert_eq!(clip_window(w, Some(t0)), (w.0, w.0));
    }
}
