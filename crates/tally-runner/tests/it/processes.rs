//! Process groups: timeouts, leftovers, escapees, cancellation, outside signals and retries.

use std::time::{Duration, Instant};

use tally_runner::{Attempt, CancelToken, Outcome, SampleRunner};

use crate::fixture::{Fixture, alive, exists, live_group_members, numbers_after};

const GRANDCHILDREN: &str = r#"#!/bin/sh
sleep 300 &
echo "child $!"
sh -c 'sleep 300; echo never' &
echo "child $!"
echo "leader $$"
echo "METRIC partial=1"
wait
"#;

const LEAVES_PROCESSES_BEHIND: &str = r#"#!/bin/sh
sleep 300 &
echo "child $!"
setsid sleep 300 &
escapee=$!
# Wait until it has really left the group (its own session), or the group kill could win.
while [ "$(cut -d' ' -f6 /proc/$escapee/stat)" != "$escapee" ]; do sleep 0.01; done
echo "escapee $escapee"
echo "METRIC a=1"
"#;

fn timed_out_with_grandchildren() -> (Fixture, Attempt) {
    let fx = Fixture::new(&[("evaluate.sh", GRANDCHILDREN)]);
    let mut request = fx.request(&["./evaluate.sh"]);
    request.command.timeout = Duration::from_millis(800);
    let attempt = fx.runner().run_attempt(&request, 1, &CancelToken::new());
    (fx, attempt)
}

fn assert_group_gone(attempt: &Attempt) -> Vec<i32> {
    let stdout = &attempt.logs.as_ref().unwrap().stdout;
    let leader = numbers_after(stdout, "leader ")[0];
    let children = numbers_after(stdout, "child ");
    assert_eq!(children.len(), 2);
    for &pid in children.iter().chain([&leader]) {
        assert!(!alive(pid), "process {pid} of the sample survived");
    }
    assert_eq!(live_group_members(leader), Vec::<i32>::new());
    assert_eq!(attempt.stray_pids, Vec::<i32>::new());
    children.into_iter().chain([leader]).collect()
}

#[test]
fn a_timeout_kills_the_whole_group_and_no_grandchild_survives() {
    let (fx, attempt) = timed_out_with_grandchildren();
    assert_eq!(attempt.outcome, Outcome::TimedOut);
    assert_eq!(
        attempt.error().unwrap(),
        "the evaluate command timed out after 0.8 s (evaluate_timeout) and its process group was killed"
    );
    assert!(
        attempt.wall >= Duration::from_millis(800),
        "{:?}",
        attempt.wall
    );
    // Far below the sleeps' 300 s, with room for a loaded machine.
    assert!(attempt.wall < Duration::from_secs(10), "{:?}", attempt.wall);
    assert_eq!(
        attempt.metrics["partial"], 1.0,
        "metrics are kept on failure"
    );
    assert_group_gone(&attempt);
    fx.assert_clean();
}

#[test]
fn as_child_subreaper_tally_reaps_every_process_of_the_group_itself() {
    tally_runner::become_child_subreaper().unwrap();
    let (fx, attempt) = timed_out_with_grandchildren();
    assert_eq!(attempt.outcome, Outcome::TimedOut);
    for pid in assert_group_gone(&attempt) {
        assert!(!exists(pid), "process {pid} was left a zombie");
    }
    fx.assert_clean();

    let fx = Fixture::new(&[("evaluate.sh", LEAVES_PROCESSES_BEHIND)]);
    let attempt = fx
        .runner()
        .run_attempt(&fx.request(&["./evaluate.sh"]), 1, &CancelToken::new());
    let stdout = &attempt.logs.as_ref().unwrap().stdout;
    for pid in [
        numbers_after(stdout, "child ")[0],
        numbers_after(stdout, "escapee ")[0],
    ] {
        assert!(!exists(pid), "process {pid} was left a zombie");
    }
}

#[test]
fn processes_left_running_after_a_clean_exit_are_killed_escapees_included() {
    let script = LEAVES_PROCESSES_BEHIND;
    let fx = Fixture::new(&[("evaluate.sh", script)]);
    let attempt = fx
        .runner()
        .run_attempt(&fx.request(&["./evaluate.sh"]), 1, &CancelToken::new());
    assert_eq!(attempt.outcome, Outcome::Exited(0));
    assert!(attempt.is_success());
    let stdout = &attempt.logs.as_ref().unwrap().stdout;
    let pids = [
        numbers_after(stdout, "child ")[0],
        numbers_after(stdout, "escapee ")[0],
    ];
    for pid in pids {
        assert!(!alive(pid), "process {pid} survived the sample");
    }
    fx.assert_clean();
}

#[test]
fn cancellation_kills_the_group_and_reports_interrupted() {
    let fx = Fixture::new(&[(
        "evaluate.sh",
        "#!/bin/sh\nsleep 300 &\necho \"child $!\"\nwait\n",
    )]);
    let token = CancelToken::new();
    let canceller = {
        let token = token.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            token.cancel();
        })
    };
    let started = Instant::now();
    let attempt = fx
        .runner()
        .run_attempt(&fx.request(&["./evaluate.sh"]), 1, &token);
    canceller.join().unwrap();
    // Far below the script's 300 s sleep, with room for a loaded machine.
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(attempt.outcome, Outcome::Cancelled);
    assert_eq!(attempt.error().unwrap(), "interrupted");
    let child = numbers_after(&attempt.logs.as_ref().unwrap().stdout, "child ")[0];
    assert!(!alive(child));
    fx.assert_clean();

    // A cancelled token starts nothing, and a cancelled sample is not retried.
    let mut seen = 0;
    let attempts = fx
        .runner()
        .run_sample(&fx.request(&["./evaluate.sh"]), &token, &mut |_| seen += 1);
    assert_eq!((attempts.len(), seen), (1, 1));
    assert_eq!(attempts[0].outcome, Outcome::Cancelled);
    assert_eq!(attempts[0].logs, None);
    fx.assert_clean();
}

#[test]
fn a_sample_killed_from_outside_is_retried_once_and_both_attempts_are_returned() {
    let fx0 = Fixture::new(&[]);
    let marker = fx0.scratch("killed-once");
    let script = format!(
        "#!/bin/sh\nif [ ! -e '{m}' ]; then : > '{m}'; echo 'METRIC a=1'; kill -TERM $$; fi\necho 'METRIC a=2'\n",
        m = marker.display()
    );
    let mut fx = fx0;
    fx.commit(&[("evaluate.sh", &script)]);
    let mut seen = Vec::new();
    let attempts = fx.runner().run_sample(
        &fx.request(&["./evaluate.sh"]),
        &CancelToken::new(),
        &mut |a| seen.push((a.attempt, a.retried)),
    );
    assert_eq!(seen, [(1, true), (2, false)]);
    assert_eq!(attempts.len(), 2);
    assert_eq!(attempts[0].outcome, Outcome::Signalled(15));
    assert_eq!(
        attempts[0].error().unwrap(),
        "the evaluate command was killed by signal 15 (SIGTERM), not sent by tally"
    );
    assert_eq!(attempts[0].metrics["a"], 1.0);
    assert!(attempts[1].is_success());
    assert_eq!(attempts[1].metrics["a"], 2.0);
    let logs: Vec<_> = attempts
        .iter()
        .map(|a| a.logs.clone().unwrap().stdout)
        .collect();
    assert_eq!(logs[0], fx.log_dir().join("candidate-2-a1.stdout.log"));
    assert_eq!(logs[1], fx.log_dir().join("candidate-2-a2.stdout.log"));
    fx.assert_clean();
}

#[test]
fn a_crash_by_its_own_signal_is_not_retried() {
    let fx = Fixture::new(&[("evaluate.sh", "#!/bin/sh\nkill -SEGV $$\n")]);
    let attempts = fx.runner().run_sample(
        &fx.request(&["./evaluate.sh"]),
        &CancelToken::new(),
        &mut |_| {},
    );
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0].outcome, Outcome::Signalled(11));
    assert_eq!(
        attempts[0].error().unwrap(),
        "the evaluate command was killed by signal 11 (SIGSEGV), not sent by tally"
    );
    assert!(!attempts[0].retried);
}

#[test]
fn stdout_and_stderr_are_drained_concurrently() {
    // 1 MiB on stderr before anything on stdout: a runner reading one pipe at a time deadlocks.
    let script = "#!/bin/sh\nhead -c 1048576 /dev/zero | tr '\\0' e >&2\nhead -c 1048576 /dev/zero | tr '\\0' o\necho\necho 'METRIC ok=1'\n";
    let fx = Fixture::new(&[("evaluate.sh", script)]);
    let mut request = fx.request(&["./evaluate.sh"]);
    request.command.timeout = Duration::from_secs(20);
    let attempt = fx.runner().run_attempt(&request, 1, &CancelToken::new());
    assert_eq!(attempt.outcome, Outcome::Exited(0));
    assert_eq!(attempt.metrics["ok"], 1.0);
    let logs = attempt.logs.unwrap();
    assert_eq!(std::fs::metadata(&logs.stderr).unwrap().len(), 1_048_576);
    assert_eq!(
        std::fs::metadata(&logs.stdout).unwrap().len(),
        1_048_576 + 1 + 12
    );
}
