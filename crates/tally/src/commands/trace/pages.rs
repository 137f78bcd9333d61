//! Memory pages for the evidence commands: small ones.
//!
//! mimalloc asks the kernel for transparent huge pages, which suits `tally status` (its
//! ~150 MB of small allocations fault in 2 MiB at a time: ≈ 40 ms less system time than with
//! 4 KiB pages). Resolving a large trace is different: with huge pages every touched 2 MiB region
//! is resident, which on the 1M-record benchmark traces was 55–65 MiB of a ≈ 360 MiB peak (and
//! ≈ 30 MiB of the 45–75 MiB of small traces), for no measurable gain in time
//! (`docs/performance.md`, "Evidence"). So `tally trace` turns them off for its own process
//! before it reads anything; pages faulted in from then on are 4 KiB.

/// Turns transparent huge pages off for this process (Linux `PR_SET_THP_DISABLE`). A kernel that
/// refuses leaves them on, which changes memory use, never results.
pub fn prefer_small() {
    #[cfg(target_os = "linux")]
    let _ = nix::sys::prctl::set_thp_disable(true);
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    #[test]
    fn the_process_asks_for_small_pages() {
        super::prefer_small();
        // The flag is per process: this test binary now faults in small pages too, harmlessly.
        assert_eq!(nix::sys::prctl::get_thp_disable(), Ok(true));
    }
}
