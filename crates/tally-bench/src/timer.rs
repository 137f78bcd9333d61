//! Sleeping until an absolute instant with sub-millisecond precision.
//!
//! tokio's timer wheel has millisecond granularity (its docs say so), too coarse for frames due
//! every few milliseconds or arrivals every 200 µs. One process-wide timer thread keeps a heap of
//! deadlines and sleeps with the operating system's high-resolution sleep (`park_timeout`, a futex
//! wait: tens of microseconds of slack), then wakes the task whose deadline came. Deadlines are
//! absolute, so lateness never accumulates from one frame to the next. The fake server's frames
//! use it; the client's open-loop dispatcher sleeps on its own [`crate::alarm::Alarm`] instead
//! (one thread switch fewer per arrival), falling back to this thread where it has no `timerfd`.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, Waker};
use std::thread::Thread;
use std::time::{Duration, Instant};

#[derive(Debug, Default)]
struct Slot {
    fired: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

#[derive(Debug)]
struct Entry {
    deadline: Instant,
    seq: u64,
    slot: Arc<Slot>,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    // Reversed: the heap's top is the earliest deadline.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.deadline, other.seq).cmp(&(self.deadline, self.seq))
    }
}

#[derive(Debug)]
struct TimerThread {
    heap: Mutex<BinaryHeap<Entry>>,
    seq: AtomicU64,
    thread: Thread,
}

fn timer() -> &'static TimerThread {
    static TIMER: OnceLock<&'static TimerThread> = OnceLock::new();
    TIMER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<&'static TimerThread>();
        let handle = std::thread::Builder::new()
            .name("tally-bench-timer".into())
            .spawn(move || {
                let Ok(timer) = rx.recv() else { return };
                run(timer);
            })
            .unwrap_or_else(|err| panic!("cannot start the timer thread: {err}"));
        let timer: &'static TimerThread = Box::leak(Box::new(TimerThread {
            heap: Mutex::new(BinaryHeap::new()),
            seq: AtomicU64::new(0),
            thread: handle.thread().clone(),
        }));
        let _ = tx.send(timer);
        timer
    })
}

fn run(timer: &TimerThread) {
    loop {
        let next = {
            let mut heap = timer.heap.lock().unwrap_or_else(|e| e.into_inner());
            let now = Instant::now();
            while heap.peek().is_some_and(|top| top.deadline <= now) {
                if let Some(entry) = heap.pop() {
                    entry
                        .slot
                        .fired
                        .store(true, std::sync::atomic::Ordering::Release);
                    let waker = entry
                        .slot
                        .waker
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .take();
                    if let Some(waker) = waker {
                        waker.wake();
                    }
                }
            }
            heap.peek()
                .map(|top| top.deadline.saturating_duration_since(now))
        };
        match next {
            Some(wait) => std::thread::park_timeout(wait),
            None => std::thread::park_timeout(Duration::from_secs(1)),
        }
    }
}

/// A future that completes at `deadline` (see [`sleep_until`]).
#[derive(Debug)]
pub struct PreciseSleep {
    deadline: Instant,
    slot: Option<Arc<Slot>>,
}

/// Completes at `deadline`, within tens of microseconds; at once if it has passed.
pub fn sleep_until(deadline: Instant) -> PreciseSleep {
    PreciseSleep {
        deadline,
        slot: None,
    }
}

impl Future for PreciseSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if Instant::now() >= self.deadline {
            return Poll::Ready(());
        }
        match &self.slot {
            Some(slot) => {
                if slot.fired.load(std::sync::atomic::Ordering::Acquire) {
                    return Poll::Ready(());
                }
                *slot.waker.lock().unwrap_or_else(|e| e.into_inner()) = Some(cx.waker().clone());
                if slot.fired.load(std::sync::atomic::Ordering::Acquire) {
                    return Poll::Ready(());
                }
            }
            None => {
                let slot = Arc::new(Slot::default());
                *slot.waker.lock().unwrap_or_else(|e| e.into_inner()) = Some(cx.waker().clone());
                let timer = timer();
                let seq = timer.seq.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let earliest = {
                    let mut heap = timer.heap.lock().unwrap_or_else(|e| e.into_inner());
                    let earliest = heap.peek().is_none_or(|top| self.deadline < top.deadline);
                    heap.push(Entry {
                        deadline: self.deadline,
                        seq,
                        slot: slot.clone(),
                    });
                    earliest
                };
                if earliest {
                    timer.thread.unpark();
                }
                self.slot = Some(slot);
            }
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wakes_close_to_the_deadline() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let lateness = runtime.block_on(async {
            let start = Instant::now();
            let mut late = Vec::new();
            for k in 1..=40u32 {
                let deadline = start + Duration::from_micros(2_500) * k;
                sleep_until(deadline).await;
                late.push(Instant::now().duration_since(deadline));
            }
            late.sort();
            late[late.len() / 2]
        });
        // The median wake-up is well under a millisecond late even on a loaded machine.
        assert!(lateness < Duration::from_micros(900), "{lateness:?}");
    }
}
