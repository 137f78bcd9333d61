//! Measures the runner's own cost per attempt: worktree add + spawn of `true` + drain/parse +
//! group sweep + worktree remove, on a small repository.
//!
//! `cargo run --release -p tally-runner --example overhead [-- SAMPLES [FILES]]`
//! (defaults: 30 samples, a repository of 50 small files). Prints the median and the spread of
//! the whole attempt and of the process's own wall time.
#![allow(clippy::print_stdout)]

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tally_runner::{
    CancelToken, EvaluateCommand, Evidence, EvidenceAccountant, Git, SampleRequest, SampleRunner,
    Side, WorktreeRunner,
};

/// `true` writes no evidence file, so nothing is ever accounted.
struct NoEvidence;

impl EvidenceAccountant for NoEvidence {
    fn account(&self, _: &Path) -> Result<Evidence, String> {
        Err("the overhead example accounts no evidence".into())
    }
}

fn git(dir: &std::path::Path, args: &[&str]) {
    let status = Command::new("git")
        .current_dir(dir)
        .args(args)
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

/// CPU seconds used so far by this process and its waited-for children (`/proc/self/stat`
/// utime + stime + cutime + cstime, in USER_HZ = 100 ticks per second on Linux).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    // Fields 14..=17 of stat(5); `fields` starts at field 3.
    let ticks: u64 = fields[11..15]
        .iter()
        .map(|f| f.parse::<u64>().unwrap())
        .sum();
    ticks as f64 / 100.0
}

fn percentile(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let samples: usize = args.next().map_or(30, |a| a.parse().unwrap());
    let files: usize = args.next().map_or(50, |a| a.parse().unwrap());
    let repo = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    git(repo.path(), &["init", "-q", "-b", "main"]);
    for i in 0..files {
        let dir = repo.path().join(format!("src/m{}", i % 5));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("f{i}.py")), "x = 1\n".repeat(50)).unwrap();
    }
    git(repo.path(), &["add", "-A"]);
    git(
        repo.path(),
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "x",
        ],
    );
    let git_repo = Git::discover(repo.path()).unwrap();
    let head = git_repo.resolve_commit("HEAD").unwrap();
    let runner = WorktreeRunner::new(
        git_repo,
        &outside.path().join("worktrees"),
        Arc::new(NoEvidence),
    )
    .unwrap();
    let request = SampleRequest {
        command: EvaluateCommand {
            argv: vec!["true".into()],
            timeout: Duration::from_secs(60),
            links: Vec::new(),
        },
        revision: head,
        candidate: "c1".into(),
        side: Side::Candidate,
        sample: 0,
        required_metrics: Vec::new(),
        log_dir: outside.path().join("logs"),
    };
    let cancel = CancelToken::new();
    let mut totals = Vec::new();
    let mut walls = Vec::new();
    let mut cpu_before = 0.0;
    for i in 0..samples + 3 {
        if i == 3 {
            cpu_before = cpu_seconds();
        }
        let started = Instant::now();
        let attempt = runner.run_attempt(&request, 1, &cancel);
        let total = started.elapsed();
        assert!(attempt.is_success(), "{:?}", attempt.error());
        if i >= 3 {
            totals.push(total);
            walls.push(attempt.wall);
        }
    }
    let cpu_per_attempt = (cpu_seconds() - cpu_before) / samples as f64;
    totals.sort();
    walls.sort();
    // The parts: checkout creation and removal on their own.
    let mut adds = Vec::new();
    let mut removes = Vec::new();
    for _ in 0..samples {
        let started = Instant::now();
        let checkout = tally_runner::Checkout::create(
            runner.git(),
            runner.worktree_root(),
            "probe",
            &request.revision,
            &[],
        )
        .unwrap();
        let added = Instant::now();
        checkout.remove().unwrap();
        adds.push(added - started);
        removes.push(added.elapsed());
    }
    adds.sort();
    removes.sort();
    let processes = std::fs::read_dir("/proc")
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        })
        .count();
    println!(
        "repository: {files} files; {samples} attempts of `true` (3 warm-up attempts dropped); {processes} processes on the machine"
    );
    println!(
        "attempt total: median {:.1} ms, p10 {:.1} ms, p90 {:.1} ms",
        percentile(&totals, 0.5).as_secs_f64() * 1e3,
        percentile(&totals, 0.1).as_secs_f64() * 1e3,
        percentile(&totals, 0.9).as_secs_f64() * 1e3,
    );
    println!(
        "CPU time per attempt (tally + git + `true`): {:.1} ms",
        cpu_per_attempt * 1e3
    );
    println!(
        "of which checkout (git worktree add): median {:.1} ms; removal: median {:.1} ms",
        percentile(&adds, 0.5).as_secs_f64() * 1e3,
        percentile(&removes, 0.5).as_secs_f64() * 1e3,
    );
    println!(
        "process wall (spawn to exit of `true`): median {:.2} ms",
        percentile(&walls, 0.5).as_secs_f64() * 1e3
    );
}
