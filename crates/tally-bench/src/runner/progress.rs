//! Live counters for the progress line: requests done, in flight, the rate, and a running
//! p50/p99 of E2E over the most recent requests (display only: printed figures never come from
//! here).

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use crate::record::RequestRecord;
use crate::stats::{quantile_sorted, sorted};

/// One snapshot for the progress line.
#[derive(Clone, Debug, PartialEq)]
pub struct Progress {
    /// Seconds since the run started.
    pub elapsed_s: f64,
    /// Requests finished.
    pub done: u64,
    /// Requests in flight.
    pub in_flight: u64,
    /// Finished requests per second since the start.
    pub rate: f64,
    /// Running E2E p50 over recent requests, ms.
    pub p50_ms: Option<f64>,
    /// Running E2E p99 over recent requests, ms.
    pub p99_ms: Option<f64>,
}

/// The counters.
#[derive(Debug)]
pub struct ProgressState {
    start: Instant,
    started: AtomicU64,
    done: AtomicU64,
    recent: Mutex<VecDeque<f64>>,
}

const RECENT: usize = 4096;

impl ProgressState {
    /// Counters from now.
    pub fn new() -> Self {
        Self {
            start: Instant::now(),
            started: AtomicU64::new(0),
            done: AtomicU64::new(0),
            recent: Mutex::new(VecDeque::with_capacity(RECENT)),
        }
    }

    /// A request was sent.
    pub fn started(&self) {
        self.started.fetch_add(1, Ordering::Relaxed);
    }

    /// A request ended.
    pub fn finished(&self, record: &RequestRecord) {
        self.done.fetch_add(1, Ordering::Relaxed);
        if let Some(e2e) = record.e2e_ms().filter(|_| record.ok()) {
            let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
            if recent.len() == RECENT {
                recent.pop_front();
            }
            recent.push_back(e2e);
        }
    }

    /// The current snapshot.
    pub fn snapshot(&self) -> Progress {
        let elapsed_s = self.start.elapsed().as_secs_f64();
        let done = self.done.load(Ordering::Relaxed);
        let started = self.started.load(Ordering::Relaxed);
        let recent = sorted(
            self.recent
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .copied()
                .collect(),
        );
        Progress {
            elapsed_s,
            done,
            in_flight: started.saturating_sub(done),
            rate: if elapsed_s > 0.0 {
                done as f64 / elapsed_s
            } else {
                0.0
            },
            p50_ms: quantile_sorted(&recent, 0.5),
            p99_ms: quantile_sorted(&recent, 0.99),
        }
    }
}

impl Default for ProgressState {
    fn default() -> Self {
        Self::new()
    }
}
