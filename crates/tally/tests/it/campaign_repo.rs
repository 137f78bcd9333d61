//! A throwaway git repository holding a campaign, and the real `tally` binary run in it.
//!
//! Owns: creating the repository (git CLI, a local identity, fixed commit dates so commit ids do
//! not depend on the clock), committing revisions of a scripted benchmark, running `tally ...
//! -C <repo>` with an isolated worktree cache (`XDG_CACHE_HOME`) and a signal directory
//! (`E2E_DIR`) the benchmark uses to talk to the test, reading `tally status --json`, and looking
//! through `/proc` for processes a test started.
//!
//! The benchmark ([`BENCH`]) prints what the revision's `bench.conf` says (`key=value` lines):
//! `tok_s` with relative `noise` drawn from `seed`, `TALLY_SIDE`, `TALLY_SAMPLE` and `tok_s`
//! itself (so every verdict is deterministic), `p50_ms`/`p95_ms` exactly as written, after
//! `sleep` seconds, handing over the evidence artifact `evidence=<path in the revision>` when
//! set, or the import of the profiler trace `kineto=<path>` (`$TALLY_BIN trace import kineto`).
//! `mode=hang|crash|traceback|bad_units` misbehave on purpose; `stall_at=<side>-<sample>` makes that
//! sample wait for `$E2E_DIR/release` (once, after creating `$E2E_DIR/stalled`);
//! `term_at=<side>-<sample>` makes it die of SIGTERM (once, creating `$E2E_DIR/termed`);
//! `units=1` writes `tok_s` split evenly over two units, `a` and `b`, to `TALLY_UNITS_FILE`;
//! `slow=<side>-<sample>,...` makes those samples 25% slower (`tok_s` / 1.25), as a throttled
//! GPU would; `count=1` appends `<candidate> <side> <sample>` to `$E2E_DIR/runs` as the sample
//! starts, so a test can count how often each sample really ran.
//!
//! Deliberately absent: assertions about tally's behaviour (the test modules make them).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

/// The scripted benchmark every test campaign runs (`evaluate = ["./evaluate.sh"]`).
pub const BENCH: &str = r#"#!/bin/sh
# The scripted benchmark of tally's end-to-end tests: bench.conf says what to print.
set -eu
conf() { sed -n "s/^$1=//p" bench.conf | tail -n 1; }
[ -z "$(conf count)" ] || echo "$TALLY_CANDIDATE $TALLY_SIDE $TALLY_SAMPLE" >> "$E2E_DIR/runs"
case "$(conf mode)" in
hang)
    # Grandchildren that a careless timeout would leave running, one in a session of its own.
    py='import sys, time; open(sys.argv[1], "w").close(); time.sleep(300)'
    python3 -c "$py" "$E2E_DIR/child-1" &
    sh -c "python3 -c '$py' $E2E_DIR/child-2; :" &
    setsid python3 -c "$py" "$E2E_DIR/child-3" &
    while [ ! -e "$E2E_DIR/child-1" ] || [ ! -e "$E2E_DIR/child-2" ] || [ ! -e "$E2E_DIR/child-3" ]; do
        sleep 0.05
    done
    exec sleep 300 ;;
crash)
    echo "bench: the model failed to load" >&2
    exit 3 ;;
traceback)
    # A long stderr naming files of the checkout, ending with a line that says nothing.
    i=0
    while [ $i -lt 40 ]; do
        echo "  File \"$PWD/model/layer_$i.py\", line $i, in forward" >&2
        i=$((i + 1))
    done
    echo "RuntimeError: CUDA out of memory in $PWD/model/loader.py" >&2
    echo "----" >&2
    exit 1 ;;
bad_units)
    printf '{"tok_s": {"a": 1, "b": 2}}' > "$TALLY_UNITS_FILE"
    echo "METRIC tok_s=6"
    exit 0 ;;
esac
pause=$(conf sleep)
[ -z "$pause" ] || sleep "$pause"
evidence=$(conf evidence)
[ -z "$evidence" ] || cp "$evidence" "$TALLY_EVIDENCE_FILE"
kineto=$(conf kineto)
[ -z "$kineto" ] || "$TALLY_BIN" trace import kineto -o "$TALLY_EVIDENCE_FILE" "$kineto" >&2
if [ "$TALLY_SIDE-$TALLY_SAMPLE" = "$(conf term_at)" ] && [ ! -e "$E2E_DIR/termed" ]; then
    # As if an operator or a scheduler killed the benchmark (this shell is the group leader).
    : > "$E2E_DIR/termed"
    kill -TERM $$
fi
if [ "$TALLY_SIDE-$TALLY_SAMPLE" = "$(conf stall_at)" ] && [ ! -e "$E2E_DIR/stalled" ]; then
    : > "$E2E_DIR/stalled"
    # (Also ends once the test's directory is gone, so a failed test leaves nothing looping.)
    while [ ! -e "$E2E_DIR/release" ] && [ -d "$E2E_DIR" ]; do sleep 0.05; done
fi
exec awk -v side="$TALLY_SIDE" -v sample="$TALLY_SAMPLE" -v seed="$(conf seed)" \
    -v tok="$(conf tok_s)" -v noise="$(conf noise)" -v p50="$(conf p50_ms)" -v p95="$(conf p95_ms)" \
    -v slow="$(conf slow)" -v units="$(conf units)" '
BEGIN {
    x = (seed + 1) * 7919 + sample * 104729 + (side == "bar") * 1299709 + int(tok * 1000) % 1000003
    x = x % 2147483647
    if (x == 0) x = 1
    for (i = 0; i < 3; i++) x = (x * 16807) % 2147483647
    u = x / 2147483647
    t = tok * (1 + (2 * u - 1) * noise)
    if (index("," slow ",", "," side "-" sample ",") > 0) t = t / 1.25
    printf "METRIC tok_s=%.6f\n", t
    if (units != "") printf "{\"tok_s\": {\"a\": %.6f, \"b\": %.6f}}", t / 2, t / 2 > ENVIRON["TALLY_UNITS_FILE"]
    if (p50 != "") printf "METRIC p50_ms=%s\n", p50
    if (p95 != "") printf "METRIC p95_ms=%s\n", p95
}'
"#;

/// A campaign's repository in a temporary directory (removed on drop).
pub struct CampaignRepo {
    temp: TempDir,
    root: PathBuf,
    database: Option<String>,
}

impl CampaignRepo {
    /// An empty repository on branch `main` with a local identity, plus the benchmark script.
    pub fn new() -> Self {
        let temp = tempfile::Builder::new()
            .prefix("tally-e2e-")
            .tempdir()
            .expect("a temporary directory");
        let root = temp.path().join("repo");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(temp.path().join("signals")).unwrap();
        let repo = Self {
            temp,
            root,
            database: None,
        };
        repo.git(&["init", "-q", "-b", "main"]);
        repo.git(&["config", "user.name", "E2E Tester"]);
        repo.git(&["config", "user.email", "e2e@tally.invalid"]);
        repo.git(&["config", "commit.gpgsign", "false"]);
        repo.write_executable("evaluate.sh", BENCH);
        repo
    }

    /// The same repository with its store elsewhere: every command gets
    /// `TALLY_DATABASE_URL=url` (a PostgreSQL database, `crate::campaign_postgres`).
    pub fn with_database(mut self, url: &str) -> Self {
        self.database = Some(url.to_owned());
        self
    }

    /// The repository root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory the benchmark and the test share (`$E2E_DIR`).
    pub fn signals(&self) -> PathBuf {
        self.temp.path().join("signals")
    }

    /// A string unique to this repository: every path of it (checkouts, signal files, the
    /// benchmark's grandchildren's arguments) contains it.
    pub fn marker(&self) -> String {
        self.temp.path().display().to_string()
    }

    /// Where tally makes the checkouts of this repository's campaigns.
    pub fn worktree_cache(&self) -> PathBuf {
        self.temp.path().join("cache/tally/worktrees")
    }

    /// Writes a file (creating its directory).
    pub fn write(&self, path: &str, text: &str) {
        let path = self.root.join(path);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(path, text).unwrap();
    }

    /// Writes an executable file.
    pub fn write_executable(&self, path: &str, text: &str) {
        use std::os::unix::fs::PermissionsExt;
        self.write(path, text);
        std::fs::set_permissions(self.root.join(path), std::fs::Permissions::from_mode(0o755))
            .unwrap();
    }

    /// Runs git in the repository and returns its trimmed standard output.
    pub fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .arg("-C")
            .arg(&self.root)
            .args(args)
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
            .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
            .output()
            .expect("git runs");
        assert!(
            out.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    /// Commits every change and returns the full commit id.
    pub fn commit_all(&self, message: &str) -> String {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "-m", message]);
        self.git(&["rev-parse", "HEAD"])
    }

    /// Commits a revision of the benchmark whose `bench.conf` is `conf`.
    pub fn commit_bench(&self, message: &str, conf: &str) -> String {
        self.write("bench.conf", conf);
        self.commit_all(message)
    }

    /// Writes `tally.toml` and the baseline's `bench.conf`, commits them, and runs `tally init`
    /// (which must succeed). Returns the baseline's commit id.
    pub fn start_campaign(&self, config: &str, baseline_conf: &str) -> String {
        self.write("tally.toml", config);
        let baseline = self.commit_bench("baseline", baseline_conf);
        let out = self.tally(&["init"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "tally init: {}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        baseline
    }

    /// Commits one revision per `bench.conf` and queues them all (`tally candidate add`).
    pub fn propose(&self, confs: &[&str]) -> Vec<String> {
        let revisions: Vec<String> = confs
            .iter()
            .enumerate()
            .map(|(i, conf)| self.commit_bench(&format!("candidate {}", i + 1), conf))
            .collect();
        let mut args = vec!["candidate", "add"];
        args.extend(revisions.iter().map(String::as_str));
        let out = self.tally(&args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "tally candidate add: {}",
            text(&out.stderr)
        );
        revisions
    }

    /// `tally ARGS... -C <repo>`, not started, with this repository's environment.
    pub fn command(&self, args: &[&str]) -> Command {
        // `-C` belongs to each campaign subcommand, so it goes after the arguments.
        let mut command = self.bare_command(args);
        command.arg("-C").arg(&self.root);
        command
    }

    /// `tally ARGS...` (no `-C`), not started, with this repository's environment.
    pub fn bare_command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_tally"));
        command
            .args(args)
            .env("XDG_CACHE_HOME", self.temp.path().join("cache"))
            .env("E2E_DIR", self.signals())
            .env("TALLY_BIN", env!("CARGO_BIN_EXE_tally"))
            .env_remove("TALLY_DATABASE_URL")
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE");
        if let Some(url) = &self.database {
            command.env("TALLY_DATABASE_URL", url);
        }
        command
    }

    /// Runs `tally ARGS... -C <repo>` to its end.
    pub fn tally(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("the tally binary runs")
    }

    /// Runs `tally run --until-idle` and returns its output.
    pub fn run_until_idle(&self) -> Output {
        self.tally(&["run", "--until-idle"])
    }

    /// `tally status --json`, parsed.
    pub fn status_json(&self) -> Value {
        let out = self.tally(&["status", "--json"]);
        assert_eq!(out.status.code(), Some(0), "status: {}", text(&out.stderr));
        serde_json::from_slice(&out.stdout).expect("status --json prints one JSON object")
    }

    /// Waits until the signal file `name` exists (at most a minute).
    pub fn wait_for_signal(&self, name: &str) {
        let path = self.signals().join(name);
        let deadline = Instant::now() + Duration::from_secs(60);
        while !path.exists() {
            assert!(
                Instant::now() < deadline,
                "{} did not appear within a minute",
                path.display()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Creates the signal file `name`.
    pub fn signal(&self, name: &str) {
        std::fs::write(self.signals().join(name), "").unwrap();
    }

    /// The checkouts left in the worktree cache (directories named `sample-*` at any depth).
    pub fn leftover_checkouts(&self) -> Vec<PathBuf> {
        let mut found = Vec::new();
        let mut stack = vec![self.worktree_cache()];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() {
                    if entry.file_name().to_string_lossy().starts_with("sample-") {
                        found.push(path);
                    } else {
                        stack.push(path);
                    }
                }
            }
        }
        found
    }
}

/// Bytes as (lossy) text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Live (not zombie) processes other than this one whose command line or environment contains
/// `needle`, as `(pid, command line)`.
pub fn processes_mentioning(needle: &str) -> Vec<(u32, String)> {
    let me = std::process::id();
    let needle = needle.as_bytes();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if pid == me {
            continue;
        }
        let dir = entry.path();
        let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
        let state = stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next())
            .unwrap_or("Z");
        if state == "Z" || state == "X" {
            continue;
        }
        let cmdline = std::fs::read(dir.join("cmdline")).unwrap_or_default();
        let environ = std::fs::read(dir.join("environ")).unwrap_or_default();
        let contains = |hay: &[u8]| hay.windows(needle.len()).any(|w| w == needle);
        if contains(&cmdline) || contains(&environ) {
            found.push((pid, text(&cmdline).replace('\0', " ")));
        }
    }
    found
}

/// The candidate `id` of a `tally status --json` object.
pub fn candidate(status: &Value, id: u64) -> &Value {
    status["candidates"]
        .as_array()
        .expect("candidates")
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("candidate#{id} in {status:#}"))
}

/// Every candidate's verdict, oldest first.
pub fn verdicts(status: &Value) -> Vec<String> {
    status["candidates"]
        .as_array()
        .expect("candidates")
        .iter()
        .map(|c| c["verdict"].as_str().unwrap().to_string())
        .collect()
}

/// A section of `tally status --json` by provider name.
pub fn section<'a>(status: &'a Value, provider: &str) -> Option<&'a Value> {
    status["sections"]
        .as_array()
        .expect("sections")
        .iter()
        .find(|s| s["provider"] == provider)
}
