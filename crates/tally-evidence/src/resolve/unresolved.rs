//! Unresolved references: references that point at no entity of the graph (`docs/evidence.md#unresolved`).
//!
//! The list is built in the reference's order — memberships in their sorted order, then stages,
//! then activities, each in table order — and then stably sorted by `(event_id, kind, ref.id)`,
//! so entries equal on those three keep the build order. The ref's `producer_id` is deliberately
//! not a sort key (the reference does not use it). Which references are checked, and which are
//! never (`backend_request_ref`, `batch_ref`, `correlation_scope`, alignment domains), is fixed
//! here; the tables themselves come from [`super::Resolver`].

use std::fmt;

use rayon::prelude::*;
use rustc_hash::FxHashSet;

use super::table::EntityTable;
use crate::model::{
    ActivityReferenceEvent, EntityRef, IterationEvent, MembershipEvent, RequestEvent, StageEvent,
    Text,
};

/// What kind of entity an unresolved reference should have named. Ordered as the wire strings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReferenceKind {
    /// `attempt`: a membership's `(request_ref, attempt_ref)` is not a request key.
    Attempt,
    /// `iteration`: no iteration has this reference.
    Iteration,
    /// `request`: no request entry (of any attempt) has this reference.
    Request,
}

impl ReferenceKind {
    /// The wire spelling (`attempt`, `iteration`, `request`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Attempt => "attempt",
            Self::Iteration => "iteration",
            Self::Request => "request",
        }
    }
}

impl fmt::Display for ReferenceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A reference that names no entity: `(event_id, kind, ref)` of the reference's output.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UnresolvedReference {
    /// The kept event that holds the reference.
    pub event_id: Text,
    /// What it should have named.
    pub kind: ReferenceKind,
    /// The dangling reference.
    pub reference: EntityRef,
}

/// A question about references, with the last answer kept.
struct Memo<'a, F, T> {
    last: Option<(&'a EntityRef, T)>,
    ask: F,
}

impl<'a, F: Fn(&EntityRef) -> T, T: Copy> Memo<'a, F, T> {
    fn new(ask: F) -> Self {
        Self { last: None, ask }
    }

    fn check(&mut self, reference: &'a EntityRef) -> T {
        match self.last {
            Some((last, answer)) if last == reference => answer,
            _ => {
                let answer = (self.ask)(reference);
                self.last = Some((reference, answer));
                answer
            }
        }
    }
}

/// An activity's entry in [`Checked::activity_iterations`] when it has no `iteration_ref`.
const NO_ITERATION_REF: u32 = u32::MAX;

/// An activity's entry in [`Checked::activity_iterations`] when its `iteration_ref` names no
/// iteration.
const MISSING_ITERATION: u32 = u32::MAX - 1;

/// The references of one kept event that name no entity, as `(kind, reference)`.
type Notes<'a> = Vec<(ReferenceKind, &'a EntityRef)>;

/// The unresolved references of every membership (by table position), stage and activity,
/// each list in table order. Independent of the membership sort, so it runs beside it.
pub(super) struct Checked<'a> {
    memberships: Vec<(u32, Notes<'a>)>,
    stages: Vec<(&'a Text, Notes<'a>)>,
    activities: Vec<(&'a Text, Notes<'a>)>,
    /// For each activity (table order), the table position of the iteration its
    /// `iteration_ref` names; [`NO_ITERATION_REF`] or another value past the iteration table
    /// when there is none. The accountant uses these instead of looking them up again.
    pub activity_iterations: Vec<u32>,
}

/// Checks every reference of `docs/evidence.md#unresolved` against the tables, each table's entries in parallel (the
/// lists keep table order).
pub(super) fn check<'a>(
    requests: &'a EntityTable<RequestEvent>,
    iterations: &'a EntityTable<IterationEvent>,
    stages: &'a EntityTable<StageEvent>,
    memberships: &'a EntityTable<MembershipEvent>,
    activities: &'a EntityTable<ActivityReferenceEvent>,
) -> Checked<'a> {
    let requested: FxHashSet<&EntityRef> = requests.iter().map(|e| &e.body().request_ref).collect();
    // References come in runs (the members of one iteration, its kernels): each worker
    // remembers its last answers.
    let memos = || {
        (
            Memo::new(|r: &EntityRef| requested.contains(r)),
            Memo::new(|r: &EntityRef| iterations.position_of(r)),
        )
    };
    let memberships = (0..memberships.len())
        .into_par_iter()
        .with_min_len(MIN_PER_TASK)
        .map_init(memos, |(is_requested, iteration_of), position| {
            let b = memberships[position].body();
            let mut notes = Notes::new();
            if !is_requested.check(&b.request_ref) {
                notes.push((ReferenceKind::Request, &b.request_ref));
            } else if let Some(attempt) = &b.attempt_ref
                && !requests.contains(&b.request_ref, Some(attempt))
            {
                notes.push((ReferenceKind::Attempt, attempt));
            }
            if iteration_of.check(&b.iteration_ref).is_none() {
                notes.push((ReferenceKind::Iteration, &b.iteration_ref));
            }
            (!notes.is_empty()).then_some((position as u32, notes))
        })
        .flatten()
        .collect();
    let stages = (0..stages.len())
        .into_par_iter()
        .with_min_len(MIN_PER_TASK)
        .map_init(memos, |(is_requested, iteration_of), position| {
            let s = &stages[position];
            let b = s.body();
            let mut notes = Notes::new();
            if let Some(request) = &b.request_ref
                && !is_requested.check(request)
            {
                notes.push((ReferenceKind::Request, request));
            }
            if let Some(iteration) = &b.iteration_ref
                && iteration_of.check(iteration).is_none()
            {
                notes.push((ReferenceKind::Iteration, iteration));
            }
            (!notes.is_empty()).then_some((s.event_id(), notes))
        })
        .flatten()
        .collect();
    let activity_iterations: Vec<u32> = (0..activities.len())
        .into_par_iter()
        .with_min_len(MIN_PER_TASK)
        .map_init(memos, |(_, iteration_of), position| {
            match &activities[position].body().iteration_ref {
                None => NO_ITERATION_REF,
                Some(iteration) => iteration_of
                    .check(iteration)
                    .map_or(MISSING_ITERATION, |p| p as u32),
            }
        })
        .collect();
    // Dangling iteration references are rare: found from the positions, in table order.
    let activities = activity_iterations
        .iter()
        .enumerate()
        .filter(|(_, p)| **p == MISSING_ITERATION)
        .map(|(position, _)| {
            let a = &activities[position];
            let iteration = a.body().iteration_ref.as_ref().expect("has a reference");
            (a.event_id(), vec![(ReferenceKind::Iteration, iteration)])
        })
        .collect();
    Checked {
        memberships,
        stages,
        activities,
        activity_iterations,
    }
}

/// Entries checked per parallel task at least.
const MIN_PER_TASK: usize = 2048;

/// The unresolved list of `docs/evidence.md#unresolved` from the checks.
///
/// The reference lists memberships in their `(session_id, producer_id, event_id)` order before
/// the final stable sort by `(event_id, kind, ref.id)`. Only the order of ties matters there,
/// and ties share their `event_id`, so ordering the memberships with notes by `(event_id,
/// session_id, producer_id)` gives the same list without sorting every membership.
pub(super) fn unresolved_references(
    checked: Checked<'_>,
    memberships: &EntityTable<MembershipEvent>,
) -> Vec<UnresolvedReference> {
    let mut noted: Vec<(&Text, &Text, &Text, Notes<'_>)> = checked
        .memberships
        .into_iter()
        .map(|(position, notes)| {
            let m = &memberships[position as usize];
            let context = m.context();
            (
                m.event_id(),
                &context.session_id,
                &context.producer_id,
                notes,
            )
        })
        .collect();
    // A kept event's identity is unique, so no two entries tie.
    noted.sort_unstable_by(|x, y| (x.0, x.1, x.2).cmp(&(y.0, y.1, y.2)));
    let sorted_memberships = noted
        .into_iter()
        .map(|(event_id, _, _, notes)| (event_id, notes));
    let mut out: Vec<UnresolvedReference> = sorted_memberships
        .chain(checked.stages)
        .chain(checked.activities)
        .flat_map(|(event_id, notes)| {
            notes
                .into_iter()
                .map(move |(kind, reference)| UnresolvedReference {
                    event_id: event_id.clone(),
                    kind,
                    reference: reference.clone(),
                })
        })
        .collect();
    // Stable: ties on (event_id, kind, ref.id) keep the build order above.
    out.sort_by(|x, y| {
        (&*x.event_id, x.kind, &*x.reference.id).cmp(&(&*y.event_id, y.kind, &*y.reference.id))
    });
    out
}
