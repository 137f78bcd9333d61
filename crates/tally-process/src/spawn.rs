//! One started command, as a handle ([`Spawned`]): spawn it (in a process group of its own, or
//! in the caller's), feed its stdin, drain its stdout and stderr, wait for its end with a
//! deadline and a [`CancelToken`], kill it, reap it. Callers compose these into their policy:
//! [`crate::run_in_group`] for the evaluate command, the exec provider for an external provider.
//!
//! Owns the mechanics. stdout and stderr are each drained by their own thread ([`Sink`]: into a
//! log file, through a callback, kept in memory) so the child never blocks on a full pipe; the
//! input, when there is one, is written by a third so a child that does not read it cannot block
//! us. A waiter thread waits for the leader with `waitid(WEXITED | WNOWAIT)`: it learns that the
//! leader exited *without reaping it*, so the leader's pid — the group id, for a group of its
//! own — cannot be reused while we may still signal it. [`Spawned::wait`] waits on a channel for
//! that event, the deadline, or a [`CancelToken`] wake-up.
//!
//! Deliberately absent: what a caller makes of the end (messages, classification, retries) and
//! when it gives up on the pipes; sweeping a group for what survived is [`crate::group`]'s.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::Instant;

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill, killpg};
use nix::sys::wait::{Id, WaitPidFlag, waitid};
use nix::unistd::Pid;
use tally_contract::{CancelToken, Wake};

use crate::proc_scan;

/// Which process group the command runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// A new group led by the command (`CommandExt::process_group(0)`): killing reaches every
    /// process of it, and a terminal's Ctrl-C reaches none.
    Own,
    /// The caller's group: killing reaches the command's own process only, and a terminal's
    /// Ctrl-C reaches it as it reaches the caller.
    Caller,
}

/// How much of an output stream to keep in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// None of it.
    Nothing,
    /// All of it.
    All,
    /// At least the last this many bytes (at most twice as many).
    Tail(usize),
    /// None of it, and no pipe: the stream *is* the sink's log file (it must have one), so the
    /// command's writes never depend on this process being alive (an implementer outlives a
    /// killed `tally run`). No [`LOG_LIMIT_BYTES`] limit applies and no feed is called.
    FileOnly,
}

/// A callback that sees every chunk of an output stream as it arrives.
pub type Feed = Box<dyn FnMut(&[u8]) + Send>;

/// The most bytes of one output stream a log file keeps: past it the draining goes on (the
/// command must not block on a full pipe), nothing more is written, and the log ends with a line
/// saying how many bytes were left out.
pub const LOG_LIMIT_BYTES: u64 = 512 * 1024 * 1024;

/// Where one output stream goes, chunk by chunk as it arrives.
pub struct Sink<'a> {
    /// A file to copy it to (created, with its directory, before the command starts), at most
    /// [`LOG_LIMIT_BYTES`]. A write that fails (a full disk) does not stop the draining; the
    /// drain then reports the log as incomplete ([`Drain::log_problem`]).
    pub log: Option<&'a Path>,
    /// Called on the drain thread with every chunk.
    pub feed: Option<Feed>,
    /// What to keep in memory ([`Drain::kept`]).
    pub keep: Keep,
}

impl Sink<'_> {
    /// Kept whole in memory, nothing else.
    pub fn memory() -> Self {
        Self {
            log: None,
            feed: None,
            keep: Keep::All,
        }
    }
}

/// What to start.
pub struct Command<'a> {
    /// The argv, run without a shell.
    pub argv: &'a [String],
    /// The working directory (`None`: the caller's).
    pub dir: Option<&'a Path>,
    /// Variables added to the inherited environment.
    pub env: Vec<(OsString, OsString)>,
    /// Bytes written to stdin, which is then closed; `None`: stdin is closed from the start.
    pub stdin: Option<Vec<u8>>,
    /// Where stdout goes.
    pub stdout: Sink<'a>,
    /// Where stderr goes.
    pub stderr: Sink<'a>,
}

/// Why a command did not start. Callers word it for their users.
#[derive(Debug)]
pub enum SpawnError {
    /// The argv is empty.
    EmptyCommand,
    /// A log file could not be created (the error names it).
    Log(std::io::Error),
    /// The program could not be started.
    Start {
        /// `argv[0]`.
        program: String,
        /// Why.
        source: std::io::Error,
    },
}

/// What ended a [`Spawned::wait`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    /// The leader exited (it is not reaped yet).
    LeaderExited,
    /// The deadline passed first.
    TimedOut,
    /// The token was cancelled first (or already was).
    Cancelled,
    /// The stop token of [`Spawned::wait_or_stop`] fired first (or already had), the cancel
    /// token not.
    Stopped,
}

/// One output stream being drained.
pub struct Drain {
    done: Receiver<()>,
    kept: Arc<Mutex<Vec<u8>>>,
    log_problem: Arc<Mutex<Option<String>>>,
    ended: bool,
}

impl Drain {
    /// Waits until the stream has reached its end (every process holding the pipe has closed
    /// it) or `until` passes; whether it has ended.
    pub fn wait_until(&mut self, until: Instant) -> bool {
        if !self.ended {
            let left = until.saturating_duration_since(Instant::now());
            self.ended = self.done.recv_timeout(left).is_ok();
        }
        self.ended
    }

    /// Why the log file is incomplete (a write failed: the error, naming the file), once the
    /// stream has ended; `None` when it holds everything (or everything up to
    /// [`LOG_LIMIT_BYTES`] and the line saying what was left out).
    pub fn log_problem(&self) -> Option<String> {
        self.log_problem
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// What [`Keep`] kept so far.
    pub fn kept(&self) -> Vec<u8> {
        self.kept
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// A started command: its leader, its drains and its waiter.
pub struct Spawned {
    child: Child,
    pid: Pid,
    group: Group,
    started: Instant,
    started_ticks: u64,
    wake_tx: Sender<Wake>,
    wake_rx: Receiver<Wake>,
    waiter: Option<thread::JoinHandle<()>>,
    leader_exited: bool,
    reaped: bool,
    /// The command's stdout.
    pub stdout: Drain,
    /// The command's stderr.
    pub stderr: Drain,
}

impl Spawned {
    /// Creates the log files, starts the command, and starts its drains and its waiter.
    pub fn spawn(command: Command<'_>, group: Group) -> Result<Self, SpawnError> {
        let (program, args) = command.argv.split_first().ok_or(SpawnError::EmptyCommand)?;
        let stdout_log = create_log(command.stdout.log)?;
        let stderr_log = create_log(command.stderr.log)?;
        let mut process = std::process::Command::new(program);
        process
            .args(args)
            .envs(command.env.iter().map(|(k, v)| (k, v)))
            .stdin(if command.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(stdio_for(&command.stdout, stdout_log.as_ref())?)
            .stderr(stdio_for(&command.stderr, stderr_log.as_ref())?);
        if let Some(dir) = command.dir {
            process.current_dir(dir);
        }
        if group == Group::Own {
            process.process_group(0);
        }

        let started = Instant::now();
        let started_ticks = proc_scan::ticks_since_boot_with_slack();
        let mut child = process.spawn().map_err(|source| SpawnError::Start {
            program: program.clone(),
            source,
        })?;
        let pid = Pid::from_raw(child.id() as i32);
        if let (Some(mut stdin), Some(input)) = (child.stdin.take(), command.stdin) {
            // A command may exit without reading its input; the write then fails, which is fine.
            thread::spawn(move || {
                let _ = stdin.write_all(&input);
            });
        }
        let stdout = match child.stdout.take() {
            Some(pipe) => spawn_drain(pipe, stdout_log, command.stdout),
            None => ended_drain(),
        };
        let stderr = match child.stderr.take() {
            Some(pipe) => spawn_drain(pipe, stderr_log, command.stderr),
            None => ended_drain(),
        };
        let (wake_tx, wake_rx) = channel();
        let waiter = spawn_waiter(pid, wake_tx.clone());
        Ok(Self {
            child,
            pid,
            group,
            started,
            started_ticks,
            wake_tx,
            wake_rx,
            waiter: Some(waiter),
            leader_exited: false,
            reaped: false,
            stdout,
            stderr,
        })
    }

    /// Just before the spawn.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// The leader's pid (for a group of its own, the group id).
    pub fn pid(&self) -> i32 {
        self.pid.as_raw()
    }

    /// Waits for the leader to exit, the deadline, or the token, whichever comes first. The
    /// token is checked once it is listened to, so a cancellation cannot be missed.
    pub fn wait(&mut self, deadline: Instant, cancel: Option<&CancelToken>) -> Waited {
        self.wait_or_stop(deadline, cancel, None)
    }

    /// [`wait`](Self::wait), also ended by a second token, `stop` ([`Waited::Stopped`]); the
    /// cancel token wins when both fired.
    pub fn wait_or_stop(
        &mut self,
        deadline: Instant,
        cancel: Option<&CancelToken>,
        stop: Option<&CancelToken>,
    ) -> Waited {
        if self.leader_exited {
            return Waited::LeaderExited;
        }
        let _listening = cancel.map(|token| token.listen(self.wake_tx.clone()));
        let _listening_stop = stop.map(|token| token.listen(self.wake_tx.clone()));
        let fired = || {
            if cancel.is_some_and(CancelToken::is_cancelled) {
                Some(Waited::Cancelled)
            } else if stop.is_some_and(CancelToken::is_cancelled) {
                Some(Waited::Stopped)
            } else {
                None
            }
        };
        if let Some(waited) = fired() {
            return waited;
        }
        loop {
            match self
                .wake_rx
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                Ok(Wake::LeaderExited) | Err(RecvTimeoutError::Disconnected) => {
                    self.leader_exited = true;
                    return Waited::LeaderExited;
                }
                // A wake-up left over from a token listened to before is not one of these.
                Ok(Wake::Cancelled) => {
                    if let Some(waited) = fired() {
                        return waited;
                    }
                }
                Err(RecvTimeoutError::Timeout) => return Waited::TimedOut,
            }
        }
    }

    /// Sends SIGKILL to the group (a group of its own) or to the leader alone (the caller's
    /// group). The leader is alive or an unreaped zombie until [`reap`](Self::reap), so its pid
    /// still names it; after that this does nothing.
    pub fn signal_kill(&self) {
        if self.reaped {
            return;
        }
        let _ = match self.group {
            Group::Own => killpg(self.pid, Signal::SIGKILL),
            Group::Caller => kill(self.pid, Signal::SIGKILL),
        };
    }

    /// [`signal_kill`](Self::signal_kill), then waits for the leader to exit (without reaping it).
    pub fn kill(&mut self) {
        self.signal_kill();
        while !self.leader_exited {
            match self.wake_rx.recv() {
                Ok(Wake::LeaderExited) | Err(_) => self.leader_exited = true,
                Ok(Wake::Cancelled) => {}
            }
        }
    }

    /// Waits for the leader to exit if it has not, and reaps it: its exit status. After this its
    /// pid may name another process.
    pub fn reap(&mut self) -> std::io::Result<ExitStatus> {
        let status = loop {
            match self.child.wait() {
                Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
                other => break other,
            }
        };
        self.reaped = true;
        self.leader_exited = true;
        if let Some(waiter) = self.waiter.take() {
            let _ = waiter.join();
        }
        status
    }

    /// The group (for a group of its own) and the time of the spawn in ticks since boot, which
    /// [`crate::group`]'s sweep needs.
    pub(crate) fn sweep_scope(&self) -> Option<(Pid, u64)> {
        (self.group == Group::Own).then_some((self.pid, self.started_ticks))
    }
}

fn create_log(path: Option<&Path>) -> Result<Option<fs_err::File>, SpawnError> {
    let Some(path) = path else {
        return Ok(None);
    };
    if let Some(parent) = path.parent() {
        fs_err::create_dir_all(parent).map_err(SpawnError::Log)?;
    }
    fs_err::File::create(path)
        .map(Some)
        .map_err(SpawnError::Log)
}

/// A pipe to drain, or for [`Keep::FileOnly`] the log file itself.
fn stdio_for(sink: &Sink<'_>, log: Option<&fs_err::File>) -> Result<Stdio, SpawnError> {
    match (sink.keep, log) {
        (Keep::FileOnly, Some(file)) => Ok(Stdio::from(
            file.file().try_clone().map_err(SpawnError::Log)?,
        )),
        (Keep::FileOnly, None) => Err(SpawnError::Log(std::io::Error::other(
            "Keep::FileOnly needs a log file",
        ))),
        _ => Ok(Stdio::piped()),
    }
}

/// The drain of a stream that goes straight to its file: nothing to wait for or keep.
fn ended_drain() -> Drain {
    let (done_tx, done) = channel();
    let _ = done_tx.send(());
    Drain {
        done,
        kept: Arc::new(Mutex::new(Vec::new())),
        log_problem: Arc::new(Mutex::new(None)),
        ended: true,
    }
}

/// Copies a pipe into its sink until EOF; the returned drain learns when it got there.
fn spawn_drain(
    mut pipe: impl Read + Send + 'static,
    log: Option<fs_err::File>,
    sink: Sink<'_>,
) -> Drain {
    let (done_tx, done) = channel();
    let kept = Arc::new(Mutex::new(Vec::new()));
    let keeping = kept.clone();
    let log_problem = Arc::new(Mutex::new(None));
    let reporting = log_problem.clone();
    let mut feed = sink.feed;
    let keep = sink.keep;
    thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        let mut log = log.map(|file| LogWriter::new(file, LOG_LIMIT_BYTES));
        loop {
            let n = match pipe.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            let chunk = &buf[..n];
            // A full disk must not stop the draining (the child would block): the log is then
            // incomplete, and the drain says so.
            if let Some(log) = log.as_mut() {
                log.write(chunk);
            }
            if let Some(feed) = feed.as_mut() {
                feed(chunk);
            }
            match keep {
                Keep::Nothing | Keep::FileOnly => {}
                Keep::All => keeping
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .extend_from_slice(chunk),
                Keep::Tail(bytes) => {
                    let mut tail = keeping.lock().unwrap_or_else(PoisonError::into_inner);
                    tail.extend_from_slice(chunk);
                    if tail.len() > 2 * bytes {
                        let cut = tail.len() - bytes;
                        tail.drain(..cut);
                    }
                }
            }
        }
        if let Some(log) = log {
            *reporting.lock().unwrap_or_else(PoisonError::into_inner) = log.finish();
        }
        let _ = done_tx.send(());
    });
    Drain {
        done,
        kept,
        log_problem,
        ended: false,
    }
}

/// A log file being written: at most `limit` bytes, the first failed write remembered.
struct LogWriter {
    file: fs_err::File,
    limit: u64,
    written: u64,
    left_out: u64,
    failed: Option<std::io::Error>,
}

impl LogWriter {
    fn new(file: fs_err::File, limit: u64) -> Self {
        Self {
            file,
            limit,
            written: 0,
            left_out: 0,
            failed: None,
        }
    }

    fn write(&mut self, chunk: &[u8]) {
        if self.failed.is_some() {
            return;
        }
        let room = usize::try_from(self.limit - self.written).unwrap_or(usize::MAX);
        let (kept, left) = chunk.split_at(chunk.len().min(room));
        if !kept.is_empty() {
            match self.file.write_all(kept) {
                Ok(()) => self.written += kept.len() as u64,
                Err(err) => self.failed = Some(err),
            }
        }
        self.left_out += left.len() as u64;
    }

    /// Ends the log (the line saying what was left out, the flush); why it is incomplete.
    fn finish(mut self) -> Option<String> {
        if self.failed.is_none() && self.left_out > 0 {
            let line = format!(
                "\n[tally: output cut here after {} bytes; {} more bytes were not kept]\n",
                self.written, self.left_out
            );
            if let Err(err) = self.file.write_all(line.as_bytes()) {
                self.failed = Some(err);
            }
        }
        if self.failed.is_none()
            && let Err(err) = self.file.flush()
        {
            self.failed = Some(err);
        }
        self.failed.map(|err| {
            if err.kind() == std::io::ErrorKind::StorageFull {
                format!("{err} (the disk is full)")
            } else {
                err.to_string()
            }
        })
    }
}

/// Waits, without reaping, for the leader to exit; then says so.
fn spawn_waiter(pid: Pid, wake: Sender<Wake>) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        // Exited, or an error (ECHILD: already reaped) — either way it is over; retry EINTR.
        while let Err(Errno::EINTR) =
            waitid(Id::Pid(pid), WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT)
        {}
        let _ = wake.send(Wake::LeaderExited);
    })
}

#[cfg(test)]
mod tests {
    use super::LogWriter;

    #[test]
    fn a_log_keeps_its_limit_and_says_what_it_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.log");
        let mut log = LogWriter::new(fs_err::File::create(&path).unwrap(), 10);
        log.write(b"0123456");
        log.write(b"789abcdef");
        log.write(b"ghij");
        assert_eq!(log.finish(), None);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "0123456789\n[tally: output cut here after 10 bytes; 10 more bytes were not kept]\n"
        );
    }

    #[test]
    fn a_full_disk_is_reported_with_the_file() {
        // Every write to /dev/full fails with ENOSPC.
        let mut log = LogWriter::new(
            fs_err::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .unwrap(),
            10,
        );
        log.write(b"hello");
        let why = log.finish().expect("an incomplete log");
        assert!(why.contains("/dev/full"), "{why}");
        assert!(why.ends_with("(the disk is full)"), "{why}");
    }
}
