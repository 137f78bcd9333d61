//! One attempt as a batch job: the script that runs the evaluate command in its checkout and
//! writes how it ended to a file, the `sbatch` arguments, and reading that file back
//! (`docs/team.md#executor`).
//!
//! The script runs the argv without a shell of its own (each word quoted), with the hand-over
//! variables set and stdin from `/dev/null`, and writes `<exit status> <start ns> <end ns>` to
//! `ended` (through a rename, so a half-written file is never read). A job that Slurm ends
//! before the command does (its time limit, a node failure, `scancel`) leaves no `ended` file.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The job options of `[executor]`; each `None` leaves the choice to Slurm.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SlurmOptions {
    /// `--partition`.
    pub partition: Option<String>,
    /// `--gres` (`gpu:1`).
    pub gres: Option<String>,
    /// `--time`.
    pub time_limit: Option<String>,
    /// `--cpus-per-task`.
    pub cpus: Option<u32>,
    /// `--mem`.
    pub mem: Option<String>,
    /// More `sbatch` arguments, passed as written, after tally's own.
    pub extra_args: Vec<String>,
}

/// The files of one job, in the attempt directory (on the shared workdir).
#[derive(Debug, Clone)]
pub(crate) struct JobFiles {
    /// The batch script.
    pub script: PathBuf,
    /// The job's stdout (`sbatch -o`).
    pub stdout: PathBuf,
    /// The job's stderr (`sbatch -e`): the command's, and Slurm's own messages.
    pub stderr: PathBuf,
    /// `<status> <start ns> <end ns>`, written when the command ended.
    pub ended: PathBuf,
}

impl JobFiles {
    pub fn in_dir(dir: &Path) -> Self {
        Self {
            script: dir.join("job.sh"),
            stdout: dir.join("job.stdout"),
            stderr: dir.join("job.stderr"),
            ended: dir.join("job.ended"),
        }
    }
}

/// `text` as one word of a POSIX shell.
fn quote(text: &std::ffi::OsStr) -> String {
    format!("'{}'", text.to_string_lossy().replace('\'', r"'\''"))
}

/// The batch script: enter the checkout, set `env`, run `argv`, record how it ended.
pub(crate) fn script(
    files: &JobFiles,
    worktree: &Path,
    argv: &[String],
    env: &[(OsString, OsString)],
) -> String {
    let mut text = String::from(
        "#!/bin/bash\n# Written by tally: one attempt of the evaluate command (docs/team.md#executor).\n",
    );
    for (name, value) in env {
        text.push_str(&format!(
            "export {}={}\n",
            name.to_string_lossy(),
            quote(value)
        ));
    }
    let ended = quote(files.ended.as_os_str());
    let partial = quote(files.ended.with_extension("partial").as_os_str());
    text.push_str(&format!(
        "cd {} || {{ echo \"tally: cannot enter the checkout on $(hostname)\" >&2; exit 97; }}\n",
        quote(worktree.as_os_str())
    ));
    text.push_str("start=$(date +%s%N)\n");
    let words: Vec<String> = argv.iter().map(|w| quote(w.as_ref())).collect();
    text.push_str(&format!("{} </dev/null\n", words.join(" ")));
    text.push_str("status=$?\n");
    text.push_str(&format!(
        "echo \"$status $start $(date +%s%N)\" > {partial} && mv -f {partial} {ended}\n"
    ));
    text.push_str("exit \"$status\"\n");
    text
}

/// The `sbatch` arguments of a held job (released once tally has recorded its id); `comment`
/// tags it as this campaign's (`slurm::adopt`).
pub(crate) fn sbatch_args(
    options: &SlurmOptions,
    name: &str,
    comment: &str,
    files: &JobFiles,
    worktree: &Path,
) -> Vec<String> {
    let mut args = vec![
        "--parsable".to_owned(),
        "--hold".to_owned(),
        format!("--job-name={name}"),
        format!("--output={}", files.stdout.display()),
        format!("--error={}", files.stderr.display()),
        format!("--chdir={}", worktree.display()),
        "--ntasks=1".to_owned(),
        format!("--comment={comment}"),
        // A job its node failed under ends NODE_FAIL, a failed sample: never started again by
        // Slurm behind tally's back (a sample is measured once, tally decides any retry).
        "--no-requeue".to_owned(),
    ];
    args.extend(option_args(options));
    args.push(files.script.display().to_string());
    args
}

/// The flags `[executor]`'s options become, `extra_args` last.
pub(crate) fn option_args(options: &SlurmOptions) -> Vec<String> {
    let mut args = Vec::new();
    let mut add = |flag: &str, value: &Option<String>| {
        if let Some(value) = value {
            args.push(format!("--{flag}={value}"));
        }
    };
    add("partition", &options.partition);
    add("gres", &options.gres);
    add("time", &options.time_limit);
    add("cpus-per-task", &options.cpus.map(|n| n.to_string()));
    add("mem", &options.mem);
    args.extend(options.extra_args.iter().cloned());
    args
}

/// How the command ended, from the `ended` file: `None` when there is none (the job was ended
/// before the command was); the status as bash reports it (128 + N for a command killed by
/// signal N) and the command's wall time.
pub(crate) fn read_ended(path: &Path) -> Option<(i32, Duration)> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut words = text.split_whitespace();
    let status: i32 = words.next()?.parse().ok()?;
    let start: u128 = words.next()?.parse().ok()?;
    let end: u128 = words.next()?.parse().ok()?;
    let wall = u64::try_from(end.saturating_sub(start)).unwrap_or(u64::MAX);
    Some((status, Duration::from_nanos(wall)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_quotes_every_word_and_records_the_end() {
        let files = JobFiles::in_dir(Path::new("/w/a"));
        let text = script(
            &files,
            Path::new("/w/a/checkout"),
            &["./bench.sh".into(), "it's".into()],
            &[("TALLY_SIDE".into(), "bar".into())],
        );
        assert!(text.contains("export TALLY_SIDE='bar'\n"), "{text}");
        assert!(text.contains("cd '/w/a/checkout' ||"), "{text}");
        assert!(
            text.contains("'./bench.sh' 'it'\\''s' </dev/null\n"),
            "{text}"
        );
        assert!(
            text.contains("mv -f '/w/a/job.partial' '/w/a/job.ended'"),
            "{text}"
        );
    }

    #[test]
    fn options_become_sbatch_flags_before_the_extra_args() {
        let options = SlurmOptions {
            partition: Some("gpu".into()),
            gres: Some("gpu:1".into()),
            time_limit: Some("10".into()),
            cpus: Some(4),
            mem: None,
            extra_args: vec!["--qos=high".into()],
        };
        let files = JobFiles::in_dir(Path::new("/w/a"));
        let args = sbatch_args(
            &options,
            "tally-x",
            "tally:00:sample-x",
            &files,
            Path::new("/w/a/checkout"),
        );
        assert_eq!(args[7], "--comment=tally:00:sample-x");
        assert_eq!(args[8], "--no-requeue");
        let tail: Vec<&str> = args[9..].iter().map(String::as_str).collect();
        assert_eq!(
            tail,
            [
                "--partition=gpu",
                "--gres=gpu:1",
                "--time=10",
                "--cpus-per-task=4",
                "--qos=high",
                "/w/a/job.sh"
            ]
        );
        assert_eq!(args[1], "--hold");
    }

    #[test]
    fn the_ended_file_gives_status_and_wall_time() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("job.ended");
        assert_eq!(read_ended(&path), None);
        std::fs::write(&path, "3 1000 2500001000\n").unwrap();
        assert_eq!(read_ended(&path), Some((3, Duration::from_millis(2500))));
        std::fs::write(&path, "3 10").unwrap();
        assert_eq!(read_ended(&path), None);
    }
}
