//! Finding the live processes of a sample through Linux's `/proc`.
//!
//! Owns: listing the processes that are alive (not zombies) and either belong to a given process
//! group or carry a given `NAME=value` entry in their environment. The process-group sweep
//! ([`crate::group`]) kills what this finds; [`crate::worktree::prune_leftovers`] uses it to
//! find processes left behind by a `tally run` that was killed.
//!
//! Deliberately absent: signalling anything (callers decide), and other platforms. Processes of
//! other users cannot have their environment read and are matched by group only.

use std::path::Path;

/// `(state, ppid, pgrp)` of `/proc/<pid>/stat`.
fn stat_fields(stat: &str) -> Option<(char, i32, i32)> {
    let after = &stat[stat.rfind(')')? + 1..];
    let mut fields = after.split_ascii_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, ppid, pgrp))
}

fn read_stat(pid: i32) -> Option<(char, i32, i32)> {
    stat_fields(&fs_err::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// The process group of `pid`, if it exists.
pub(crate) fn group_of(pid: i32) -> Option<i32> {
    read_stat(pid).map(|(_, _, pgrp)| pgrp)
}

/// Whether `pid` is a zombie whose parent is this process.
pub(crate) fn is_zombie_child_of_mine(pid: i32) -> bool {
    read_stat(pid)
        .is_some_and(|(state, ppid, _)| is_dead(state) && ppid == std::process::id() as i32)
}

/// Whether a NUL-separated environment block holds exactly the entry `marker`.
fn environ_has(environ: &[u8], marker: &[u8]) -> bool {
    !marker.is_empty() && environ.split(|&b| b == 0).any(|entry| entry == marker)
}

/// Live (non-zombie) processes in group `pgid` or whose environment holds `marker`
/// (`NAME=value`; empty to match by group only), excluding this process. Sorted.
pub(crate) fn live_processes(pgid: i32, marker: &[u8]) -> Vec<i32> {
    live_processes_in(Path::new("/proc"), pgid, marker)
}

/// Live processes holding any of `markers` in their environment. Sorted.
pub(crate) fn processes_with_any_marker(markers: &[Vec<u8>]) -> Vec<i32> {
    if markers.is_empty() {
        return Vec::new();
    }
    let mut found = Vec::new();
    for (pid, state, _) in processes(Path::new("/proc")) {
        if is_dead(state) {
            continue;
        }
        let environ = fs_err::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        if markers.iter().any(|m| environ_has(&environ, m)) {
            found.push(pid);
        }
    }
    found.sort_unstable();
    found
}

fn live_processes_in(proc_root: &Path, pgid: i32, marker: &[u8]) -> Vec<i32> {
    let mut found = Vec::new();
    for (pid, state, group) in processes(proc_root) {
        if is_dead(state) {
            continue;
        }
        if group == pgid {
            found.push(pid);
            continue;
        }
        if marker.is_empty() {
            continue;
        }
        let environ = fs_err::read(proc_root.join(pid.to_string()).join("environ"));
        if environ.is_ok_and(|environ| environ_has(&environ, marker)) {
            found.push(pid);
        }
    }
    found.sort_unstable();
    found
}

fn is_dead(state: char) -> bool {
    matches!(state, 'Z' | 'X' | 'x')
}

/// Every process under `proc_root` but this one: (pid, state, process group). Processes that
/// vanish while being read are skipped.
fn processes(proc_root: &Path) -> Vec<(i32, char, i32)> {
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
        if pid == me {
            continue;
        }
        let Ok(stat) = fs_err::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        if let Some((state, _, group)) = stat_fields(&stat) {
            found.push((pid, state, group));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_command_names_parse() {
        assert_eq!(stat_fields("12 (sleep) S 1 12 12 0 -1"), Some(('S', 1, 12)));
        assert_eq!(stat_fields("13 (a) b (c)) Z 7 99 99 0"), Some(('Z', 7, 99)));
        assert_eq!(stat_fields("garbage"), None);
    }

    #[test]
    fn markers_match_whole_entries_only() {
        let env = b"A=1\0TALLY_UNITS_FILE=/x/units.json\0B=2\0";
        assert!(environ_has(env, b"TALLY_UNITS_FILE=/x/units.json"));
        assert!(!environ_has(env, b"TALLY_UNITS_FILE=/x/units"));
        assert!(!environ_has(env, b""));
    }

    #[test]
    fn a_fake_proc_tree_is_read() {
        let root = tempfile::tempdir().unwrap();
        let write = |pid: &str, stat: &str, environ: &[u8]| {
            let dir = root.path().join(pid);
            std::fs::create_dir(&dir).unwrap();
            std::fs::write(dir.join("stat"), stat).unwrap();
            std::fs::write(dir.join("environ"), environ).unwrap();
        };
        write("100", "100 (sh) S 1 100 100", b"");
        write("101", "101 (sleep) S 100 100 100", b"");
        write("102", "102 (zombie) Z 100 100 100", b"");
        write("200", "200 (daemon) S 1 200 200", b"M=1\0");
        write("300", "300 (other) S 1 300 300", b"M=2\0");
        std::fs::create_dir(root.path().join("self")).unwrap();
        assert_eq!(live_processes_in(root.path(), 100, b"M=1"), [100, 101, 200]);
        assert_eq!(live_processes_in(root.path(), 100, b""), [100, 101]);
    }
}
