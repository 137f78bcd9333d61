//! `[executor]` (`docs/team.md#executor`): `kind` (`local` or `slurm`) and, for Slurm, the job
//! options, each checked for its shape (Slurm itself judges partitions and resources when a job is
//! submitted).

use serde_json::{Map, Value};
use tally_plugin::ConfigProblem;
use tally_plugin::problem::join_key;

use super::values::bad;
use crate::executor::{ExecutorSettings, SlurmSettings};

const PREFIX: &str = "executor";
const KINDS: &[&str] = &["local", "slurm"];
const SLURM_KEYS: &[&str] = &[
    "kind",
    "partition",
    "gres",
    "time_limit",
    "cpus",
    "mem",
    "extra_args",
    "workdir",
];

fn key(k: &str) -> String {
    join_key(PREFIX, k)
}

/// `[executor]`; absent: [`ExecutorSettings::Local`].
pub(super) fn read_executor(
    root: &Map<String, Value>,
    p: &mut Vec<ConfigProblem>,
) -> ExecutorSettings {
    let Some(value) = root.get(PREFIX) else {
        return ExecutorSettings::Local;
    };
    let Some(table) = value.as_object() else {
        p.push(bad(
            PREFIX,
            value,
            "expected a table: [executor] with kind = \"local\" or \"slurm\"",
        ));
        return ExecutorSettings::Local;
    };
    let kind = match table.get("kind") {
        None => "local",
        Some(v) => match v.as_str() {
            Some(k) if KINDS.contains(&k) => k,
            _ => {
                p.push(bad(
                    &key("kind"),
                    v,
                    "expected \"local\" (this machine) or \"slurm\" (one batch job per sample)",
                ));
                return ExecutorSettings::Local;
            }
        },
    };
    let known: &[&str] = if kind == "slurm" {
        SLURM_KEYS
    } else {
        &["kind"]
    };
    for k in table.keys() {
        if !known.contains(&k.as_str()) {
            let mut problem = ConfigProblem::unknown_key(PREFIX, k, known);
            if kind == "local" && SLURM_KEYS.contains(&k.as_str()) {
                problem.message = "only kind = \"slurm\" takes this key; set kind = \"slurm\" or \
                                   remove it"
                    .to_owned();
            }
            p.push(problem);
        }
    }
    if kind == "local" {
        return ExecutorSettings::Local;
    }
    ExecutorSettings::Slurm(SlurmSettings {
        partition: word(table, "partition", "a partition name (sinfo lists them)", p),
        gres: word(
            table,
            "gres",
            "a generic resource request such as \"gpu:1\"",
            p,
        ),
        time_limit: time_limit(table, p),
        cpus: cpus(table, p),
        mem: mem(table, p),
        extra_args: extra_args(table, p),
        workdir: workdir(table, p),
    })
}

/// A non-empty string without whitespace.
fn word(
    table: &Map<String, Value>,
    k: &str,
    what: &str,
    p: &mut Vec<ConfigProblem>,
) -> Option<String> {
    let v = table.get(k)?;
    match v.as_str() {
        Some(s) if !s.is_empty() && !s.chars().any(char::is_whitespace) => Some(s.to_owned()),
        _ => {
            p.push(bad(&key(k), v, &format!("expected {what}, without spaces")));
            None
        }
    }
}

/// Whether `text` is one of Slurm's `--time` forms: `M`, `M:S`, `H:M:S`, `D-H`, `D-H:M`,
/// `D-H:M:S`, all numbers.
pub fn is_slurm_time(text: &str) -> bool {
    let numbers = |part: &str, most: usize| {
        let pieces: Vec<&str> = part.split(':').collect();
        pieces.len() <= most
            && pieces
                .iter()
                .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    match text.split_once('-') {
        Some((days, rest)) => numbers(days, 1) && numbers(rest, 3),
        None => numbers(text, 3),
    }
}

fn time_limit(table: &Map<String, Value>, p: &mut Vec<ConfigProblem>) -> Option<String> {
    let v = table.get("time_limit")?;
    let text = match v {
        Value::String(s) => s.clone(),
        Value::Number(n) if n.as_u64().is_some_and(|m| m > 0) => n.to_string(),
        _ => String::new(),
    };
    if is_slurm_time(&text) && text.bytes().any(|b| b != b'0' && b != b':' && b != b'-') {
        Some(text)
    } else {
        p.push(bad(
            &key("time_limit"),
            v,
            "expected a Slurm time limit: minutes (30), \"MM:SS\", \"HH:MM:SS\" or \
             \"D-HH:MM:SS\", above zero",
        ));
        None
    }
}

fn cpus(table: &Map<String, Value>, p: &mut Vec<ConfigProblem>) -> Option<u32> {
    let v = table.get("cpus")?;
    match v.as_u64().and_then(|n| u32::try_from(n).ok()) {
        Some(n) if n > 0 => Some(n),
        _ => {
            p.push(bad(
                &key("cpus"),
                v,
                "expected a positive whole number of CPUs per job (--cpus-per-task)",
            ));
            None
        }
    }
}

fn mem(table: &Map<String, Value>, p: &mut Vec<ConfigProblem>) -> Option<String> {
    let v = table.get("mem")?;
    let ok = |s: &str| {
        let digits = s.trim_end_matches(['K', 'M', 'G', 'T']);
        !digits.is_empty()
            && digits.len() + 1 >= s.len()
            && digits.bytes().all(|b| b.is_ascii_digit())
    };
    match v.as_str() {
        Some(s) if ok(s) => Some(s.to_owned()),
        _ => {
            p.push(bad(
                &key("mem"),
                v,
                "expected memory per node as Slurm writes it: a number with an optional K, M, G \
                 or T suffix (\"16G\")",
            ));
            None
        }
    }
}

fn extra_args(table: &Map<String, Value>, p: &mut Vec<ConfigProblem>) -> Vec<String> {
    let Some(v) = table.get("extra_args") else {
        return Vec::new();
    };
    let Some(items) = v.as_array() else {
        p.push(bad(
            &key("extra_args"),
            v,
            "expected a list of sbatch arguments ([\"--account=perf\"])",
        ));
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        match item.as_str() {
            Some(s) if !s.is_empty() => out.push(s.to_owned()),
            _ => p.push(bad(
                &format!("{PREFIX}.extra_args[{i}]"),
                item,
                "expected a non-empty string (one sbatch argument)",
            )),
        }
    }
    out
}

fn workdir(table: &Map<String, Value>, p: &mut Vec<ConfigProblem>) -> Option<String> {
    let v = table.get("workdir")?;
    match v.as_str() {
        Some(s) if s.starts_with('/') => Some(s.to_owned()),
        _ => {
            p.push(bad(
                &key("workdir"),
                v,
                "expected an absolute path to a directory every node of the cluster sees \
                 (a shared filesystem)",
            ));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::is_slurm_time;

    #[test]
    fn slurm_time_forms_are_recognised() {
        for ok in ["30", "10:00", "1:00:00", "2-0", "2-12:00", "1-00:00:00"] {
            assert!(is_slurm_time(ok), "{ok}");
        }
        for bad in ["", "ten", "1:2:3:4", "1-", "-5", "1h", "1-2-3", "1-1:2:3:4"] {
            assert!(!is_slurm_time(bad), "{bad}");
        }
    }
}
