//! Device identities in an Nsight Systems export: which GPU (name, UUID) each process's CUDA
//! ordinal ran on, as far as `TARGET_INFO_GPU` and `TARGET_INFO_CUDA_DEVICE` say.
//!
//! A UUID is given only where the export ties an ordinal to one GPU (a device table, or a single
//! listed GPU for ordinal 0); with several GPUs and no device table nothing is guessed and the
//! emitter derives an identity. Reads the database through the parent's helpers; writes nothing.

use std::collections::{BTreeMap, BTreeSet};

use tally_evidence::Text;

use super::{Database, get_i64};
use crate::error::Result;

type Identities = (BTreeMap<u32, Text>, BTreeMap<(i64, u32), Text>);

/// Device names and the UUIDs the export names for (process, CUDA ordinal) pairs.
pub(super) fn gpu_identities(
    db: &Database<'_>,
    used: &BTreeSet<(i64, u32)>,
    notes: &mut Vec<String>,
) -> Result<Identities> {
    let mut names = BTreeMap::new();
    let mut uuids = BTreeMap::new();
    if !db.has("TARGET_INFO_GPU") {
        return Ok((names, uuids));
    }
    let columns = db.columns("TARGET_INFO_GPU")?;
    if !columns.contains("id") {
        return Ok((names, uuids));
    }
    let name = if columns.contains("name") {
        "name"
    } else {
        "NULL"
    };
    let uuid = if columns.contains("uuid") {
        "uuid"
    } else {
        "NULL"
    };
    let mut gpus: BTreeMap<i64, (Option<String>, Option<String>)> = BTreeMap::new();
    db.each_row(
        &format!("SELECT id, {name}, {uuid} FROM TARGET_INFO_GPU ORDER BY id"),
        "TARGET_INFO_GPU",
        &mut |row| {
            let id = get_i64(row, 0, "id")?;
            let name: Option<String> = row.get(1).ok().flatten();
            let uuid: Option<String> = row.get(2).ok().flatten();
            gpus.insert(
                id,
                (name, uuid.filter(|u| !u.is_empty()).map(|u| prefixed(&u))),
            );
            Ok(())
        },
    )?;
    let mut mapped = false;
    if db.has("TARGET_INFO_CUDA_DEVICE") {
        let cols = db.columns("TARGET_INFO_CUDA_DEVICE")?;
        if ["pid", "cudaId", "gpuId"].iter().all(|c| cols.contains(*c)) {
            mapped = true;
            db.each_row(
                "SELECT pid, cudaId, gpuId FROM TARGET_INFO_CUDA_DEVICE",
                "TARGET_INFO_CUDA_DEVICE",
                &mut |row| {
                    let pid = get_i64(row, 0, "pid")?;
                    let cuda = get_i64(row, 1, "cudaId")?;
                    let gpu = get_i64(row, 2, "gpuId")?;
                    if let (Ok(cuda), Some((name, uuid))) = (u32::try_from(cuda), gpus.get(&gpu)) {
                        if let Some(uuid) = uuid {
                            uuids.insert((pid, cuda), Text::from(uuid.as_str()));
                        }
                        if let Some(name) = name {
                            names.insert(cuda, Text::from(name.as_str()));
                        }
                    }
                    Ok(())
                },
            )?;
        }
    }
    if !mapped {
        let distinct_names: BTreeSet<&String> =
            gpus.values().filter_map(|g| g.0.as_ref()).collect();
        if let [only] = distinct_names.into_iter().collect::<Vec<_>>()[..] {
            for &(_, device) in used {
                names.insert(device, Text::from(only.as_str()));
            }
        }
        if gpus.len() == 1 {
            if let Some((_, Some(uuid))) = gpus.values().next() {
                for &(pid, device) in used.iter().filter(|(_, d)| *d == 0) {
                    uuids.insert((pid, device), Text::from(uuid.as_str()));
                }
            }
        } else if gpus.len() > 1 {
            notes.push(format!(
                "TARGET_INFO_GPU lists {} GPUs and the export does not say which one each process \
                 used (no TARGET_INFO_CUDA_DEVICE); device identities are derived — pass \
                 --device-uuid INDEX=UUID to name them",
                gpus.len()
            ));
        }
    }
    Ok((names, uuids))
}

fn prefixed(uuid: &str) -> String {
    if uuid.starts_with("GPU-") || uuid.starts_with("MIG-") {
        uuid.to_owned()
    } else {
        format!("GPU-{uuid}")
    }
}
