//! The process allocator: mimalloc, with one option tuned for how tally allocates.
//!
//! `tally trace account` builds a graph of a million records in about a second, freeing batch
//! buffers, rehashed indexes and duplicate records along the way. mimalloc's default is to
//! return freed memory to the OS ("purge") after 1 s, and with transparent huge pages every page
//! it reuses afterwards is faulted in and zeroed again, 2 MiB at a time: on the 1M-record
//! benchmark traces that was 500–800 extra page faults and 0.1–0.25 s of system time
//! (`docs/performance.md`, "Allocator"). A 5 s delay keeps the freed memory for reuse for the
//! length of a trace command and still returns it in long-running commands (`tally campaign
//! run`). A `MIMALLOC_PURGE_DELAY` in the environment wins over this default.

/// mimalloc rather than the system allocator: bulk reads (100,000 measurements for `tally
/// status`) allocate many small strings and maps, where glibc malloc and its page faults cost
/// ~100 ms of ~270 ms (docs/performance.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc v3's `mi_option_t` (`mimalloc.h`), which
/// `libmimalloc-sys` 0.1.49 builds by default but names no constant for. The test below checks
/// the number against the option's documented default.
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// How long freed memory stays with the process before it is returned to the OS, in ms.
const PURGE_DELAY_MS: i64 = 5_000;

/// Sets the purge delay, unless the environment already chose one. Call first thing in `main`.
pub fn tune() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    set_purge_delay(PURGE_DELAY_MS);
}

#[allow(unsafe_code)]
fn set_purge_delay(ms: i64) {
    // SAFETY: `mi_option_set` stores an integer in mimalloc's option table; it takes no pointers
    // and may be called at any time from any thread. `PURGE_DELAY` is a valid option number.
    unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, ms as _) };
}

#[cfg(test)]
#[allow(unsafe_code)]
fn purge_delay() -> i64 {
    // SAFETY: as above; `mi_option_get` only reads the option table.
    unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) as i64 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_option_number_is_the_purge_delay() {
        // The only option whose documented default is 1000 (ms) is the purge delay; a renumbered
        // mimalloc would fail here rather than silently set another option.
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert_eq!(purge_delay(), 1000);
        }
        set_purge_delay(PURGE_DELAY_MS);
        assert_eq!(purge_delay(), PURGE_DELAY_MS);
    }
}
