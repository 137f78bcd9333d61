//! Finding the live processes of a sample through Linux's `/proc`.
//!
//! Owns: listing the processes that are alive (not zombies) and either belong to a given process
//! group or carry one of given `NAME=value` entries in their environment. The process-group sweep
//! ([`crate::group`]) kills what this finds, and so does [`crate::kill_marked`], which the runner
//! uses to find processes left behind by a `tally run` that was killed. Environments are read only for
//! processes started at or after a given time (a sample's processes cannot be older than the
//! sample), which keeps a scan to one small `stat` read per process on a busy machine.
//!
//! Deliberately absent: signalling anything (callers decide), and other platforms. Processes of
//! other users cannot have their environment read and are matched by group only.

use std::path::Path;

/// Clock ticks per second of `/proc` times (`USER_HZ`, fixed at 100 in Linux's ABI).
const TICKS_PER_SECOND: u64 = 100;

/// The fields of `/proc/<pid>/stat` the sweep needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stat {
    state: char,
    ppid: i32,
    pgrp: i32,
    /// Start time, in ticks since boot.
    start_ticks: u64,
}

fn parse_stat(stat: &str) -> Option<Stat> {
    // `pid (comm) state ppid pgrp ...`; comm may hold spaces and parentheses, so parse after the
    // last `)`. Field 22 of stat(5) is the start time; `fields` starts at field 3.
    let fields: Vec<&str> = stat[stat.rfind(')')? + 1..]
        .split_ascii_whitespace()
        .collect();
    Some(Stat {
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
        start_ticks: fields.get(19)?.parse().ok()?,
    })
}

fn read_stat(proc_root: &Path, pid: i32) -> Option<Stat> {
    parse_stat(&fs_err::read_to_string(proc_root.join(pid.to_string()).join("stat")).ok()?)
}

/// Ticks since boot now (`/proc/uptime`), minus one second of slack for rounding; 0 when
/// unknown (then every environment is read).
pub(crate) fn ticks_since_boot_with_slack() -> u64 {
    let uptime = fs_err::read_to_string("/proc/uptime").unwrap_or_default();
    let seconds: f64 = uptime
        .split_whitespace()
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.0);
    ((seconds * TICKS_PER_SECOND as f64) as u64).saturating_sub(TICKS_PER_SECOND)
}

/// The process group of `pid`, if it exists.
pub(crate) fn group_of(pid: i32) -> Option<i32> {
    read_stat(Path::new("/proc"), pid).map(|s| s.pgrp)
}

/// Whether `pid` is a zombie whose parent is this process.
pub(crate) fn is_zombie_child_of_mine(pid: i32) -> bool {
    read_stat(Path::new("/proc"), pid)
        .is_some_and(|s| is_dead(s.state) && s.ppid == std::process::id() as i32)
}

/// Whether a NUL-separated environment block holds exactly one of the `markers`.
fn environ_has_any(environ: &[u8], markers: &[Vec<u8>]) -> bool {
    environ
        .split(|&b| b == 0)
        .any(|entry| !entry.is_empty() && markers.iter().any(|m| m.as_slice() == entry))
}

/// What to look for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Search<'a> {
    /// Match every live member of this process group.
    pub pgid: Option<i32>,
    /// Match live processes whose environment holds one of these `NAME=value` entries...
    pub markers: &'a [Vec<u8>],
    /// ...among those started at or after this many ticks since boot.
    pub started_since_ticks: u64,
}

/// Live (non-zombie) processes matching `search`, excluding this process. Sorted.
pub(crate) fn live_processes(search: Search<'_>) -> Vec<i32> {
    live_processes_in(Path::new("/proc"), search)
}

fn live_processes_in(proc_root: &Path, search: Search<'_>) -> Vec<i32> {
    let me = std::process::id() as i32;
    let Ok(entries) = fs_err::read_dir(proc_root) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let Some(stat) = read_stat(proc_root, pid) else {
            continue;
        };
        if pid == me || is_dead(stat.state) {
            continue;
        }
        if search.pgid == Some(stat.pgrp) {
            found.push(pid);
        } else if !search.markers.is_empty() && stat.start_ticks >= search.started_since_ticks {
            let environ = fs_err::read(entry.path().join("environ")).unwrap_or_default();
            if environ_has_any(&environ, search.markers) {
                found.push(pid);
            }
        }
    }
    found.sort_unstable();
    found
}

fn is_dead(state: char) -> bool {
    matches!(state, 'Z' | 'X' | 'x')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_command_names_parse() {
        let tail = "0 -1 4194304 96 0 0 0 0 0 0 0 20 0 1 0 123976 29900";
        let stat = parse_stat(&format!("13 (a) b (c)) Z 7 99 99 {tail}")).unwrap();
        assert_eq!(
            stat,
            Stat {
                state: 'Z',
                ppid: 7,
                pgrp: 99,
                start_ticks: 123_976
            }
        );
        assert_eq!(parse_stat("12 (sleep) S 1 12"), None);
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn markers_match_whole_entries_only() {
        let env = b"A=1\0TALLY_UNITS_FILE=/x/units.json\0B=2\0";
        let marker = |m: &[u8]| vec![m.to_vec()];
        assert!(environ_has_any(
            env,
            &marker(b"TALLY_UNITS_FILE=/x/units.json")
        ));
        assert!(!environ_has_any(env, &marker(b"TALLY_UNITS_FILE=/x/units")));
        assert!(!environ_has_any(env, &marker(b"")));
        assert!(!environ_has_any(env, &[]));
    }

    #[test]
    fn a_fake_proc_tree_is_read() {
        let root = tempfile::tempdir().unwrap();
        let write = |pid: &str, state: &str, pgrp: i32, start: u64, environ: &[u8]| {
            let dir = root.path().join(pid);
            std::fs::create_dir(&dir).unwrap();
            let stat =
                format!("{pid} (x y) {state} 1 {pgrp} 0 0 0 0 0 0 0 0 0 0 0 0 20 0 1 0 {start} 1");
            std::fs::write(dir.join("stat"), stat).unwrap();
            std::fs::write(dir.join("environ"), environ).unwrap();
        };
        write("100", "S", 100, 50, b"");
        write("101", "S", 100, 10, b"");
        write("102", "Z", 100, 50, b"");
        write("200", "S", 200, 50, b"M=1\0");
        write("201", "S", 201, 10, b"M=1\0");
        write("300", "S", 300, 50, b"M=2\0");
        std::fs::create_dir(root.path().join("self")).unwrap();
        let markers = [b"M=1".to_vec()];
        let search = |pgid, markers, since| Search {
            pgid,
            markers,
            started_since_ticks: since,
        };
        assert_eq!(
            live_processes_in(root.path(), search(Some(100), &markers, 20)),
            [100, 101, 200]
        );
        assert_eq!(
            live_processes_in(root.path(), search(Some(100), &markers, 0)),
            [100, 101, 200, 201]
        );
        assert_eq!(
            live_processes_in(root.path(), search(Some(100), &[], 0)),
            [100, 101]
        );
        assert_eq!(
            live_processes_in(root.path(), search(None, &markers, 0)),
            [200, 201]
        );
    }
}
