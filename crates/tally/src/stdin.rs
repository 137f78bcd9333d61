//! Whether standard input was closed when tally started (`tally trace account - <&-`).
//!
//! Rust's runtime opens `/dev/null` on a closed descriptor 0, 1 or 2 before `main` runs (so that
//! no file opened later takes its number), after which a closed standard input reads as an empty
//! one: `tally trace account -` would report an empty artifact and exit 0. So the descriptor is
//! looked at earlier, by a constructor that the C runtime runs before Rust's (an entry of the
//! ELF `.init_array`, as the `ctor` crate makes), and an input of `-` is refused when it was
//! closed.

use std::sync::atomic::{AtomicBool, Ordering};

static CLOSED_AT_START: AtomicBool = AtomicBool::new(false);

/// Runs before `main` (and before Rust's runtime replaces a closed descriptor): notes whether
/// descriptor 0 is open. It allocates nothing and calls only `fcntl`.
extern "C" fn note_closed_stdin() {
    // SAFETY: fcntl(F_GETFD) on any descriptor number only reads the descriptor table; it fails
    // with EBADF exactly when the descriptor is not open.
    #[allow(unsafe_code)]
    let flags = unsafe { libc::fcntl(libc::STDIN_FILENO, libc::F_GETFD) };
    CLOSED_AT_START.store(flags == -1, Ordering::Relaxed);
}

#[used]
// SAFETY: a pointer to a function of the C ABI without arguments in `.init_array`, which the
// dynamic loader (or the static start-up code) calls once before `main`; the function is sound
// to call at that point (see above).
#[allow(unsafe_code)]
#[unsafe(link_section = ".init_array")]
static NOTE_CLOSED_STDIN: extern "C" fn() = note_closed_stdin;

/// Whether descriptor 0 was closed when the process started.
pub fn closed_at_start() -> bool {
    CLOSED_AT_START.load(Ordering::Relaxed)
}
