//! The globs of `[implementer] protect` and `ignore` (`docs/implementers.md#config`), matched
//! against repo-relative paths: `*` and `?` stay within one path segment, `**` spans any number
//! of segments, a pattern without `/` matches a name at any depth (`.aider*`), and a pattern that
//! matches a directory covers everything inside it.

/// Whether `path` matches `pattern`.
pub fn matches(pattern: &str, path: &str) -> bool {
    let pattern = pattern.trim_end_matches('/');
    if !pattern.contains('/') {
        return path
            .split('/')
            .any(|name| segment(pattern.as_bytes(), name.as_bytes()));
    }
    let pat: Vec<&str> = pattern.split('/').collect();
    let parts: Vec<&str> = path.split('/').collect();
    segments(&pat, &parts)
}

/// Whether `pat` matches `parts` or a leading part of them (a matched directory covers what is
/// inside it).
fn segments(pat: &[&str], parts: &[&str]) -> bool {
    match pat.split_first() {
        None => true,
        Some((&"**", rest)) => (0..=parts.len()).any(|skip| segments(rest, &parts[skip..])),
        Some((first, rest)) => parts.split_first().is_some_and(|(part, others)| {
            segment(first.as_bytes(), part.as_bytes()) && segments(rest, others)
        }),
    }
}

fn segment(pat: &[u8], name: &[u8]) -> bool {
    match pat.split_first() {
        None => name.is_empty(),
        Some((b'*', rest)) => (0..=name.len()).any(|skip| segment(rest, &name[skip..])),
        Some((b'?', rest)) => !name.is_empty() && segment(rest, &name[1..]),
        Some((c, rest)) => name.first() == Some(c) && segment(rest, &name[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn globs_match_segments_and_depths() {
        assert!(matches("bench/**", "bench/a/b.py"));
        assert!(matches("bench/**", "bench/x"));
        assert!(!matches("bench/**", "benchmarks/x"));
        assert!(matches(".aider*", ".aider.chat.history.md"));
        assert!(matches(".aider*", "sub/.aider.tags"));
        assert!(matches("evaluate.sh", "evaluate.sh"));
        assert!(!matches("evaluate.sh", "evaluate.shx"));
        assert!(matches("weights", "weights/model.bin"));
        assert!(matches("src/*.rs", "src/main.rs"));
        assert!(!matches("src/*.rs", "src/a/main.rs"));
        assert!(matches("**/cache", "a/b/cache"));
        assert!(matches("config/knob.txt", "config/knob.txt"));
    }
}
