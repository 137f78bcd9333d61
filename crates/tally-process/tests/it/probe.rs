//! Looking at processes from the outside, through `/proc`.

/// Whether `pid` is a live (non-zombie) process.
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat[stat.rfind(')').unwrap() + 2..].chars().next().unwrap();
            !matches!(state, 'Z' | 'X')
        }
        Err(_) => false,
    }
}

/// The numbers printed after `word ` on lines of `text`, e.g. `child 123`.
pub fn numbers_after(text: &[u8], word: &str) -> Vec<i32> {
    String::from_utf8_lossy(text)
        .lines()
        .filter_map(|l| l.strip_prefix(word)?.trim().parse().ok())
        .collect()
}

/// `sh -c <script>` as an argv.
pub fn sh(script: &str) -> Vec<String> {
    vec!["sh".into(), "-c".into(), script.into()]
}

/// SIGKILLs `pid` (cleaning up after a test that expects it to survive).
pub fn kill(pid: i32) {
    let _ = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status();
}
