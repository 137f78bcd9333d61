//! `Spawned` as the exec provider uses it: in the caller's group, input on stdin, output kept in
//! memory, its own deadline policy.

use std::time::{Duration, Instant};

use tally_process::{CancelToken, Command, Group, Sink, Spawned, Waited};

use crate::probe::{alive, kill, numbers_after, sh};

fn in_memory(argv: &[String], stdin: Option<Vec<u8>>) -> Command<'_> {
    Command {
        argv,
        dir: None,
        env: Vec::new(),
        stdin,
        stdout: Sink::memory(),
        stderr: Sink::memory(),
    }
}

#[test]
fn stdin_goes_in_and_both_streams_come_back() {
    let argv = sh("tr a-z A-Z; echo done >&2; exit 4");
    let mut child = Spawned::spawn(
        in_memory(&argv, Some(b"hello, tally\n".to_vec())),
        Group::Caller,
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    assert_eq!(child.wait(deadline, None), Waited::LeaderExited);
    assert_eq!(child.reap().unwrap().code(), Some(4));
    assert!(child.stdout.wait_until(deadline));
    assert!(child.stderr.wait_until(deadline));
    assert_eq!(child.stdout.kept(), b"HELLO, TALLY\n");
    assert_eq!(child.stderr.kept(), b"done\n");
}

#[test]
fn a_command_that_never_reads_its_input_does_not_block_us() {
    let argv = sh("exit 0");
    let mut child =
        Spawned::spawn(in_memory(&argv, Some(vec![b'x'; 1 << 22])), Group::Caller).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    assert_eq!(child.wait(deadline, None), Waited::LeaderExited);
    assert!(child.reap().unwrap().success());
}

#[test]
fn in_the_callers_group_a_kill_reaches_the_command_alone() {
    let argv = sh("sleep 300 &\necho \"child $!\"\nexec sleep 300");
    let started = Instant::now();
    let mut child = Spawned::spawn(in_memory(&argv, None), Group::Caller).unwrap();
    assert_eq!(
        child.wait(Instant::now() + Duration::from_millis(300), None),
        Waited::TimedOut
    );
    child.kill();
    let status = child.reap().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9)
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    // Its own child holds the pipes open: they do not end, and the drain gives up when told.
    assert!(
        !child
            .stdout
            .wait_until(Instant::now() + Duration::from_millis(200))
    );
    let grandchild = numbers_after(&child.stdout.kept(), "child ")[0];
    assert!(alive(grandchild), "only the command itself is killed");
    kill(grandchild);
    assert!(
        child
            .stdout
            .wait_until(Instant::now() + Duration::from_secs(10))
    );
}

#[test]
fn a_cancelled_token_ends_the_wait_and_a_later_token_does_not_leak_into_the_next() {
    let argv = sh("exec sleep 300");
    let mut child = Spawned::spawn(in_memory(&argv, None), Group::Own).unwrap();
    let token = CancelToken::new();
    let canceller = {
        let token = token.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            token.cancel();
        })
    };
    let far = Instant::now() + Duration::from_secs(300);
    assert_eq!(child.wait(far, Some(&token)), Waited::Cancelled);
    canceller.join().unwrap();
    // Without the token the same handle waits for its deadline again.
    assert_eq!(
        child.wait(Instant::now() + Duration::from_millis(50), None),
        Waited::TimedOut
    );
    child.kill();
    assert!(child.reap().is_ok());
    assert_eq!(child.wait(far, Some(&token)), Waited::LeaderExited);
}

#[test]
fn the_contracts_signal_names_are_the_systems() {
    for number in -2..=70 {
        let system = nix::sys::signal::Signal::try_from(number)
            .map_or("unknown signal", nix::sys::signal::Signal::as_str);
        assert_eq!(
            tally_contract::signal_name(number),
            system,
            "signal {number}"
        );
    }
    for (number, retried) in [
        (1, true),
        (2, true),
        (9, true),
        (15, true),
        (3, false),
        (11, false),
    ] {
        assert_eq!(
            tally_contract::Outcome::Signalled(number).killed_from_outside(),
            retried,
            "signal {number}"
        );
    }
}
