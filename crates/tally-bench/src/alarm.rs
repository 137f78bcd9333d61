//! An alarm owned by one task, armed on the runtime's own reactor: on Linux a `timerfd`
//! registered with tokio, so the thread that waits for I/O is the thread the deadline wakes.
//!
//! The shared timer thread of [`crate::timer`] wakes a task from outside the runtime: its own
//! wake-up, then a wake-up of a runtime thread, two thread switches per deadline. The open
//! loop's dispatcher sleeps once per arrival (every 200 µs at 5,000/s); sleeping here instead
//! halved the client's context switches at that rate (docs/performance.md#openai-dispatch). A
//! `timerfd` has the kernel's high-resolution timer behind it (armed with no slack), and its
//! expiry is one more event in the `epoll_wait` a runtime thread is already blocked in. Where
//! there is no `timerfd` (not Linux, or the descriptor cannot be made) the alarm falls back to
//! [`crate::timer::sleep_until`].

use std::time::Instant;

/// One task's alarm.
#[derive(Debug)]
pub struct Alarm {
    #[cfg(target_os = "linux")]
    fd: Option<tokio::io::unix::AsyncFd<Timer>>,
}

/// The `timerfd`, owned: the descriptor [`AsyncFd`](tokio::io::unix::AsyncFd) watches.
#[cfg(target_os = "linux")]
#[derive(Debug)]
struct Timer(nix::sys::timerfd::TimerFd);

#[cfg(target_os = "linux")]
impl std::os::fd::AsRawFd for Timer {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsFd as _;
        self.0.as_fd().as_raw_fd()
    }
}

#[cfg(target_os = "linux")]
fn register(timer: Timer) -> Option<tokio::io::unix::AsyncFd<Timer>> {
    // SAFETY: `Timer` owns its descriptor, which stays open and the same for as long as the
    // `AsyncFd` holds it (it is closed only when the `Timer` drops, after deregistration).
    #[allow(unsafe_code)]
    let registered = unsafe {
        tokio::io::unix::AsyncFd::register_with_interest(timer, tokio::io::Interest::READABLE)
    };
    registered.ok()
}

impl Alarm {
    /// A new alarm; must be called inside a tokio runtime with I/O enabled.
    pub fn new() -> Self {
        #[cfg(target_os = "linux")]
        {
            use nix::sys::timerfd::{ClockId, TimerFd, TimerFlags};
            let fd = TimerFd::new(
                ClockId::CLOCK_MONOTONIC,
                TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
            )
            .ok()
            .and_then(|fd| register(Timer(fd)));
            Self { fd }
        }
        #[cfg(not(target_os = "linux"))]
        {
            Self {}
        }
    }

    /// Completes at `deadline` (at once if it has passed).
    pub async fn sleep_until(&mut self, deadline: Instant) {
        #[cfg(target_os = "linux")]
        if let Some(fd) = &self.fd {
            use nix::sys::time::{TimeSpec, TimeValLike as _};
            use nix::sys::timer::Expiration;
            use nix::sys::timerfd::TimerSetTimeFlags;
            let wait = deadline.saturating_duration_since(Instant::now());
            if wait.is_zero() {
                return;
            }
            // Relative: an `Instant` has no public monotonic-clock reading to make it absolute;
            // the nanoseconds between reading `now` and arming the timer are all it can lose.
            let span = TimeSpec::nanoseconds(i64::try_from(wait.as_nanos()).unwrap_or(i64::MAX));
            if fd
                .get_ref()
                .0
                .set(Expiration::OneShot(span), TimerSetTimeFlags::empty())
                .is_ok()
            {
                loop {
                    let Ok(mut guard) = fd.readable().await else {
                        break;
                    };
                    match fd.get_ref().0.wait() {
                        // Expired and read: nothing more to read until it is armed again.
                        Ok(()) => {
                            guard.clear_ready();
                            return;
                        }
                        Err(nix::errno::Errno::EAGAIN) => guard.clear_ready(),
                        Err(_) => break,
                    }
                }
            }
        }
        crate::timer::sleep_until(deadline).await;
    }
}

impl Default for Alarm {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn wakes_at_each_deadline_never_before_it() {
        let lateness = runtime().block_on(async {
            let mut alarm = Alarm::new();
            let start = Instant::now();
            let mut late = Vec::new();
            for k in 1..=40u32 {
                let deadline = start + Duration::from_micros(2_500) * k;
                alarm.sleep_until(deadline).await;
                let now = Instant::now();
                assert!(now >= deadline, "woke {:?} early", deadline - now);
                late.push(now - deadline);
            }
            late.sort();
            late[late.len() / 2]
        });
        // The median wake-up is well under a millisecond late even on a loaded machine.
        assert!(lateness < Duration::from_micros(900), "{lateness:?}");
    }

    #[test]
    fn a_deadline_that_has_passed_completes_at_once() {
        runtime().block_on(async {
            let mut alarm = Alarm::new();
            let start = Instant::now();
            alarm.sleep_until(start - Duration::from_millis(5)).await;
            alarm.sleep_until(start).await;
            assert!(start.elapsed() < Duration::from_millis(500));
        });
    }

    #[test]
    fn an_abandoned_wait_does_not_end_the_next_one_early() {
        runtime().block_on(async {
            let mut alarm = Alarm::new();
            // Armed for 30 ms, abandoned after 1 ms; its expiry comes while nothing waits.
            tokio::select! {
                () = alarm.sleep_until(Instant::now() + Duration::from_millis(30)) => {
                    panic!("the 30 ms alarm ended before the 1 ms sleep");
                }
                () = tokio::time::sleep(Duration::from_millis(1)) => {}
            }
            std::thread::sleep(Duration::from_millis(40));
            let start = Instant::now();
            let deadline = start + Duration::from_millis(20);
            alarm.sleep_until(deadline).await;
            assert!(
                Instant::now() >= deadline,
                "the stale expiry ended the new wait"
            );
        });
    }
}
