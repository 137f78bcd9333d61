//! Adopting the jobs of a `tally run` that was killed outright (`docs/team.md#adopting`).
//!
//! Every job carries the comment `tally:<root tag>:<attempt directory name>`, the root tag being
//! a hash of the worktree root of one campaign's worker slot. Its id is recorded in
//! `<label>.slurm-job` and its attempt directory in `<label>.slurm-dir`, both in the
//! evaluation's log directory; the directory is written before `sbatch` runs, the id right after.
//! At the start of `tally run`, [`SlurmRunner::settle_leftovers`] keeps the attempt directories
//! of the evaluations the store still has running (the engine resumes them, and `run_attempt`,
//! asked for the same attempt, finds the recorded job and watches it instead of submitting
//! another), and `scancel`s every other job that carries the slot's tag: those of evaluations
//! nothing wants any more, and a held job that an `sbatch` which did not answer in time left
//! behind with no id on record.
//!
//! Deliberately absent: anything about the store (the binary says which log directories are
//! still wanted) and accounting (`sacct`): live jobs are found with `squeue`, finished ones by
//! the files they wrote.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::SlurmRunner;
use super::cancel_job;
use super::cli::{job_info, slurm};
use crate::worktree::fnv1a;

/// What [`SlurmRunner::settle_leftovers`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Settled {
    /// Attempt directories of recorded jobs that the resumed evaluations adopt: to be kept
    /// when the rest of the worktree root is pruned, sorted.
    pub kept: Vec<PathBuf>,
    /// Ids of the jobs carrying this slot's tag that were `scancel`led, in the order found.
    pub cancelled: Vec<String>,
}

/// A job a `tally run` recorded for one attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Recorded {
    /// The Slurm job id.
    pub id: String,
    /// Its attempt directory (checkout, script, the files the job writes).
    pub dir: PathBuf,
}

/// The file next to `<label>.slurm-job` that names the attempt directory.
pub(crate) fn dir_file(job_id_file: &Path) -> PathBuf {
    job_id_file.with_extension("slurm-dir")
}

/// The job recorded in `job_id_file` (and its `.slurm-dir` file) when its attempt directory is
/// still under `root` with its script: a job the killed run did not see to its end.
pub(crate) fn recorded(job_id_file: &Path, root: &Path) -> Option<Recorded> {
    let id = std::fs::read_to_string(job_id_file).ok()?;
    let id = id.trim();
    let dir = std::fs::read_to_string(dir_file(job_id_file)).ok()?;
    let dir = PathBuf::from(dir.trim_end_matches('\n'));
    let valid = !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit());
    (valid && dir.parent() == Some(root) && dir.join("job.sh").is_file()).then(|| Recorded {
        id: id.to_owned(),
        dir,
    })
}

/// The comment prefix of every job of the slot whose worktree root is `root`.
pub(crate) fn root_tag(root: &Path) -> String {
    format!("tally:{:016x}:", fnv1a(root.as_os_str().as_encoded_bytes()))
}

/// The comment of the job of the attempt directory `dir` under `root`.
pub(crate) fn comment(root: &Path, dir: &Path) -> String {
    let name = dir.file_name().unwrap_or_default().to_string_lossy();
    format!("{}{name}", root_tag(root))
}

/// Releases a recorded job that is still held: the killed run recorded its id but did not get
/// to `scontrol release` it.
pub(crate) fn release_if_held(id: &str) {
    if let Ok(Some(info)) = job_info(id)
        && info.state == "PENDING"
        && info.reason == "JobHeldUser"
    {
        let _ = slurm("scontrol", &["release".into(), id.to_owned()]);
    }
}

/// The jobs Slurm still lists (pending, running, completing) whose comment starts with
/// `prefix`, optionally only those named `name`: `(id, comment)`.
pub(crate) fn tagged_jobs(
    prefix: &str,
    name: Option<&str>,
) -> Result<Vec<(String, String)>, String> {
    let mut args = vec!["--noheader".to_owned(), "--format=%i|%k".to_owned()];
    if let Some(name) = name {
        args.push(format!("--name={name}"));
    }
    let listed = slurm("squeue", &args)?;
    Ok(parse_tagged(&listed, prefix))
}

/// The `(id, comment)` pairs of `squeue --format=%i|%k` lines whose comment starts with `prefix`.
fn parse_tagged(listed: &str, prefix: &str) -> Vec<(String, String)> {
    listed
        .lines()
        .filter_map(|line| line.trim().split_once('|'))
        .filter(|(_, comment)| comment.starts_with(prefix))
        .map(|(id, comment)| (id.trim().to_owned(), comment.to_owned()))
        .collect()
}

/// After an `sbatch` that did not answer in time: cancels the job it may have queued (held,
/// named `name`, with `comment`), which no id on record would ever release. Returns the ids.
pub(crate) fn cancel_unrecorded(name: &str, comment: &str) -> Vec<String> {
    let Ok(jobs) = tagged_jobs(comment, Some(name)) else {
        return Vec::new();
    };
    let mut cancelled = Vec::new();
    for (id, tagged) in jobs {
        if tagged == comment {
            cancel_job(&id);
            cancelled.push(id);
        }
    }
    cancelled
}

impl SlurmRunner {
    /// At the start of `tally run`, before the worktree root is pruned: the attempt directories
    /// of the jobs recorded in `wanted` (the log directories of the evaluations the store still
    /// has running, which the engine resumes) are kept for adoption; every other job carrying
    /// this slot's tag is `scancel`led (and waited for). Fails only when Slurm cannot list its
    /// jobs.
    pub fn settle_leftovers(&self, wanted: &[PathBuf]) -> Result<Settled, String> {
        let mut settled = Settled::default();
        let mut adopted: BTreeSet<String> = BTreeSet::new();
        for log_dir in wanted {
            let Ok(entries) = std::fs::read_dir(log_dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if path.extension().is_some_and(|e| e == "slurm-job")
                    && let Some(job) = recorded(&path, self.worktree_root())
                {
                    adopted.insert(job.id);
                    settled.kept.push(job.dir);
                }
            }
        }
        settled.kept.sort();
        let jobs = tagged_jobs(&root_tag(self.worktree_root()), None).map_err(|why| {
            format!(
                "could not list the Slurm jobs an earlier tally run may have left ({why}); \
                 tally adopts or cancels them before it starts"
            )
        })?;
        for (id, _) in jobs {
            if !adopted.contains(&id) {
                cancel_job(&id);
                settled.cancelled.push(id);
            }
        }
        Ok(settled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn squeue_lines_give_the_jobs_with_the_tag() {
        let listed = "41|tally:00ab:sample-candidate-0-a1-9-0\n42|\n43|other\n44|tally:00ab:x|y\n";
        assert_eq!(
            parse_tagged(listed, "tally:00ab:"),
            [
                (
                    "41".to_owned(),
                    "tally:00ab:sample-candidate-0-a1-9-0".to_owned()
                ),
                ("44".to_owned(), "tally:00ab:x|y".to_owned()),
            ]
        );
    }

    #[test]
    fn a_recorded_job_needs_its_id_and_its_attempt_directory() {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path().join("root");
        let dir = root.join("sample-candidate-0-a1-7-0");
        std::fs::create_dir_all(&dir).unwrap();
        let id_file = temp.path().join("candidate-0-a1.slurm-job");
        std::fs::write(&id_file, "42\n").unwrap();
        // No directory recorded, then no script in it: nothing to adopt.
        assert_eq!(recorded(&id_file, &root), None);
        std::fs::write(dir_file(&id_file), format!("{}\n", dir.display())).unwrap();
        assert_eq!(recorded(&id_file, &root), None);
        std::fs::write(dir.join("job.sh"), "#!/bin/bash\n").unwrap();
        assert_eq!(
            recorded(&id_file, &root),
            Some(Recorded {
                id: "42".into(),
                dir: dir.clone()
            })
        );
        // Another slot's root does not adopt it.
        assert_eq!(recorded(&id_file, temp.path()), None);
        assert!(comment(&root, &dir).starts_with(&root_tag(&root)));
        assert!(comment(&root, &dir).ends_with(":sample-candidate-0-a1-7-0"));
    }
}
