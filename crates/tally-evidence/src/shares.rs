//! Request-share validation: checking an explicit split of an iteration's GPU time among its
//! member requests against the measured budget (`docs/evidence.md#shares`).
//!
//! tally never splits shared iteration time itself. A caller with an estimation model proposes
//! [`RequestShareEstimate`]s plus an unattributed remainder; [`validate_request_shares`] accepts
//! them only when every share names a member of the iteration, none is repeated or overlaps a
//! generic share of the same request, one model made them all, and they add up exactly to the
//! iteration's measured busy time on the given device clock. Refusals are [`Error::Refused`]
//! with the reference's wording. Pure, no I/O.

use std::collections::BTreeSet;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::account::{DeviceClock, RunAccounting};
use crate::error::{Error, Result};
use crate::model::{EntityRef, Nanos, Text};
use crate::resolve::CorrelationGraph;

/// One request's (or one attempt's) estimated share of an iteration's GPU time.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RequestShareEstimate {
    request_ref: EntityRef,
    duration_ns: Nanos,
    model: Text,
    attempt_ref: Option<EntityRef>,
}

impl RequestShareEstimate {
    /// A share of `duration_ns` for `request_ref` (or only its `attempt_ref`), made by `model`.
    ///
    /// Refusals: `estimated duration_ns must be non-negative`, `request share needs a model
    /// name` (checked in that order).
    pub fn new(
        request_ref: EntityRef,
        duration_ns: Nanos,
        model: impl Into<Text>,
        attempt_ref: Option<EntityRef>,
    ) -> Result<Self> {
        if duration_ns < 0 {
            return Err(Error::refused("estimated duration_ns must be non-negative"));
        }
        let model = model.into();
        if model.is_empty() {
            return Err(Error::refused("request share needs a model name"));
        }
        Ok(Self {
            request_ref,
            duration_ns,
            model,
            attempt_ref,
        })
    }

    /// The request.
    pub fn request_ref(&self) -> &EntityRef {
        &self.request_ref
    }
    /// The estimated time (≥ 0).
    pub fn duration_ns(&self) -> Nanos {
        self.duration_ns
    }
    /// The estimation model's name (non-empty).
    pub fn model(&self) -> &Text {
        &self.model
    }
    /// The attempt, when the share is attempt-specific.
    pub fn attempt_ref(&self) -> Option<&EntityRef> {
        self.attempt_ref.as_ref()
    }
}

/// A validated split of one iteration's GPU time on one device clock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShareBudget {
    /// The iteration.
    pub iteration_ref: EntityRef,
    /// The device clock whose busy time is split.
    pub device_clock: DeviceClock,
    /// The measured busy time (the budget).
    pub budget_ns: u64,
    /// The shares, as given.
    pub shares: Vec<RequestShareEstimate>,
    /// The remainder left unattributed.
    pub unattributed_ns: u64,
}

/// Validates `shares` plus `unattributed_ns` against the busy time of `iteration_ref` on
/// `device_clock` (`docs/evidence.md#shares`). Refusals, checked in this order:
///
/// 1. `no measured GPU budget for iteration and device clock`;
/// 2. `unattributed_ns must be non-negative`;
/// 3. per share in order: `estimated request is not a member of the iteration` (a generic share
///    needs a membership of that request with any attempt; an attempt share needs that exact
///    pair), `duplicate request share`, `generic and attempt-specific request shares overlap`;
/// 4. `request shares must use one estimation model`;
/// 5. `estimated shares and remainder must equal the measured budget`.
pub fn validate_request_shares(
    graph: &CorrelationGraph,
    accounting: &RunAccounting,
    iteration_ref: &EntityRef,
    device_clock: &DeviceClock,
    shares: &[RequestShareEstimate],
    unattributed_ns: Nanos,
) -> Result<ShareBudget> {
    let budget = accounting
        .iterations
        .get(iteration_ref)
        .and_then(|timing| timing.gpu.get(device_clock))
        .ok_or_else(|| Error::refused("no measured GPU budget for iteration and device clock"))?
        .busy_ns;
    let unattributed = u64::try_from(unattributed_ns)
        .map_err(|_| Error::refused("unattributed_ns must be non-negative"))?;

    let mut members: FxHashSet<(&EntityRef, Option<&EntityRef>)> = FxHashSet::default();
    let mut member_requests: FxHashSet<&EntityRef> = FxHashSet::default();
    for membership in graph.memberships_of(iteration_ref) {
        let b = membership.body();
        members.insert((&b.request_ref, b.attempt_ref.as_ref()));
        member_requests.insert(&b.request_ref);
    }

    // Per request: whether it has a generic share, and whether it has an attempt share.
    let mut seen: FxHashSet<(&EntityRef, Option<&EntityRef>)> = FxHashSet::default();
    let mut kinds: FxHashMap<&EntityRef, (bool, bool)> = FxHashMap::default();
    let mut models: BTreeSet<&Text> = BTreeSet::new();
    let mut total: u128 = u128::from(unattributed);
    for share in shares {
        let key = (&share.request_ref, share.attempt_ref.as_ref());
        let member = match share.attempt_ref {
            None => member_requests.contains(&share.request_ref),
            Some(_) => members.contains(&key),
        };
        if !member {
            return Err(Error::refused(
                "estimated request is not a member of the iteration",
            ));
        }
        if !seen.insert(key) {
            return Err(Error::refused("duplicate request share"));
        }
        let (generic, specific) = kinds.entry(&share.request_ref).or_default();
        let overlaps = match share.attempt_ref {
            None => *specific,
            Some(_) => *generic,
        };
        if overlaps {
            return Err(Error::refused(
                "generic and attempt-specific request shares overlap",
            ));
        }
        match share.attempt_ref {
            None => *generic = true,
            Some(_) => *specific = true,
        }
        models.insert(&share.model);
        total += share.duration_ns as u128;
    }
    if models.len() > 1 {
        return Err(Error::refused(
            "request shares must use one estimation model",
        ));
    }
    if total != u128::from(budget) {
        return Err(Error::refused(
            "estimated shares and remainder must equal the measured budget",
        ));
    }
    Ok(ShareBudget {
        iteration_ref: iteration_ref.clone(),
        device_clock: device_clock.clone(),
        budget_ns: budget,
        shares: shares.to_vec(),
        unattributed_ns: unattributed,
    })
}
