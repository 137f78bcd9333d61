//! Where "now" comes from. The engine never reads the system clock directly, so tests can pin
//! time and stop rules like `max_hours` are tested exactly.

use std::sync::Mutex;

use tally_model::UnixMillis;

/// A source of the current time.
pub trait Clock: Send + Sync {
    /// Now.
    fn now(&self) -> UnixMillis;
}

/// The system's wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> UnixMillis {
        UnixMillis::now()
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
}
