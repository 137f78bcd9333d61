//! `tally trace shares`: a validated share budget (`docs/evidence.md#shares`) as text, or as the
//! one-line `--json` object `{"budget_ns", "device_clock", "iteration_ref", "shares",
//! "unattributed_ns"}`.
//!
//! The object's keys are in alphabetical order at every level — entity refs are `{"id",
//! "producer_id"}` here, device clocks `{"clock_domain", "clock_kind", "device_uuid"}` — as the
//! command has always printed them (it built a `serde_json::Value`, whose keys sort); the structs
//! below declare their fields in that order. The shares keep the order they were given in.

use serde::Serialize;
use tally_evidence::{DeviceClock, EntityRef, RequestShareEstimate, ShareBudget};

/// The report: one sentence naming the budget and how it splits, then one line per share.
pub fn text(budget: &ShareBudget) -> String {
    let mut text = format!(
        "valid: {} share(s) of model {} plus {} ns unattributed equal the measured budget of \
         {} ns ({} on {} {} {})\n",
        budget.shares.len(),
        budget
            .shares
            .first()
            .map(|s| s.model().to_string())
            .unwrap_or_else(|| "-".into()),
        budget.unattributed_ns,
        budget.budget_ns,
        budget.iteration_ref,
        budget.device_clock.device_uuid,
        budget.device_clock.clock_domain,
        budget.device_clock.clock_kind.as_str(),
    );
    for s in &budget.shares {
        let attempt = s
            .attempt_ref()
            .map(|a| format!(" (attempt {a})"))
            .unwrap_or_default();
        text.push_str(&format!(
            "  {}{attempt}: {} ns\n",
            s.request_ref(),
            s.duration_ns()
        ));
    }
    text
}

/// The `--json` object on one line, ending with a newline.
pub fn json(budget: &ShareBudget) -> String {
    let value = BudgetJson {
        budget_ns: budget.budget_ns,
        device_clock: (&budget.device_clock).into(),
        iteration_ref: (&budget.iteration_ref).into(),
        shares: budget.shares.iter().map(ShareJson::from).collect(),
        unattributed_ns: budget.unattributed_ns,
    };
    let mut line = serde_json::to_string(&value).expect("a share budget serialises");
    line.push('\n');
    line
}

#[derive(Serialize)]
struct BudgetJson<'a> {
    budget_ns: u64,
    device_clock: DeviceClockJson<'a>,
    iteration_ref: RefJson<'a>,
    shares: Vec<ShareJson<'a>>,
    unattributed_ns: u64,
}

#[derive(Serialize)]
struct ShareJson<'a> {
    attempt_ref: Option<RefJson<'a>>,
    duration_ns: i64,
    model: &'a str,
    request_ref: RefJson<'a>,
}

impl<'a> From<&'a RequestShareEstimate> for ShareJson<'a> {
    fn from(s: &'a RequestShareEstimate) -> Self {
        Self {
            attempt_ref: s.attempt_ref().map(RefJson::from),
            duration_ns: s.duration_ns(),
            model: s.model(),
            request_ref: s.request_ref().into(),
        }
    }
}

/// `{"id", "producer_id"}`.
#[derive(Serialize)]
struct RefJson<'a> {
    id: &'a str,
    producer_id: &'a str,
}

impl<'a> From<&'a EntityRef> for RefJson<'a> {
    fn from(r: &'a EntityRef) -> Self {
        Self {
            id: &r.id,
            producer_id: &r.producer_id,
        }
    }
}

/// `{"clock_domain", "clock_kind", "device_uuid"}`.
#[derive(Serialize)]
struct DeviceClockJson<'a> {
    clock_domain: &'a str,
    clock_kind: &'a str,
    device_uuid: &'a str,
}

impl<'a> From<&'a DeviceClock> for DeviceClockJson<'a> {
    fn from(k: &'a DeviceClock) -> Self {
        Self {
            clock_domain: &k.clock_domain,
            clock_kind: k.clock_kind.as_str(),
            device_uuid: &k.device_uuid,
        }
    }
}
