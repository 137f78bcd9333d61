//! The start-up breaker (`docs/implementers.md#breaker`): when [`TRIP_AT`] implementer runs did
//! not start within [`WINDOW`] — a harness that is missing, misconfigured or out of credit —
//! launches pause: the campaign is held with a reason that names the breaker and the fix,
//! instead of burning through every idea. Runs that ended before the campaign last became
//! active (`tally campaign resume`) do not count, so resuming after the fix launches again.

use std::time::Duration;

use tally_model::{Campaign, CampaignState, UnixMillis};
use tally_store::{Run, RunEnd};

/// The runs that did not start, within [`WINDOW`], that trip the breaker.
pub const TRIP_AT: usize = 3;

/// How far back the runs that did not start are counted.
pub const WINDOW: Duration = Duration::from_secs(10 * 60);

/// Why launches are paused, or `None` when the breaker is not tripped.
pub fn tripped(campaign: &Campaign, runs: &[Run], now: UnixMillis) -> Option<String> {
    let window_start = now.0 - WINDOW.as_millis() as i64;
    // An active campaign counts only what ended since it became active; a held one (by this
    // breaker, say) everything in the window.
    let since = match campaign.state {
        CampaignState::Active => campaign.state_since.0,
        _ => i64::MIN,
    };
    let recent: Vec<(u32, &str)> = runs
        .iter()
        .filter_map(|r| {
            let s = r.settled.as_ref()?;
            (s.end == RunEnd::NotStarted && s.ended.0 >= window_start && s.ended.0 >= since)
                .then(|| (r.number, s.error.as_deref().unwrap_or("no error recorded")))
        })
        .collect();
    if recent.len() < TRIP_AT {
        return None;
    }
    let names: Vec<String> = recent.iter().map(|(n, _)| format!("run#{n}")).collect();
    let last_error = recent.last().map_or("", |(_, e)| e);
    Some(format!(
        "start-up breaker: {} implementer runs did not start within {} minutes ({}; the last: {}); \
         launches are paused: fix the [implementer] command or the harness (`tally implementer \
         check` says what it finds), then `tally campaign resume`",
        recent.len(),
        WINDOW.as_secs() / 60,
        names.join(", "),
        last_error.lines().next().unwrap_or_default()
    ))
}
