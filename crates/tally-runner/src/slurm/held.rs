//! What a job held, for the GPU-hours ledger (`docs/campaign.md#gpu-hours`): the GPUs allocated
//! to it and how long it held them, asked of Slurm once the job is over.
//!
//! The chain, best first. GPUs: the `gres/gpu` count of the job's allocated TRES — `sacct`'s
//! `AllocTRES` when accounting answers, else `scontrol show job -o`'s `AllocTRES` (or `TRES`,
//! which is the allocation in Slurm 22.05) — else the count of `[executor] gres`, else 0.
//! Elapsed: `sacct`'s `ElapsedRaw`, else `scontrol`'s `RunTime` (or `EndTime` − `StartTime`),
//! else tally's measured wall time. A cluster that answers `sacct` with "accounting storage is
//! disabled" is not asked again by this process.
//!
//! Deliberately absent: reading `--gpus`/`--gpus-per-task` from `extra_args` (Slurm's TRES shows
//! what they allocated; without Slurm's answer tally counts the `gres` it asked for), and GPUs
//! shared between jobs (a job counts every GPU allocated to it).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tally_model::{Held, HeldFrom};

use super::cli::slurm;

/// Set once `sacct` has said that this cluster keeps no accounting.
static ACCOUNTING_DISABLED: AtomicBool = AtomicBool::new(false);

/// What job `id` held, asked of Slurm (`sacct`, then `scontrol`); `gres` is `[executor] gres`,
/// `wall` the time tally measured.
pub(crate) fn ask_slurm(id: &str, gres: Option<&str>, wall: Duration) -> Held {
    let accounting = if ACCOUNTING_DISABLED.load(Ordering::Relaxed) {
        None
    } else {
        let args = ["-j", id, "-X", "-n", "-P", "-o", "ElapsedRaw,AllocTRES"];
        match slurm("sacct", &args.map(String::from)) {
            Ok(text) => Some(text),
            Err(why) => {
                if why.contains("accounting storage is disabled") {
                    ACCOUNTING_DISABLED.store(true, Ordering::Relaxed);
                }
                None
            }
        }
    };
    let controller = slurm(
        "scontrol",
        &["show".into(), "job".into(), "-o".into(), id.into()],
    )
    .ok();
    resolve(accounting.as_deref(), controller.as_deref(), gres, wall)
}

/// The chain of the module doc over the answers of `sacct -X -n -P -o ElapsedRaw,AllocTRES`
/// and `scontrol show job -o` (`None`: the call failed).
pub(crate) fn resolve(
    sacct: Option<&str>,
    scontrol: Option<&str>,
    gres: Option<&str>,
    wall: Duration,
) -> Held {
    let accounted = sacct.and_then(parse_sacct);
    let controlled = scontrol.and_then(parse_scontrol);
    let gpus = accounted
        .and_then(|a| a.gpus)
        .or(controlled.and_then(|c| c.gpus))
        .or_else(|| gres.map(gres_gpus))
        .unwrap_or(0);
    let (elapsed, from) = match (accounted, controlled) {
        (
            Some(Answer {
                elapsed: Some(e), ..
            }),
            _,
        ) => (e, HeldFrom::Sacct),
        (
            _,
            Some(Answer {
                elapsed: Some(e), ..
            }),
        ) => (e, HeldFrom::Scontrol),
        _ => (wall, HeldFrom::Wall),
    };
    Held {
        gpus,
        elapsed_ns: u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX),
        from,
    }
}

/// What one Slurm answer says about a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Answer {
    gpus: Option<u32>,
    elapsed: Option<Duration>,
}

/// The first line of `sacct -X -n -P -o ElapsedRaw,AllocTRES`: `65|billing=1,cpu=1,gres/gpu=2`
/// (`None`: no line — the job is not yet, or not, in the accounting database).
fn parse_sacct(text: &str) -> Option<Answer> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    let (elapsed, tres) = line.split_once('|')?;
    Some(Answer {
        gpus: tres_gpus(tres),
        elapsed: elapsed.trim().parse().ok().map(Duration::from_secs),
    })
}

/// The line of `scontrol show job -o` (`None` when it names no job).
fn parse_scontrol(text: &str) -> Option<Answer> {
    let line = text.lines().find(|l| l.contains("JobId="))?;
    let fields: BTreeMap<&str, &str> = line
        .split_whitespace()
        .filter_map(|pair| pair.split_once('='))
        .collect();
    let gpus = ["AllocTRES", "TRES"]
        .iter()
        .filter_map(|key| fields.get(key))
        .find_map(|tres| tres_gpus(tres));
    let elapsed = fields.get("RunTime").and_then(|t| run_time(t)).or_else(|| {
        let start = timestamp(fields.get("StartTime")?)?;
        let end = timestamp(fields.get("EndTime")?)?;
        Some(Duration::from_secs(u64::try_from(end - start).ok()?))
    });
    Some(Answer { gpus, elapsed })
}

/// The GPUs of a TRES list (`cpu=1,mem=1G,gres/gpu=2,gres/gpu:a100=2`): `gres/gpu`, else the
/// sum of the typed `gres/gpu:TYPE` entries; `Some(0)` for a list without GPUs, `None` for an
/// empty or unreadable one.
fn tres_gpus(tres: &str) -> Option<u32> {
    let tres = tres.trim();
    if tres.is_empty() || tres == "(null)" {
        return None;
    }
    let mut total = None;
    let mut typed = 0u32;
    for (key, value) in tres.split(',').filter_map(|pair| pair.split_once('=')) {
        if key == "gres/gpu" {
            total = Some(value.parse().ok()?);
        } else if key.starts_with("gres/gpu:") {
            typed = typed.saturating_add(value.parse().ok()?);
        }
    }
    Some(total.unwrap_or(typed))
}

/// The GPUs `[executor] gres` asks for: `gpu` (1), `gpu:2`, `gpu:a100:2`, `gpu:a100` (1),
/// summed over a comma-separated list; other resources count 0.
pub(crate) fn gres_gpus(gres: &str) -> u32 {
    gres.split(',')
        .map(|item| {
            let item = item.trim();
            let item = item.strip_prefix("gres/").unwrap_or(item);
            let mut parts = item.split(':');
            if parts.next() != Some("gpu") {
                return 0;
            }
            let rest: Vec<&str> = parts.collect();
            match rest.last() {
                None => 1,
                Some(last) => last.parse().unwrap_or(if rest.len() == 1 { 1 } else { 0 }),
            }
        })
        .fold(0u32, u32::saturating_add)
}

/// `scontrol`'s `RunTime`: `[D-]HH:MM:SS`.
fn run_time(text: &str) -> Option<Duration> {
    let (days, clock) = match text.split_once('-') {
        Some((days, clock)) => (days.parse::<u64>().ok()?, clock),
        None => (0, text),
    };
    let parts: Vec<u64> = clock
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let [h, m, s] = parts[..] else {
        return None;
    };
    (m < 60 && s < 60).then(|| Duration::from_secs(((days * 24 + h) * 60 + m) * 60 + s))
}

/// `2026-12-02T03:28:03` as seconds since 1970 in the controller's (unknown, but common to both
/// ends) time zone; `None` for `Unknown`, `None` and anything else.
fn timestamp(text: &str) -> Option<i64> {
    let (date, time) = text.split_once('T')?;
    let d: Vec<i64> = date
        .split('-')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let t: Vec<i64> = time
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let (&[year, month, day], &[h, m, s]) = (&d[..], &t[..]) else {
        return None;
    };
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    Some(days_from_civil(year, month, day) * 86_400 + h * 3600 + m * 60 + s)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `scontrol show job -o` of a finished gres-less job on Slurm 22.05 (the test cluster).
    const SCONTROL_NO_GPU: &str = "JobId=2 JobName=j.sh UserId=root(0) GroupId=root(0) \
        JobState=COMPLETED Reason=None Dependency=(null) ExitCode=0:0 RunTime=00:00:01 \
        TimeLimit=UNLIMITED SubmitTime=2026-12-02T03:28:02 StartTime=2026-12-02T03:28:03 \
        EndTime=2026-12-02T03:28:04 Partition=debug NumNodes=1 NumCPUs=1 NumTasks=1 \
        TRES=cpu=1,node=1,billing=1 Command=/tmp/j.sh WorkDir=/tmp\n";

    /// The same for a GPU job on a newer Slurm, which names the allocation `AllocTRES`.
    const SCONTROL_GPUS: &str = "JobId=81 JobName=tally-candidate-0-a1 JobState=TIMEOUT \
        Reason=TimeLimit ExitCode=0:15 RunTime=1-02:03:04 StartTime=2026-11-30T23:59:50 \
        EndTime=2026-12-02T02:02:54 ReqTRES=cpu=4,mem=16G,node=1,billing=4,gres/gpu=4 \
        AllocTRES=cpu=4,mem=16G,node=1,billing=4,gres/gpu=4,gres/gpu:h100=4\n";

    const WALL: Duration = Duration::from_millis(1_500);

    #[test]
    fn accounting_answers_first() {
        let sacct = "3725|billing=8,cpu=8,gres/gpu=2,mem=64G,node=1\n";
        let held = resolve(Some(sacct), Some(SCONTROL_GPUS), Some("gpu:1"), WALL);
        assert_eq!(
            held,
            Held {
                gpus: 2,
                elapsed_ns: 3_725_000_000_000,
                from: HeldFrom::Sacct
            }
        );
    }

    #[test]
    fn the_controller_answers_without_accounting() {
        let held = resolve(None, Some(SCONTROL_GPUS), Some("gpu:1"), WALL);
        assert_eq!(held.gpus, 4);
        assert_eq!(held.elapsed_ns, (((26 * 60) + 3) * 60 + 4) * 1_000_000_000);
        assert_eq!(held.from, HeldFrom::Scontrol);
        // An accounting database that has not yet seen the job answers nothing.
        assert_eq!(resolve(Some(""), Some(SCONTROL_GPUS), None, WALL).gpus, 4);
    }

    #[test]
    fn a_job_without_gpus_holds_zero_or_the_gres_it_asked_for() {
        let held = resolve(None, Some(SCONTROL_NO_GPU), None, WALL);
        assert_eq!(
            held,
            Held {
                gpus: 0,
                elapsed_ns: 1_000_000_000,
                from: HeldFrom::Scontrol
            }
        );
        // Slurm's TRES, when it answers, wins over the configured gres.
        assert_eq!(
            resolve(None, Some(SCONTROL_NO_GPU), Some("gpu:2"), WALL).gpus,
            0
        );
        // Without any answer: the configured gres and the measured wall time.
        let held = resolve(None, None, Some("gpu:a100:2"), WALL);
        assert_eq!(
            held,
            Held {
                gpus: 2,
                elapsed_ns: 1_500_000_000,
                from: HeldFrom::Wall
            }
        );
        assert_eq!(resolve(None, Some("no job"), None, WALL).gpus, 0);
    }

    #[test]
    fn start_and_end_times_stand_in_for_a_missing_run_time() {
        let line = SCONTROL_GPUS.replace("RunTime=1-02:03:04 ", "");
        let held = resolve(None, Some(&line), None, WALL);
        assert_eq!(held.elapsed_ns, (26 * 3600 + 3 * 60 + 4) * 1_000_000_000);
        let unknown = line.replace("EndTime=2026-12-02T02:02:54", "EndTime=Unknown");
        assert_eq!(
            resolve(None, Some(&unknown), None, WALL).from,
            HeldFrom::Wall
        );
    }

    #[test]
    fn sacct_lines_and_tres_lists_are_read() {
        assert_eq!(
            parse_sacct("12|billing=1,cpu=1,node=1\n"),
            Some(Answer {
                gpus: Some(0),
                elapsed: Some(Duration::from_secs(12))
            })
        );
        assert_eq!(parse_sacct("\n"), None);
        assert_eq!(tres_gpus("cpu=2,gres/gpu:a100=2,gres/gpu:h100=1"), Some(3));
        assert_eq!(tres_gpus("(null)"), None);
        assert_eq!(tres_gpus(""), None);
    }

    #[test]
    fn configured_gres_counts() {
        for (gres, gpus) in [
            ("gpu", 1),
            ("gpu:1", 1),
            ("gpu:4", 4),
            ("gpu:a100", 1),
            ("gpu:a100:2", 2),
            ("gres/gpu:3", 3),
            ("gpu:2,nvme:1", 2),
            ("nvme:1", 0),
        ] {
            assert_eq!(gres_gpus(gres), gpus, "{gres}");
        }
    }

    #[test]
    fn run_times_and_timestamps() {
        assert_eq!(run_time("00:00:07"), Some(Duration::from_secs(7)));
        assert_eq!(run_time("2-00:00:01"), Some(Duration::from_secs(172_801)));
        assert_eq!(run_time("1:70:00"), None);
        assert_eq!(timestamp("1970-01-02T00:00:01"), Some(86_401));
        assert_eq!(
            timestamp("2024-03-01T00:00:00").unwrap() - timestamp("2024-02-28T00:00:00").unwrap(),
            2 * 86_400,
            "2024 is a leap year"
        );
        assert_eq!(timestamp("Unknown"), None);
    }
}
