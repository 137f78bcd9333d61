//! Running a command in its own process group: spawn, drain, time out, cancel, kill, reap, and
//! make sure nothing of it survives ([`run_in_group`], the evaluate command's policy).
//!
//! The command starts as the leader of a fresh process group with stdin closed, its output
//! drained by [`Spawned`] (for the evaluate command: into log files, stdout also through the
//! runner's METRIC scanner, stderr into a tail buffer). The calling thread waits for the leader's
//! exit (seen without reaping it, so the leader's pid — which is the group id — cannot be reused
//! while we still signal the group), the deadline, or a [`CancelToken`] wake-up. Whatever ends
//! the wait, the whole group then gets SIGKILL (a benchmark that leaves a server running in the
//! background must not keep holding the GPU), the leader is reaped, and the group is swept until
//! no live process remains in it.
//!
//! **Escapees.** A process that leaves the group (`setsid`, `setpgid`, Python's
//! `start_new_session=True`) is not reached by `killpg`. On Linux the sweep also finds them: every
//! process of a sample inherits a *marker*, an environment entry unique to the attempt (the
//! runner's is `TALLY_UNITS_FILE=<path>`), so live processes whose environment holds that exact
//! entry are killed too. A process that both leaves the group *and* clears that variable from its
//! environment escapes; that is documented as the one thing the runner cannot guarantee.
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
//! Deliberately absent: git, METRIC lines, classification into failures, retries (the runner's).
//! Linux only (`waitid(WNOWAIT)`, `/proc`, `PR_SET_CHILD_SUBREAPER`).

use std::os::unix::process::ExitStatusExt;
use std::thread;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;
use tally_contract::CancelToken;

use crate::proc_scan;
use crate::spawn::{Command, Group, SpawnError, Spawned, Waited};

/// How long the sweep keeps killing and waiting for the group (and escapees) to disappear.
const STRAY_GRACE: Duration = Duration::from_secs(5);
/// How long to wait for the drain threads once the processes are gone (a pipe held open by a
/// process we could not kill would otherwise block forever).
const DRAIN_GRACE: Duration = Duration::from_secs(2);
/// Timeouts are capped here (ten years) so the deadline never overflows.
const LONGEST_TIMEOUT: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

/// Makes this process a "child subreaper" (Linux `PR_SET_CHILD_SUBREAPER`): descendants of a
/// command whose parent dies are re-parented to this process instead of init, so the sweep reaps
/// every process of a sample itself. Process-wide; call once at start-up.
pub fn become_child_subreaper() -> Result<(), Errno> {
    nix::sys::prctl::set_child_subreaper(true)
}

/// How the process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
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
pub struct GroupRun {
    /// How it ended.
    pub end: End,
    /// From spawn to the leader's exit.
    pub wall: Duration,
    /// What stdout's [`Sink`](crate::Sink) kept.
    pub stdout: Vec<u8>,
    /// What stderr's [`Sink`](crate::Sink) kept.
    pub stderr: Vec<u8>,
    /// Pids still alive after the sweep's grace period (normally empty).
    pub strays: Vec<i32>,
    /// Why a log file is incomplete (stdout's, else stderr's): a failed write, naming the file.
    pub log_problem: Option<String>,
    /// The [`Stop`] token fired while the leader was alive: whatever `end` says, the run was
    /// asked to stop.
    pub stopped: bool,
}

/// A stop asked of a running command ([`run_in_group_stoppable`]): once `token` fires, the
/// deadline comes `grace` later (or stays where it was, when sooner).
#[derive(Debug, Clone, Copy)]
pub struct Stop<'a> {
    /// Fired by whoever asks the stop.
    pub token: &'a CancelToken,
    /// How long the command has from the stop to the deadline's SIGTERM.
    pub grace: Duration,
}

/// Runs `command` in a new process group to its end, for at most `timeout` (capped at ten
/// years), killing the group at the deadline or when `cancel` fires, and sweeping the group and
/// every live process whose environment holds `marker` (a `NAME=value` entry unique to this
/// run) once the leader is gone. `Err` only when it could not be started.
pub fn run_in_group(
    command: Command<'_>,
    marker: &[u8],
    timeout: Duration,
    cancel: &CancelToken,
) -> Result<GroupRun, SpawnError> {
    run_in_group_with_grace(command, marker, timeout, Duration::ZERO, cancel)
}

/// [`run_in_group`], except that at the deadline the group first gets SIGTERM and has `grace`
/// to exit (the leader's exit, or `cancel`, ends the grace early) before the SIGKILL; the end is
/// [`End::TimedOut`] either way. Cancellation kills at once.
pub fn run_in_group_with_grace(
    command: Command<'_>,
    marker: &[u8],
    timeout: Duration,
    grace: Duration,
    cancel: &CancelToken,
) -> Result<GroupRun, SpawnError> {
    run_in_group_stoppable(command, marker, timeout, grace, cancel, None)
}

/// [`run_in_group_with_grace`], and a [`Stop`] may bring the deadline forward while it runs:
/// when its token fires, the deadline becomes `stop.grace` from then (unless sooner already);
/// [`GroupRun::stopped`] says it fired. Cancellation still kills at once.
pub fn run_in_group_stoppable(
    command: Command<'_>,
    marker: &[u8],
    timeout: Duration,
    grace: Duration,
    cancel: &CancelToken,
    stop: Option<Stop<'_>>,
) -> Result<GroupRun, SpawnError> {
    let mut spawned = Spawned::spawn(command, Group::Own)?;
    // A timeout so large that the deadline is not representable means "no limit" in practice.
    let mut deadline = spawned.started() + timeout.min(LONGEST_TIMEOUT);
    let mut listened = stop;
    let mut stopped = false;
    let killed_for = loop {
        match spawned.wait_or_stop(deadline, Some(cancel), listened.map(|s| s.token)) {
            Waited::LeaderExited => break None,
            Waited::Stopped => {
                let grace = listened.take().map_or(Duration::ZERO, |s| s.grace);
                deadline = deadline.min(Instant::now() + grace.min(LONGEST_TIMEOUT));
                stopped = true;
            }
            Waited::TimedOut => {
                if !grace.is_zero() {
                    // The leader is alive or an unreaped zombie: the group id is still ours.
                    let _ = killpg(Pid::from_raw(spawned.pid()), Signal::SIGTERM);
                    let _ = spawned.wait(Instant::now() + grace, Some(cancel));
                }
                break Some(End::TimedOut);
            }
            Waited::Cancelled => break Some(End::Cancelled),
        }
    };
    if killed_for.is_some() {
        // The leader is alive or an unreaped zombie, so the group id is still ours.
        spawned.kill();
    }
    let wall = spawned.started().elapsed();
    // Kill whatever the leader left behind before reaping it: until it is reaped, its pid (the
    // group id) cannot name another group.
    spawned.signal_kill();
    let status = spawned.reap().ok();
    let strays = sweep(&spawned, marker);

    // With every writer dead the pipes are at EOF; give the drains a bounded moment to finish.
    let drain_deadline = Instant::now() + DRAIN_GRACE;
    spawned.stdout.wait_until(drain_deadline);
    spawned.stderr.wait_until(drain_deadline);
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
        stdout: spawned.stdout.kept(),
        stderr: spawned.stderr.kept(),
        strays,
        log_problem: spawned
            .stdout
            .log_problem()
            .or_else(|| spawned.stderr.log_problem()),
        stopped,
    })
}

/// Kills, until none is left or the grace period ends, every live process in the group and
/// every live process carrying the run's marker; reaps those that are our children (after
/// [`become_child_subreaper`]). Returns the pids that survived. Nothing for a command that ran
/// in the caller's group.
fn sweep(spawned: &Spawned, marker: &[u8]) -> Vec<i32> {
    let Some((pgid, started_ticks)) = spawned.sweep_scope() else {
        return Vec::new();
    };
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

/// The live processes, whenever they started, whose environment holds one of `markers` (whole
/// `NAME=value` entries), sorted; nothing is signalled.
pub fn find_marked(markers: &[Vec<u8>]) -> Vec<i32> {
    proc_scan::live_processes(proc_scan::Search {
        pgid: None,
        markers,
        started_since_ticks: 0,
    })
}

/// Sends `signal` to every live process carrying one of `markers` ([`find_marked`]); their pids.
pub fn signal_marked(markers: &[Vec<u8>], signal: Signal) -> Vec<i32> {
    let live = find_marked(markers);
    for &pid in &live {
        let _ = nix::sys::signal::kill(Pid::from_raw(pid), signal);
    }
    live
}

/// Sends SIGKILL to every live process, whenever it started, whose environment holds one of
/// `markers` (whole `NAME=value` entries): what a killed run left behind. Returns their pids,
/// sorted; empty when none was found.
pub fn kill_marked(markers: &[Vec<u8>]) -> Vec<i32> {
    let live = proc_scan::live_processes(proc_scan::Search {
        pgid: None,
        markers,
        started_since_ticks: 0,
    });
    for &pid in &live {
        let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
    }
    live
}
