//! Running the evaluate command in its own process group: spawn, drain, time out, cancel, kill,
//! reap, and make sure nothing of it survives.
//!
//! Owns the process mechanics of one attempt. The command starts as the leader of a fresh process
//! group (`CommandExt::process_group(0)`), stdin closed, stdout and stderr each drained by its own
//! thread into a log file (stdout also through the [`MetricScanner`], stderr into a tail buffer)
//! so the child never blocks on a full pipe. A third thread waits for the leader with
//! `waitid(WEXITED | WNOWAIT)`: it learns that the leader exited *without reaping it*, so the
//! leader's pid — which is the group id — cannot be reused while we still signal the group. The
//! calling thread waits on a channel for that event, the deadline, or a [`CancelToken`] wake-up.
//! Whatever ends the wait, the whole group then gets SIGKILL (a benchmark that leaves a server
//! running in the background must not keep holding the GPU), the leader is reaped, and the group
//! is swept until no live process remains in it.
//!
//! **Escapees.** A process that leaves the group (`setsid`, `setpgid`, Python's
//! `start_new_session=True`) is not reached by `killpg`. On Linux the sweep also finds them: every
//! process of the sample inherits `TALLY_UNITS_FILE`, whose value is unique to the attempt, so
//! live processes whose environment holds that exact entry are killed too. A process that both
//! leaves the group *and* clears that variable from its environment escapes; that is documented
//! as the one thing the runner cannot guarantee.
//!
//! **Reaping.** Our direct child is always reaped here. Its descendants are re-parented when
//! their parent dies: to the nearest "child subreaper" or to init. After
//! [`become_child_subreaper`] (the binary calls it once at start) they are re-parented to tally
//! and the sweep reaps them as well; without it they are reaped by init (or stay zombies under an
//! init that does not reap — harmless, a zombie holds no memory or GPU).
//!
//! **Why std + nix rather than tokio + process-wrap** (the stack's first pick): process-wrap's
//! group child reaps the leader and then only waits for *its own* children in the group; it
//! neither kills what the leader leaves running after a normal exit nor closes the pid-reuse
//! window between reaping the leader and signalling the group, and it cannot find escapees. Those
//! three are the hard part, so they would have been hand-written anyway; what remains (two drain
//! threads, one waiter thread, a channel with a timeout) is plain std and needs no runtime. nix
//! gives safe `waitid`, `killpg` and `prctl`, so the crate needs no `unsafe`.
//!
//! Deliberately absent: git, classification into failures (see [`crate::outcome`]), retries.
//! Linux only (`waitid(WNOWAIT)`, `/proc`, `PR_SET_CHILD_SUBREAPER`).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid, waitpid};
use nix::unistd::Pid;

use tally_contract::{CancelToken, Wake};

use crate::metric::MetricScanner;
use crate::{RunnerError, proc_scan};

/// How long the sweep keeps killing and waiting for the group (and escapees) to disappear.
const STRAY_GRACE: Duration = Duration::from_secs(5);
/// How long to wait for the drain threads once the processes are gone (a pipe held open by a
/// process we could not kill would otherwise block forever).
const DRAIN_GRACE: Duration = Duration::from_secs(2);
/// Timeouts are capped here (ten years) so the deadline never overflows.
const LONGEST_TIMEOUT: Duration = Duration::from_secs(10 * 365 * 24 * 3600);
/// Bytes of stderr kept for the failure sentence (enough for the last 500 characters).
const STDERR_TAIL_BYTES: usize = 4 * crate::outcome::STDERR_TAIL_CHARS + 4;

/// Makes this process a "child subreaper" (Linux `PR_SET_CHILD_SUBREAPER`): descendants of the
/// evaluate command whose parent dies are re-parented to this process instead of init, so the
/// runner reaps every process of a sample itself. Process-wide; call once at start-up.
pub fn become_child_subreaper() -> Result<(), RunnerError> {
    nix::sys::prctl::set_child_subreaper(true).map_err(|errno| RunnerError::System {
        call: "prctl(PR_SET_CHILD_SUBREAPER)",
        errno,
    })
}

/// What to run and how.
pub(crate) struct GroupCommand<'a> {
    /// The evaluate argv (no shell).
    pub argv: &'a [String],
    /// Working directory (the checkout).
    pub dir: &'a Path,
    /// Variables added to the inherited environment.
    pub env: Vec<(OsString, OsString)>,
    /// The `NAME=value` environment entry unique to this attempt, used to find escapees.
    pub marker: Vec<u8>,
    /// Where stdout and stderr go.
    pub stdout_log: &'a Path,
    /// Where stderr goes.
    pub stderr_log: &'a Path,
    /// Wall-clock limit.
    pub timeout: Duration,
}

/// How the process ended, before classification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// The leader exited with this code.
    Exited(i32),
    /// The leader was killed by this signal, not sent by us.
    Signalled(i32),
    /// We killed the group at the deadline.
    TimedOut,
    /// We killed the group because the token was cancelled.
    Cancelled,
}

/// Everything one run of the command produced.
#[derive(Debug)]
pub(crate) struct GroupRun {
    pub end: End,
    /// From spawn to the leader's exit.
    pub wall: Duration,
    pub metrics: BTreeMap<String, f64>,
    /// The end of stderr, lossily decoded.
    pub stderr_tail: String,
    /// Pids still alive after the sweep's grace period (normally empty).
    pub strays: Vec<i32>,
}

/// Runs the command to its end. `Err` only when it could not be started (or a log file could not
/// be created); the text says why.
pub(crate) fn run_in_group(
    command: &GroupCommand<'_>,
    cancel: &CancelToken,
) -> Result<GroupRun, String> {
    let (program, args) = command
        .argv
        .split_first()
        .ok_or("the evaluate command is empty")?;
    let stdout_log = create_log(command.stdout_log)?;
    let stderr_log = create_log(command.stderr_log)?;
    let mut process = Command::new(program);
    process
        .args(args)
        .current_dir(command.dir)
        .envs(command.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);

    let started = Instant::now();
    let started_ticks = proc_scan::ticks_since_boot_with_slack();
    let mut child = process.spawn().map_err(|err| {
        format!(
            "could not start `{program}` in {}: {err}",
            command.dir.display()
        )
    })?;
    let pgid = Pid::from_raw(child.id() as i32);

    let scanner = Arc::new(Mutex::new(MetricScanner::new()));
    let tail = Arc::new(Mutex::new(Vec::new()));
    let (drained_tx, drained_rx) = channel();
    let stdout = child.stdout.take().expect("stdout is piped");
    let stderr = child.stderr.take().expect("stderr is piped");
    spawn_drain(
        stdout,
        stdout_log,
        Sink::Metrics(scanner.clone()),
        drained_tx.clone(),
    );
    spawn_drain(stderr, stderr_log, Sink::Tail(tail.clone()), drained_tx);

    let (wake_tx, wake_rx) = channel();
    let listening = cancel.listen(wake_tx.clone());
    let waiter = spawn_waiter(pgid, wake_tx);
    // A timeout so large that the deadline is not representable means "no limit" in practice.
    let deadline = started + command.timeout.min(LONGEST_TIMEOUT);
    let mut killed_for = None;
    if cancel.is_cancelled() {
        killed_for = Some(End::Cancelled);
    }
    while killed_for.is_none() {
        match wake_rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(Wake::LeaderExited) | Err(RecvTimeoutError::Disconnected) => break,
            Ok(Wake::Cancelled) => killed_for = Some(End::Cancelled),
            Err(RecvTimeoutError::Timeout) => killed_for = Some(End::TimedOut),
        }
    }
    if killed_for.is_some() {
        // The leader is alive or an unreaped zombie, so the group id is still ours.
        let _ = killpg(pgid, Signal::SIGKILL);
        while let Ok(wake) = wake_rx.recv() {
            if wake == Wake::LeaderExited {
                break;
            }
        }
    }
    drop(listening);
    let wall = started.elapsed();
    // Kill whatever the leader left behind before reaping it: until it is reaped, its pid (the
    // group id) cannot name another group.
    let _ = killpg(pgid, Signal::SIGKILL);
    let status = reap_leader(&mut child);
    let _ = waiter.join();
    let strays = sweep(pgid, &command.marker, started_ticks);

    // With every writer dead the pipes are at EOF; give the drains a bounded moment to finish.
    let drain_deadline = Instant::now() + DRAIN_GRACE;
    for _ in 0..2 {
        let left = drain_deadline.saturating_duration_since(Instant::now());
        if drained_rx.recv_timeout(left).is_err() {
            break;
        }
    }
    let metrics = scanner
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .metrics();
    let stderr_tail =
        String::from_utf8_lossy(&tail.lock().unwrap_or_else(PoisonError::into_inner)).into_owned();
    let end = match killed_for {
        Some(end) => end,
        None => match status {
            Some(status) => match (status.code(), status.signal()) {
                (Some(code), _) => End::Exited(code),
                (None, Some(signal)) => End::Signalled(signal),
                (None, None) => End::Exited(-1),
            },
            None => End::Exited(-1),
        },
    };
    Ok(GroupRun {
        end,
        wall,
        metrics,
        stderr_tail,
        strays,
    })
}

fn create_log(path: &Path) -> Result<fs_err::File, String> {
    let why = |err: std::io::Error| format!("could not create the log file: {err}");
    if let Some(parent) = path.parent() {
        fs_err::create_dir_all(parent).map_err(why)?;
    }
    fs_err::File::create(path).map_err(why)
}

enum Sink {
    Metrics(Arc<Mutex<MetricScanner>>),
    Tail(Arc<Mutex<Vec<u8>>>),
}

/// Copies a pipe into its log file until EOF, feeding the sink; signals `done` at the end.
fn spawn_drain(
    mut pipe: impl Read + Send + 'static,
    mut log: fs_err::File,
    sink: Sink,
    done: Sender<()>,
) {
    thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        let mut log_ok = true;
        loop {
            let n = match pipe.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            let chunk = &buf[..n];
            // A full disk must not stop the draining (the child would block); the log is then
            // incomplete, which is all we can do.
            log_ok = log_ok && log.write_all(chunk).is_ok();
            match &sink {
                Sink::Metrics(scanner) => scanner
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .feed(chunk),
                Sink::Tail(tail) => {
                    let mut tail = tail.lock().unwrap_or_else(PoisonError::into_inner);
                    tail.extend_from_slice(chunk);
                    if tail.len() > 2 * STDERR_TAIL_BYTES {
                        let cut = tail.len() - STDERR_TAIL_BYTES;
                        tail.drain(..cut);
                    }
                }
            }
        }
        let _ = log.flush();
        let _ = done.send(());
    });
}

/// Waits, without reaping, for the leader to exit; then wakes the sample.
fn spawn_waiter(pid: Pid, wake: Sender<Wake>) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        // Exited, or an error (ECHILD: already reaped) — either way it is over; retry EINTR.
        while let Err(Errno::EINTR) =
            waitid(Id::Pid(pid), WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT)
        {}
        let _ = wake.send(Wake::LeaderExited);
    })
}

fn reap_leader(child: &mut Child) -> Option<std::process::ExitStatus> {
    loop {
        match child.wait() {
            Ok(status) => return Some(status),
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return None,
        }
    }
}

/// Kills, until none is left or the grace period ends, every live process in the group and
/// every live process carrying the attempt's marker; reaps those that are our children (after
/// [`become_child_subreaper`]). Returns the pids that survived.
fn sweep(pgid: Pid, marker: &[u8], started_ticks: u64) -> Vec<i32> {
    let deadline = Instant::now() + STRAY_GRACE;
    let mut pause = Duration::from_millis(1);
    let mut escapees = Vec::new();
    let markers = [marker.to_vec()];
    let search = proc_scan::Search {
        pgid: Some(pgid.as_raw()),
        markers: &markers,
        started_since_ticks: started_ticks,
    };
    let live = loop {
        reap_group_zombies(pgid);
        let live = proc_scan::live_processes(search);
        if live.is_empty() || Instant::now() >= deadline {
            break live;
        }
        for &pid in &live {
            let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
            if proc_scan::group_of(pid) != Some(pgid.as_raw()) {
                escapees.push(pid);
            }
        }
        let _ = killpg(pgid, Signal::SIGKILL);
        thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    };
    // Members that died between the last reap and the scan.
    reap_group_zombies(pgid);
    // Escapees re-parented to us (as subreaper) are zombie children of ours now. A zombie's pid
    // cannot be reused before it is reaped, and nobody else reaps our children, so a zombie child
    // at that pid is the escapee we killed.
    for pid in escapees {
        if proc_scan::is_zombie_child_of_mine(pid) {
            let _ = waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG));
        }
    }
    live
}

/// Reaps, without blocking, every child of ours that is a zombie in the group.
fn reap_group_zombies(pgid: Pid) {
    loop {
        match waitpid(Pid::from_raw(-pgid.as_raw()), Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) | Err(_) => return,
            Ok(_) => continue,
        }
    }
}
