//! Config problems: one line each, naming the dotted key, the bad value and the fix
//! (`metrics[1].direction = "faster": expected "higher" or "lower"`). Whoever validates a piece of
//! `tally.toml` — the config reader or a provider checking its parameters — pushes problems here, so
//! every problem of a file is reported at once.

use std::fmt;

/// One problem in `tally.toml`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigProblem {
    /// The dotted key (`plugins.fact_source[0].usd_per_gpu_hour`).
    pub key: String,
    /// The offending value as written (TOML-ish), when there is one.
    pub value: Option<String>,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl ConfigProblem {
    /// A problem with the value at `key`.
    pub fn new(key: impl Into<String>, value: Option<String>, message: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            value,
            message: message.into(),
        }
    }

    /// A problem about a key without a value to show (a missing key).
    pub fn missing(key: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(key, None, message)
    }

    /// An unknown key, with a did-you-mean from `known` when one is close.
    pub fn unknown_key(prefix: &str, key: &str, known: &[&str]) -> Self {
        let full = join_key(prefix, key);
        let message = match did_you_mean(key, known) {
            Some(suggestion) => format!("unknown key; did you mean `{suggestion}`?"),
            None if known.is_empty() => "unknown key; this table takes no keys".to_string(),
            None => format!("unknown key; expected one of: {}", known.join(", ")),
        };
        Self::missing(full, message)
    }
}

impl fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.value {
            Some(value) => write!(f, "{} = {}: {}", self.key, value, self.message),
            None => write!(f, "{}: {}", self.key, self.message),
        }
    }
}

/// `prefix.key`, or `key` when the prefix is empty.
pub fn join_key(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

/// The closest of `known` to `word`, when it is close enough to be a likely typo.
pub fn did_you_mean<'a>(word: &str, known: &[&'a str]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| (strsim::jaro_winkler(word, k), *k))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k)
}

/// Renders a JSON value the way the user would have written it in TOML.
pub fn show_value(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problems_read_as_one_line_each() {
        let p = ConfigProblem::new(
            "metrics[1].direction",
            Some("\"faster\"".into()),
            "expected \"higher\" or \"lower\"",
        );
        assert_eq!(
            p.to_string(),
            "metrics[1].direction = \"faster\": expected \"higher\" or \"lower\""
        );
        let p = ConfigProblem::unknown_key("", "evalute", &["evaluate", "name"]);
        assert_eq!(
            p.to_string(),
            "evalute: unknown key; did you mean `evaluate`?"
        );
        assert_eq!(did_you_mean("zzz", &["evaluate"]), None);
    }
}
