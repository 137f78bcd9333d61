//! Hostile input through the binary: hand-over files that are FIFOs, sockets, devices
//! or links to them; endless input (`/dev/zero`, a pipe of zeros, a gzip bomb); files that
//! report size 0; a closed standard input; numbers too large to record; a store without write
//! access. Every command runs under a watch that kills it past a deadline or past a bound on its
//! resident memory, so a regression fails its test instead of hanging the suite or exhausting
//! the machine.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::campaign_repo::{CampaignRepo, candidate, text, verdicts};

/// What a watched command did.
#[derive(Debug)]
struct Watched {
    /// Its exit status, `None` when it was killed (by the watch or a signal).
    code: Option<i32>,
    stdout: String,
    stderr: String,
    /// The most resident memory it held (`VmHWM`, last seen), in MiB.
    peak_mib: u64,
    /// Why the watch killed it, if it did.
    killed: Option<String>,
}

impl Watched {
    /// Asserts that the command ended by itself with `code`, and returns its standard error.
    fn ended_with(&self, code: i32) -> &str {
        assert!(
            self.killed.is_none(),
            "{}: {self:#?}",
            self.killed.as_ref().unwrap()
        );
        assert_eq!(self.code, Some(code), "{self:#?}");
        &self.stderr
    }
}

/// The resident-memory high-water mark of a live process, in KiB.
fn peak_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Runs `command` (its standard input fed by `feed`, if given, else as the command set it) and
/// kills it once it runs past `deadline` or holds more than `max_mib` MiB.
fn watch(
    mut command: Command,
    feed: Option<Box<dyn FnOnce(ChildStdin) + Send>>,
    deadline: Duration,
    max_mib: u64,
) -> Watched {
    if feed.is_some() {
        command.stdin(Stdio::piped());
    }
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child: Child = command.spawn().expect("the command starts");
    let pid = child.id();
    let feeder = feed.map(|feed| {
        let stdin = child.stdin.take().expect("a piped stdin");
        std::thread::spawn(move || feed(stdin))
    });
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            text(&bytes)
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let start = Instant::now();
    let (mut peak, mut killed) = (0u64, None);
    let status = loop {
        if let Some(status) = child.try_wait().expect("the child can be waited for") {
            break status;
        }
        peak = peak.max(peak_kib(pid).unwrap_or(0));
        if peak > max_mib << 10 {
            killed = Some(format!("held more than {max_mib} MiB ({peak} KiB)"));
        } else if start.elapsed() > deadline {
            killed = Some(format!("ran past {} s", deadline.as_secs()));
        }
        if killed.is_some() {
            let _ = child.kill();
            break child.wait().expect("the killed child is reaped");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    if let Some(feeder) = feeder {
        let _ = feeder.join();
    }
    Watched {
        code: status.code(),
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
        peak_mib: peak >> 10,
        killed,
    }
}

/// The bound on a command's memory here: what reading one maximal line (16 MiB) a few times
/// over costs, far below what endless input grew to (6 GB in 10 s).
const MAX_MIB: u64 = 256;

fn tally_command(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tally"));
    command.args(args);
    command
}

/// `tally ARGS...` under the watch, with a deadline of a minute.
fn watched(args: &[&str]) -> Watched {
    watch(tally_command(args), None, Duration::from_secs(60), MAX_MIB)
}

const TOO_LONG: &str = "line 1: the line is longer than 16 MiB (16777216 bytes), the longest \
                        line tally reads (one record per line); is this a JSONL evidence artifact?";

#[test]
fn hostile_endless_input_is_refused_at_its_first_line_in_bounded_memory() {
    // A device that never ends a line.
    let out = watched(&["trace", "account", "/dev/zero"]);
    assert_eq!(
        out.ended_with(1).trim_end(),
        format!("error: /dev/zero: {TOO_LONG}")
    );
    assert!(out.peak_mib < MAX_MIB, "{out:#?}");

    // `head -c 2000000000 /dev/zero | tally trace account -`: the writer stops when tally
    // closes the pipe.
    let feed = Box::new(|mut stdin: ChildStdin| {
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..2000 {
            if stdin.write_all(&zeros).is_err() {
                return;
            }
        }
    });
    let out = watch(
        tally_command(&["trace", "account", "-"]),
        Some(feed),
        Duration::from_secs(60),
        MAX_MIB,
    );
    assert_eq!(
        out.ended_with(1).trim_end(),
        format!("error: -: {TOO_LONG}")
    );

    // A gzip bomb: 256 MiB of zeros in a few hundred KiB.
    let dir = tempfile::tempdir().unwrap();
    let bomb = dir.path().join("bomb.jsonl.gz");
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(&bomb).unwrap(),
        flate2::Compression::fast(),
    );
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..256 {
        gz.write_all(&zeros).unwrap();
    }
    gz.finish().unwrap();
    let out = watched(&["trace", "account", bomb.to_str().unwrap()]);
    assert_eq!(
        out.ended_with(1).trim_end(),
        format!("error: {}: {TOO_LONG}", bomb.display())
    );
}

#[test]
fn hostile_a_file_of_size_zero_is_read_and_a_closed_stdin_is_refused() {
    // `/proc/cpuinfo` reports size 0 but holds text: it is read, and it is no artifact.
    let out = watched(&["trace", "account", "/proc/cpuinfo"]);
    let stderr = out.ended_with(1);
    assert!(
        stderr.starts_with("error: /proc/cpuinfo: line 1: "),
        "{stderr}"
    );

    // `tally trace account - <&-`: a closed standard input is no input, not an empty one.
    let mut closed = Command::new("sh");
    closed
        .arg("-c")
        .arg("exec \"$0\" trace account - <&-")
        .arg(env!("CARGO_BIN_EXE_tally"));
    let out = watch(closed, None, Duration::from_secs(60), MAX_MIB);
    assert_eq!(
        out.ended_with(1).trim_end(),
        "error: -: standard input is closed; pipe an artifact in (`... | tally trace account -`) \
         or name a file"
    );
    assert_eq!(out.stdout, "");

    // An empty standard input is still an empty artifact.
    let mut empty = tally_command(&["trace", "account", "--json", "-"]);
    empty.stdin(Stdio::null());
    let out = watch(empty, None, Duration::from_secs(60), MAX_MIB);
    assert_eq!(out.ended_with(0), "");
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(report["counts"]["requests"], 0, "{report}");
}

#[test]
fn hostile_an_import_of_a_device_or_pipe_is_a_usage_error_before_any_read() {
    // `/dev/zero` never ends: before, the content hash read it forever. Both importers, and the
    // artifact is not written.
    let dir = tempfile::tempdir().unwrap();
    let artifact = dir.path().join("out.jsonl");
    let fix = "not a trace file; tally trace import reads regular files only (a Kineto JSON \
               trace or an Nsight Systems SQLite export, plain or gzip): save the trace to a \
               file first and name that file";
    for format in ["kineto", "nsys"] {
        let out = watched(&[
            "trace",
            "import",
            format,
            "/dev/zero",
            "-o",
            artifact.to_str().unwrap(),
        ]);
        assert_eq!(
            out.ended_with(2).trim_end(),
            format!("error: /dev/zero: is a character device, {fix}")
        );
        assert!(!artifact.exists(), "{format}: an artifact was written");
    }

    // A FIFO that no one writes to: opening it would block for ever, so it is never opened. A
    // real trace before it is not enough: every input is checked before any is read.
    let fifo = dir.path().join("trace.json");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let real = crate::support::testdata_dir().join("traces/real/hta_amd_mi250_rocm.json.gz");
    let out = watched(&[
        "trace",
        "import",
        "kineto",
        real.to_str().unwrap(),
        fifo.to_str().unwrap(),
        "-o",
        artifact.to_str().unwrap(),
    ]);
    assert_eq!(
        out.ended_with(2).trim_end(),
        format!("error: {}: is a FIFO (a pipe), {fix}", fifo.display())
    );
    // A directory, and a symbolic link to a device (followed), say what they are.
    let link = dir.path().join("zero.json");
    std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
    for (input, what) in [
        (dir.path().to_path_buf(), "a directory"),
        (link, "a character device"),
    ] {
        let out = watched(&[
            "trace",
            "import",
            "kineto",
            input.to_str().unwrap(),
            "-o",
            artifact.to_str().unwrap(),
        ]);
        assert!(
            out.ended_with(2)
                .contains(&format!("is {what}, not a trace file")),
            "{out:#?}"
        );
    }
    assert!(!artifact.exists());
}

/// A benchmark that leaves at `TALLY_EVIDENCE_FILE` or `TALLY_UNITS_FILE` what its revision's
/// `bench.conf` says (`hand_over=...`), then prints its metric and exits 0.
const HAND_OVER_BENCH: &str = r#"#!/bin/sh
set -eu
conf() { sed -n "s/^$1=//p" bench.conf | tail -n 1; }
case "$(conf hand_over)" in
fifo_evidence) mkfifo "$TALLY_EVIDENCE_FILE" ;;
fifo_units) mkfifo "$TALLY_UNITS_FILE" ;;
zero_evidence) ln -s /dev/zero "$TALLY_EVIDENCE_FILE" ;;
zero_units) ln -s /dev/zero "$TALLY_UNITS_FILE" ;;
sparse_units) truncate -s 1G "$TALLY_UNITS_FILE" ;;
socket_units)
    # (A socket's path is short: bind it from its directory.)
    cd "$(dirname "$TALLY_UNITS_FILE")"
    python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$(basename "$TALLY_UNITS_FILE")"
    cd - >/dev/null ;;
fifo_dot_git) rm -f .git && mkfifo .git ;;
esac
echo "METRIC tok_s=$(conf tok_s)"
"#;

const CONFIG: &str = r#"
name = "hostile"
evaluate = ["./evaluate.sh"]
evaluate_timeout = 60

[[metrics]]
name = "tok_s"
direction = "higher"
role = "primary"
repeats = 1
"#;

/// A campaign of the hand-over benchmark, its baseline measured.
fn hand_over_campaign() -> CampaignRepo {
    let repo = CampaignRepo::new();
    repo.write_executable("evaluate.sh", HAND_OVER_BENCH);
    repo.start_campaign(CONFIG, "tok_s=1000\n");
    repo
}

/// `tally ARGS... -C <repo>` under the watch.
fn watched_in(repo: &CampaignRepo, args: &[&str], deadline: Duration) -> Watched {
    watch(repo.command(args), None, deadline, MAX_MIB)
}

/// The errors of a candidate's own measurements.
fn errors(status: &Value, id: u64) -> Vec<String> {
    candidate(status, id)["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["side"] == "candidate")
        .map(|m| m["error"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn hostile_hand_over_files_fail_their_sample_at_once_in_bounded_memory() {
    let repo = hand_over_campaign();
    let modes = [
        "fifo_evidence",
        "fifo_units",
        "zero_evidence",
        "zero_units",
        "sparse_units",
        "socket_units",
        "fifo_dot_git",
    ];
    let confs: Vec<String> = modes
        .iter()
        .enumerate()
        .map(|(i, mode)| format!("tok_s={}\nhand_over={mode}\n", 1100 + i))
        .collect();
    repo.propose(&confs.iter().map(String::as_str).collect::<Vec<_>>());
    // Before the hand-over rules, the first FIFO blocked `tally run` in open() for good, and
    // `/dev/zero` behind a link grew it by gigabytes; a FIFO in place of the checkout's `.git`
    // blocked the removal of the checkout.
    let out = watched_in(&repo, &["run", "--until-idle"], Duration::from_secs(180));
    out.ended_with(0);

    let status = repo.status_json();
    let verdicts = verdicts(&status);
    assert_eq!(
        verdicts[..7],
        ["keep", "crash", "crash", "crash", "crash", "crash", "crash"]
    );
    // The checkout's own files are the command's business: the sample counts.
    assert_ne!(verdicts[7], "crash");
    assert_eq!(errors(&status, 7), [""]);
    let expected = [
        "bad evidence file: it is a FIFO (named pipe), not a regular file",
        "bad units file: it is a FIFO (named pipe), not a regular file",
        "bad evidence file: it is a symbolic link to /dev/zero, a character device (1:5), not a \
         regular file",
        "bad units file: it is a symbolic link to /dev/zero, a character device (1:5), not a \
         regular file",
        "bad units file: it holds more than 16 MiB (16777216 bytes), the most a units file may \
         hold",
        "bad units file: it is a socket, not a regular file",
    ];
    for (i, why) in expected.iter().enumerate() {
        let id = i as u64 + 1;
        assert_eq!(errors(&status, id), vec![why.to_string()], "candidate#{id}");
        // Nothing that is not a regular file is kept as evidence.
        for m in candidate(&status, id)["measurements"].as_array().unwrap() {
            assert!(m["evidence"].is_null(), "{m}");
        }
    }
    assert!(repo.leftover_checkouts().is_empty());
}

/// Writes a report next to the repository and returns its path.
fn report(repo: &CampaignRepo, name: &str, text: &str) -> String {
    let path = repo.root().parent().unwrap().join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn hostile_reports_are_bounded_and_their_refusals_short() {
    let repo = hand_over_campaign();
    repo.propose(&["tok_s=1100\n"]);
    let deadline = Duration::from_secs(60);

    // An endless report is refused once it passes 1 MiB.
    let out = watched_in(
        &repo,
        &["measurement", "add", "1", "--report", "/dev/zero"],
        deadline,
    );
    let stderr = out.ended_with(1);
    assert!(
        stderr.starts_with(
            "error: /dev/zero: line 1: the report holds more than 1 MiB (1048576 bytes), the \
             most a report may hold; expected {"
        ),
        "{stderr}"
    );

    // A report whose evidence is a FIFO is refused at once, not left waiting for a writer.
    let dir = repo.root().parent().unwrap();
    let fifo = dir.join("evidence.fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let with_fifo = report(
        &repo,
        "fifo.json",
        r#"{"metrics": {"tok_s": 1}, "evidence": "evidence.fifo"}"#,
    );
    let out = watched_in(
        &repo,
        &["measurement", "add", "1", "--report", &with_fifo],
        deadline,
    );
    let fifo = std::fs::canonicalize(&fifo).unwrap();
    assert_eq!(
        out.ended_with(1).trim_end(),
        format!(
            "error: {with_fifo}: evidence: {}: it is a FIFO (named pipe), not a regular file; \
             fix the artifact or leave it out",
            fifo.display()
        )
    );

    // A duration past what a measurement can hold says the limit, compactly.
    for (seconds, shown) in [("1e20", "1e20"), ("1e300", "1e300"), ("-1", "-1")] {
        let path = report(
            &repo,
            "seconds.json",
            &format!(r#"{{"metrics": {{"tok_s": 1}}, "seconds": {seconds}}}"#),
        );
        let out = watched_in(
            &repo,
            &["measurement", "add", "1", "--report", &path],
            deadline,
        );
        assert_eq!(
            out.ended_with(1).trim_end(),
            format!(
                "error: seconds = {shown}: expected a non-negative number of seconds less than \
                 9223372036.85 (2^63 nanoseconds, about 292 years)"
            )
        );
    }
    let fine = report(
        &repo,
        "fine.json",
        r#"{"metrics": {"tok_s": 1}, "seconds": 9223372036}"#,
    );
    let out = watched_in(
        &repo,
        &["measurement", "add", "1", "--report", &fine],
        deadline,
    );
    out.ended_with(0);
}

/// How to run a command without write access to files whose mode forbids it: as is for a user,
/// and for root (which writes anything) without the capabilities that let it (`setpriv`).
/// `None` when root cannot drop them here.
fn without_override(repo: &CampaignRepo, args: &[&str]) -> Option<Command> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let root = status
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .and_then(|l| l.split_whitespace().nth(2))
        == Some("0");
    let command = repo.command(args);
    if !root {
        return Some(command);
    }
    let drop = "--bounding-set=-dac_override,-dac_read_search,-fowner";
    let usable = Command::new("setpriv")
        .args([drop, "--", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !usable {
        return None;
    }
    let mut wrapped = Command::new("setpriv");
    wrapped
        .arg(drop)
        .arg("--")
        .arg(command.get_program())
        .args(command.get_args());
    for (key, value) in command.get_envs() {
        match value {
            Some(value) => wrapped.env(key, value),
            None => wrapped.env_remove(key),
        };
    }
    Some(wrapped)
}

fn set_writable(path: &Path, writable: bool) {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path).unwrap().permissions().mode();
    let mode = if writable {
        mode | 0o200
    } else {
        mode & !0o222
    };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
#[allow(clippy::print_stderr)]
fn hostile_a_store_without_write_access_is_read_and_a_write_says_why_once() {
    let repo = hand_over_campaign();
    let tally_dir = repo.root().join(".tally");
    let db = tally_dir.join("tally.db");
    if without_override(&repo, &["status"]).is_none() {
        eprintln!("skipped: running as root without setpriv, nothing is read-only");
        return;
    }
    let deadline = Duration::from_secs(60);
    let run = |args: &[&str]| {
        watch(
            without_override(&repo, args).unwrap(),
            None,
            deadline,
            MAX_MIB,
        )
    };
    // A read-only directory (as on a read-only mount: SQLite cannot even make its index file
    // beside the database, which a clean exit removed), then a read-only file in a writable one.
    for dir_too in [true, false] {
        set_writable(&db, false);
        if dir_too {
            set_writable(&tally_dir, false);
        }
        let out = run(&["status", "--json"]);
        out.ended_with(0);
        let status: Value = serde_json::from_str(&out.stdout).unwrap();
        assert_eq!(verdicts(&status), ["keep"]);
        run(&["status"]).ended_with(0);
        run(&["brief"]).ended_with(0);
        run(&["candidate", "show", "0"]).ended_with(0);

        // A command that writes fails, and says why once.
        let out = run(&["candidate", "add", "HEAD", "--again"]);
        let stderr = out.ended_with(1);
        assert_eq!(
            stderr
                .matches("attempt to write a readonly database")
                .count(),
            1,
            "{stderr}"
        );
        assert!(!stderr.contains("Error code"), "{stderr}");
        assert!(!stderr.contains("store: store"), "{stderr}");
        set_writable(&tally_dir, true);
        set_writable(&db, true);
    }
    // A command that reads creates nothing where there is no store.
    let missing = repo.root().parent().unwrap().join("elsewhere/tally.db");
    let out = watched_in(
        &repo,
        &["status", "--database", missing.to_str().unwrap()],
        deadline,
    );
    assert_eq!(
        out.ended_with(1).trim_end(),
        format!(
            "error: campaign `hostile` is not registered: there is no store at {} yet; run \
             `tally init` first",
            missing.display()
        )
    );
    assert!(!missing.parent().unwrap().exists());
    // Writable again, the store takes writes (nothing was changed by the reads).
    let out = repo.tally(&["candidate", "add", "HEAD", "--again"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}
