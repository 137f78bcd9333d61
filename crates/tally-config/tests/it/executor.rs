//! `[executor]` (`docs/team.md#executor`): the default, a full Slurm table, and every problem of
//! a bad one reported at once with the rest of the file's.

use tally_config::{ConfigError, ExecutorSettings, SlurmSettings, parse_settings};

use crate::config::{MINIMAL, registry};

#[test]
fn no_executor_table_means_local() {
    let s = parse_settings(MINIMAL, &registry()).unwrap();
    assert_eq!(s.executor, ExecutorSettings::Local);
    let text = format!("{MINIMAL}\n[executor]\nkind = \"local\"\n");
    assert_eq!(
        parse_settings(&text, &registry()).unwrap().executor,
        ExecutorSettings::Local
    );
}

#[test]
fn a_slurm_table_resolves_every_option() {
    let text = format!(
        "{MINIMAL}\n[executor]\nkind = \"slurm\"\npartition = \"gpu\"\ngres = \"gpu:1\"\n\
         time_limit = \"1:30:00\"\ncpus = 8\nmem = \"64G\"\nextra_args = [\"--account=perf\"]\n\
         workdir = \"/shared/tally\"\n"
    );
    let s = parse_settings(&text, &registry()).unwrap();
    assert_eq!(
        s.executor,
        ExecutorSettings::Slurm(SlurmSettings {
            partition: Some("gpu".into()),
            gres: Some("gpu:1".into()),
            time_limit: Some("1:30:00".into()),
            cpus: Some(8),
            mem: Some("64G".into()),
            extra_args: vec!["--account=perf".into()],
            workdir: Some("/shared/tally".into()),
        })
    );
    let minutes = format!("{MINIMAL}\n[executor]\nkind = \"slurm\"\ntime_limit = 45\n");
    let ExecutorSettings::Slurm(slurm) = parse_settings(&minutes, &registry()).unwrap().executor
    else {
        panic!("expected slurm");
    };
    assert_eq!(slurm.time_limit.as_deref(), Some("45"));
    assert_eq!(slurm.partition, None);
}

#[test]
fn executor_problems_are_reported_with_the_others() {
    let text = r#"
name = ""
evaluate = ["./e.sh"]

[[metrics]]
name = "tps"
direction = "higher"
role = "primary"

[executor]
kind = "slurm"
partition = "a b"
time_limit = "1h"
cpus = 0
mem = "lots"
extra_args = "--account=x"
workdir = "shared"
gress = "gpu:1"
"#;
    let Err(ConfigError::Problems(problems)) = parse_settings(text, &registry()) else {
        panic!("expected problems");
    };
    let lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
    let expected = [
        "name = \"\": expected a non-empty string naming the campaign",
        "executor.gress: unknown key; did you mean `gres`?",
        "executor.partition = \"a b\": expected a partition name (sinfo lists them), without spaces",
        "executor.time_limit = \"1h\": expected a Slurm time limit: minutes (30), \"MM:SS\", \
         \"HH:MM:SS\" or \"D-HH:MM:SS\", above zero",
        "executor.cpus = 0: expected a positive whole number of CPUs per job (--cpus-per-task)",
        "executor.mem = \"lots\": expected memory per node as Slurm writes it: a number with an \
         optional K, M, G or T suffix (\"16G\")",
        "executor.extra_args = \"--account=x\": expected a list of sbatch arguments ([\"--account=perf\"])",
        "executor.workdir = \"shared\": expected an absolute path to a directory every node of \
         the cluster sees (a shared filesystem)",
    ];
    assert_eq!(lines, expected);
}

#[test]
fn a_local_executor_refuses_slurm_keys_and_unknown_kinds() {
    let text = format!("{MINIMAL}\n[executor]\npartition = \"gpu\"\n");
    let Err(ConfigError::Problems(problems)) = parse_settings(&text, &registry()) else {
        panic!("expected problems");
    };
    assert_eq!(
        problems[0].to_string(),
        "executor.partition: only kind = \"slurm\" takes this key; set kind = \"slurm\" or remove it"
    );
    let text = format!("{MINIMAL}\n[executor]\nkind = \"pbs\"\n");
    let Err(ConfigError::Problems(problems)) = parse_settings(&text, &registry()) else {
        panic!("expected problems");
    };
    assert_eq!(
        problems[0].to_string(),
        "executor.kind = \"pbs\": expected \"local\" (this machine) or \"slurm\" (one batch job per sample)"
    );
}
