//! The event-identity index: which `(session_id, producer_id, event_id)` have been seen, and with
//! what content (`docs/evidence.md#dedup`).
//!
//! Most identities belong to an event kept in an entity table, so the index stores no strings for
//! them: a slot is `(32-bit hash, location)` (8 bytes), the location names a table and position,
//! and a lookup verifies the candidate against the kept event's own context and `event_id`. The
//! few identities that are not the kept representative of any table (artifact and capability
//! records, and duplicates under another `event_id` that lost the smallest-id tie-break) are
//! kept as [`SideIdentity`] records holding their strings. Lookups are therefore exact.
//!
//! This module only stores and finds; deciding duplicate vs conflict is [`super::Resolver`]'s.

use std::hash::{Hash, Hasher};

use hashbrown::HashTable;
use hashbrown::hash_table::{Entry, VacantEntry};
use rustc_hash::FxHasher;

use super::table::{fold, spread};
use crate::fingerprint::Fingerprint;
use crate::model::Text;

/// The entity tables, as named by a [`Location`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TableKind {
    Requests,
    Iterations,
    Stages,
    Memberships,
    Activities,
    Alignments,
}

const KINDS: [TableKind; 6] = [
    TableKind::Requests,
    TableKind::Iterations,
    TableKind::Stages,
    TableKind::Memberships,
    TableKind::Activities,
    TableKind::Alignments,
];

/// Where the event of an identity is: a kept table entry, or a side record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Location {
    Entity(TableKind, u32),
    Side(u32),
}

const INDEX_BITS: u32 = 29;
const INDEX_MASK: u32 = (1 << INDEX_BITS) - 1;
const SIDE_TAG: u32 = 7;

/// The largest side-record index a [`Location`] can hold.
pub(super) const MAX_SIDE: u32 = INDEX_MASK;

impl Location {
    fn encode(self) -> u32 {
        match self {
            Self::Entity(kind, position) => ((kind as u32) << INDEX_BITS) | position,
            Self::Side(index) => (SIDE_TAG << INDEX_BITS) | index,
        }
    }

    fn decode(code: u32) -> Self {
        let (tag, index) = (code >> INDEX_BITS, code & INDEX_MASK);
        if tag == SIDE_TAG {
            Self::Side(index)
        } else {
            Self::Entity(KINDS[tag as usize], index)
        }
    }
}

/// An identity whose event is not kept in any table.
#[derive(Clone, Debug)]
pub(super) struct SideIdentity {
    pub session_id: Text,
    pub producer_id: Text,
    pub event_id: Text,
    pub fingerprint: Fingerprint,
}

/// The identity of a kept event, to verify an index candidate against.
pub(super) struct IdentityView<'a> {
    pub session_id: &'a str,
    pub producer_id: &'a str,
    pub event_id: &'a str,
}

/// Hash of `(session_id, producer_id, event_id)`; `str`'s `Hash` terminates each part, so the
/// parts cannot run into each other.
pub(super) fn identity_hash(session_id: &str, producer_id: &str, event_id: &str) -> u64 {
    let mut h = FxHasher::default();
    session_id.hash(&mut h);
    producer_id.hash(&mut h);
    event_id.hash(&mut h);
    h.finish()
}

/// The set of seen identities.
#[derive(Debug, Default)]
pub(super) struct Identities {
    index: HashTable<(u32, u32)>,
    side: Vec<SideIdentity>,
}

impl Identities {
    /// Reserves room for `additional` more identities.
    pub fn reserve(&mut self, additional: usize) {
        self.index.reserve(additional, |&(h, _)| spread(h));
    }

    /// Number of distinct identities.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Reads the index where the identity hashing to `hash` would be (a hint for a lookup that
    /// follows soon; it changes nothing).
    pub fn touch(&self, hash: u64) {
        std::hint::black_box(self.index.find(spread(fold(hash)), |_| false));
    }

    /// Looks up the identity `(session_id, producer_id, event_id)` hashing to `hash`, in one
    /// probe of the index: where its event is when known, else the place to record it. `entity`
    /// shows the identity of a kept table entry.
    pub fn lookup<'a, 't>(
        &'a mut self,
        hash: u64,
        session_id: &str,
        producer_id: &str,
        event_id: &str,
        entity: impl Fn(TableKind, u32) -> IdentityView<'t>,
    ) -> Lookup<'a> {
        let folded = fold(hash);
        let side = &self.side;
        let view = |location| match location {
            Location::Entity(kind, position) => entity(kind, position),
            Location::Side(index) => side_view(&side[index as usize]),
        };
        let mut known = None;
        let entry = self.index.entry(
            spread(folded),
            |&(h, code)| {
                if h != folded {
                    return false;
                }
                let location = Location::decode(code);
                let seen = view(location);
                let same = seen.event_id == event_id
                    && seen.producer_id == producer_id
                    && seen.session_id == session_id;
                if same {
                    known = Some(location);
                }
                same
            },
            |&(h, _)| spread(h),
        );
        match entry {
            Entry::Occupied(_) => Lookup::Known(known.expect("the matching slot was seen")),
            Entry::Vacant(slot) => Lookup::New(NewIdentity {
                slot,
                side: &mut self.side,
                folded,
            }),
        }
    }

    /// The fingerprint of the event of side record `index` (a location [`Identities::lookup`]
    /// gave).
    pub fn side_fingerprint(&self, index: u32) -> Fingerprint {
        self.side[index as usize].fingerprint
    }
}

fn side_view(s: &SideIdentity) -> IdentityView<'_> {
    IdentityView {
        session_id: &s.session_id,
        producer_id: &s.producer_id,
        event_id: &s.event_id,
    }
}

/// What [`Identities::lookup`] found.
pub(super) enum Lookup<'a> {
    /// A known identity: where its event is.
    Known(Location),
    /// A new identity, to be recorded.
    New(NewIdentity<'a>),
}

/// The place of a new identity in the index, to be recorded with where its event went.
pub(super) struct NewIdentity<'a> {
    slot: VacantEntry<'a, (u32, u32)>,
    side: &'a mut Vec<SideIdentity>,
    folded: u32,
}

/// Stores a side record, returning its location (`None` past [`MAX_SIDE`]).
fn add_side(sides: &mut Vec<SideIdentity>, side: SideIdentity) -> Option<Location> {
    let index = u32::try_from(sides.len()).ok().filter(|&i| i <= MAX_SIDE)?;
    sides.push(side);
    Some(Location::Side(index))
}

impl NewIdentity<'_> {
    /// The identity's event is the kept entry at `location`.
    pub fn at(self, location: Location) {
        self.slot.insert((self.folded, location.encode()));
    }

    /// The identity's event is kept in no table: `side` holds it. `None` past [`MAX_SIDE`]
    /// side records (nothing is recorded).
    pub fn aside(self, side: SideIdentity) -> Option<()> {
        let location = add_side(self.side, side)?;
        self.slot.insert((self.folded, location.encode()));
        Some(())
    }

    /// The identity's event replaced the kept entry at `here`, whose own identity (hashing to
    /// `old_hash`) becomes the side record `old`. `None` past [`MAX_SIDE`] side records
    /// (nothing is recorded).
    pub fn replacing(self, here: Location, old_hash: u64, old: SideIdentity) -> Option<()> {
        let moved = add_side(self.side, old)?;
        let index = self.slot.into_table();
        let (old_folded, code) = (fold(old_hash), here.encode());
        if let Some(slot) =
            index.find_mut(spread(old_folded), |&(h, c)| h == old_folded && c == code)
        {
            slot.1 = moved.encode();
        }
        index.insert_unique(spread(self.folded), (self.folded, code), |&(h, _)| {
            spread(h)
        });
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_round_trip() {
        for location in [
            Location::Entity(TableKind::Requests, 0),
            Location::Entity(TableKind::Alignments, INDEX_MASK),
            Location::Entity(TableKind::Memberships, 12345),
            Location::Side(0),
            Location::Side(MAX_SIDE),
        ] {
            assert_eq!(Location::decode(location.encode()), location);
        }
    }

    #[test]
    fn identity_parts_do_not_run_together() {
        assert_ne!(identity_hash("ab", "c", "d"), identity_hash("a", "bc", "d"));
    }
}
