//! `tally trace align`: an aligned timestamp as `VALUE ± UNCERTAINTY ns in DOMAIN`, or as the
//! one-line `--json` object `{"clock_domain", "uncertainty_ns", "value_ns"}` (keys in
//! alphabetical order, as the command has always printed them); and, when no single alignment
//! applies, the sentence that says which alignments cover the timestamp.

use serde::Serialize;
use tally_evidence::{AlignedTimestamp, ClockAlignmentEvent, ResolvedEvent};

/// The aligned value, its uncertainty and its domain, on one line.
pub fn text(aligned: &AlignedTimestamp) -> String {
    format!(
        "{} ± {} ns in {}\n",
        aligned.value_ns, aligned.uncertainty_ns, aligned.clock_domain
    )
}

/// The `--json` object on one line, ending with a newline.
pub fn json(aligned: &AlignedTimestamp) -> String {
    let value = AlignedJson {
        clock_domain: &aligned.clock_domain,
        uncertainty_ns: aligned.uncertainty_ns,
        value_ns: aligned.value_ns,
    };
    let mut line = serde_json::to_string(&value).expect("an aligned timestamp serialises");
    line.push('\n');
    line
}

#[derive(Serialize)]
struct AlignedJson<'a> {
    clock_domain: &'a str,
    uncertainty_ns: i64,
    value_ns: i64,
}

/// Why `timestamp_ns` could not be moved from `from` to `to`: no alignment covers it, or the
/// `covering` ones (in the order given) are named as `session/producer event ID`.
pub fn why_not(
    timestamp_ns: i64,
    from: &str,
    to: &str,
    covering: &[&ResolvedEvent<ClockAlignmentEvent>],
) -> String {
    if covering.is_empty() {
        format!("no alignment from {from} to {to} covers {timestamp_ns}")
    } else {
        let names: Vec<String> = covering
            .iter()
            .map(|a| {
                format!(
                    "{}/{} event {}",
                    a.context().session_id,
                    a.context().producer_id,
                    a.event_id()
                )
            })
            .collect();
        format!(
            "{} alignments from {from} to {to} cover {timestamp_ns}: {}",
            covering.len(),
            names.join(", ")
        )
    }
}
