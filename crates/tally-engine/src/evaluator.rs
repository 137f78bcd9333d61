//! The evaluator identity (`docs/campaign.md#pairs`): a hash of the evaluate argv, the `link` paths and
//! the judging metrics' names and directions. Measurements of another evaluator never enter means
//! or verdicts; a changed evaluator re-measures the head before anything is judged.
//!
//! Deliberately not part of it: the timeout, watch metrics, plugins — changing those does not
//! change what a number means.

use sha2::{Digest, Sha256};
use tally_config::Settings;

/// `ev-` and the first 16 hex digits of SHA-256 over a canonical JSON of what defines the
/// measurement.
pub fn evaluator_identity(settings: &Settings) -> String {
    let metrics: Vec<serde_json::Value> = settings
        .judging_metrics()
        .map(|m| serde_json::json!([m.name, m.direction.as_str()]))
        .collect();
    let canonical = serde_json::json!({
        "evaluate": settings.evaluate,
        "link": settings.link,
        "metrics": metrics,
    })
    .to_string();
    let digest = Sha256::digest(canonical.as_bytes());
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("ev-{hex}")
}
