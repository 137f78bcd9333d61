//! Where "now" comes from, and how the loop waits. The engine never reads the system clock or
//! sleeps directly, so tests can pin time, stop rules like `max_hours` are tested exactly, and a
//! `tally run` waiting for candidates is tested without waiting.

use std::sync::Mutex;
use std::time::Duration;

use tally_model::UnixMillis;

/// A source of the current time.
pub trait Clock: Send + Sync {
    /// Now.
    fn now(&self) -> UnixMillis;

    /// Lets `duration` pass: the system clock sleeps, a test clock moves forward.
    fn sleep(&self, duration: Duration);
}

/// The system's wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> UnixMillis {
        UnixMillis::now()
    }

    fn sleep(&self, duration: Duration) {
        std::thread::sleep(duration);
    }
}

/// A clock that stands still until moved (tests).
#[derive(Debug, Default)]
pub struct FixedClock {
    now: Mutex<i64>,
}

impl FixedClock {
    /// A clock at `millis` since the epoch.
    pub fn at(millis: i64) -> Self {
        Self {
            now: Mutex::new(millis),
        }
    }
    /// Moves it forward.
    pub fn advance(&self, millis: i64) {
        *self.now.lock().unwrap_or_else(|e| e.into_inner()) += millis;
    }
}

impl Clock for FixedClock {
    fn now(&self) -> UnixMillis {
        UnixMillis(*self.now.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Moves the clock forward by `duration` (whole milliseconds) at once, and yields the thread
    /// so that other threads of a test get to run.
    fn sleep(&self, duration: Duration) {
        self.advance(i64::try_from(duration.as_millis()).unwrap_or(i64::MAX));
        std::thread::yield_now();
    }
}
