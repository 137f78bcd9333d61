//! The sequential design of the pairs path (`docs/verdicts.md#more-pairs`): at most two looks at
//! the primary's paired gains, far samples set aside and their pairs re-measured, the error split
//! between the looks.
//!
//! It is a pure walk over the pairs of the case in the order they were measured, so the same
//! case, sampling and parameters always walk the same way: the first `repeats` pairs are the
//! first look; a pair with a far sample ([`far_sample`]) is set aside and the next pair takes
//! its place; an inconclusive but promising first look is followed by a second look over every
//! pair, with all that is left of `max_extra_pairs` added. When the walk needs a pair the case
//! does not have yet, and the host can measure it, the answer is a [`MoreSamples`]. The first
//! look spends [`FIRST_LOOK_TENTHS`] tenths of `1 − confidence` and the second the rest, so by
//! the union bound the two looks together keep a null change at most `1 − confidence` of the
//! time. This module does not decide outcomes; `rule` does, on the comparison it returns.

use tally_model::Direction;

use crate::verdict::compare::pair_positions;
use crate::{
    Bootstrap, Comparison, Confidence, Evidence, FarSample, MoreSamples, SetAside, VerdictCase,
    compare_metric_over, far_sample, format_sig4, format_signed, pairs_to_show,
};

/// Tenths of the error (`1 − confidence`) the first look spends; the second look spends the
/// rest. At 0.95 the looks are at 0.97 and 0.98.
pub const FIRST_LOOK_TENTHS: u32 = 6;

/// An inconclusive first look is followed by a second when the pairs the second would have are
/// at least the pairs that would show the gain if the first look's mean gain and spread held,
/// times this many tenths (`docs/verdicts.md#more-pairs`).
pub const PROMISING_TENTHS: usize = 12;

/// Past this many pairs a gain is too small against its spread to be worth more pairs.
const SHOW_LIMIT: usize = 1000;

/// The host's side of a walk: the first look's pairs, the budget of extra pairs, and whether
/// more can be measured now.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Design {
    pub repeats: usize,
    pub max_extra_pairs: usize,
    pub can_measure: bool,
}

/// Where a walk ended: the comparison of the primary it judges on.
#[derive(Clone, Debug)]
pub(crate) struct Walked {
    /// The primary over the pairs kept.
    pub comparison: Comparison,
    /// The confidence of its bound (the look's share of the error).
    pub confidence: Confidence,
    /// The positions of the pairs kept.
    pub pairs: Vec<usize>,
    /// The pairs set aside.
    pub set_aside: Vec<SetAside>,
    /// What the walk did, for the reason: `; re-measured pair 2: ...; added 2 pairs: ...`.
    pub notes: String,
}

/// A walk's answer.
#[derive(Clone, Debug)]
pub(crate) enum Walk {
    /// Judge on this comparison.
    Judge(Box<Walked>),
    /// Measure more pairs first.
    More(MoreSamples),
}

/// Walks the primary's pairs of `case`; `None` when the design does not apply (no pairs path,
/// fewer than two pairs in a first look, no extra pairs allowed, or a first look that is not
/// complete): the rule then compares every pair at its own confidence, as a fixed design.
pub(crate) fn walk(bootstrap: &Bootstrap, case: &VerdictCase, design: &Design) -> Option<Walk> {
    let repeats = design.repeats;
    let positions = pair_positions(&case.primary, &case.candidate, &case.bar)?;
    if design.max_extra_pairs == 0 || repeats < 2 || positions.len() < repeats {
        return None;
    }
    let first_confidence = bootstrap.confidence.spend(FIRST_LOOK_TENTHS);
    let second_confidence = bootstrap.confidence.spend(10 - FIRST_LOOK_TENTHS);
    let mut walker = Walker {
        case,
        active: positions[..repeats].to_vec(),
        next: repeats,
        limit: repeats + design.max_extra_pairs,
        can_measure: design.can_measure,
        set_aside: Vec::new(),
        positions,
    };
    // The first look.
    if let Some(more) = walker.screen(repeats) {
        return Some(Walk::More(more));
    }
    let first = walker.compare(bootstrap, first_confidence)?;
    // Whether the first look calls for a second: inconclusive, pairs left in the budget, and
    // promising with them.
    let inconclusive = first.gain > 0.0 && first.bound().is_none_or(|b| b <= 0.0);
    let budget = walker.limit.saturating_sub(walker.next);
    let shown = if inconclusive && budget > 0 {
        promising(&first, second_confidence, walker.active.len() + budget)
    } else {
        None
    };
    let available = walker.positions.len();
    let owed = walker.limit.saturating_sub(available);
    if walker.next == available {
        if let Some(shown) = shown.filter(|_| walker.can_measure) {
            let reason = format!(
                "add {}: the first {} are inconclusive ({}); about {shown} pairs would show a \
                 gain this size",
                count(budget),
                walker.active.len(),
                bound_text(&first, first_confidence)
            );
            return Some(Walk::More(MoreSamples {
                pairs: u32::try_from(budget).unwrap_or(u32::MAX),
                reason,
            }));
        }
        return Some(Walk::Judge(Box::new(walker.walked(
            first,
            first_confidence,
            String::new(),
        ))));
    }
    // The second look: every later pair (those the first asked for, or measured anyway, such
    // as a `tally candidate remeasure`).
    let first_pairs = walker.active.len();
    let added = available - walker.next;
    walker
        .active
        .extend_from_slice(&walker.positions[walker.next..]);
    walker.next = available;
    if shown.is_some() && walker.can_measure && owed > 0 {
        let reason = format!(
            "add {}: the second look has {} of its {} pairs",
            count(owed),
            available,
            walker.limit
        );
        return Some(Walk::More(MoreSamples {
            pairs: u32::try_from(owed).unwrap_or(u32::MAX),
            reason,
        }));
    }
    if let Some(more) = walker.screen(walker.active.len()) {
        return Some(Walk::More(more));
    }
    let second = walker.compare(bootstrap, second_confidence)?;
    let first_text = bound_text(&first, first_confidence);
    let note = if inconclusive {
        format!(
            "; added {}: the first {first_pairs} were inconclusive ({first_text})",
            count(added)
        )
    } else {
        format!(
            "; with {} measured after the first {first_pairs} ({first_text})",
            count(added)
        )
    };
    Some(Walk::Judge(Box::new(walker.walked(
        second,
        second_confidence,
        note,
    ))))
}

/// The state of a walk.
struct Walker<'a> {
    case: &'a VerdictCase,
    /// The positions of the case's complete pairs, in order.
    positions: Vec<usize>,
    /// The positions of the pairs the next look compares.
    active: Vec<usize>,
    /// How many of `positions` the walk has taken.
    next: usize,
    /// `repeats + max_extra_pairs`: how many pairs the walk may ask for in all.
    limit: usize,
    can_measure: bool,
    set_aside: Vec<SetAside>,
}

impl Walker<'_> {
    /// Sets aside the pair of `active` with the farthest far sample, one at a time, taking the
    /// next pair of the case in its place, as long as one is found; keeps `target` pairs while
    /// the case has pairs, asks for the pairs it lacks when the budget and the host allow, and
    /// otherwise goes on with fewer.
    fn screen(&mut self, target: usize) -> Option<MoreSamples> {
        while let Some(far) = self.far() {
            let pair = far.index;
            self.set_aside.push(SetAside {
                pair,
                far,
                replaced: false,
            });
            self.active.retain(|p| *p != pair);
            while self.active.len() < target && self.next < self.positions.len() {
                self.active.push(self.positions[self.next]);
                self.next += 1;
                if let Some(s) = self.set_aside.iter_mut().find(|s| !s.replaced) {
                    s.replaced = true;
                }
            }
            if self.active.len() < target {
                let owed = self.limit.saturating_sub(self.positions.len());
                if self.can_measure && owed > 0 {
                    let pairs = (target - self.active.len()).min(owed);
                    let waiting: Vec<String> = self
                        .set_aside
                        .iter()
                        .filter(|s| !s.replaced)
                        .map(|s| format!("pair {}: {}", s.pair + 1, self.describe(&s.far, "is")))
                        .collect();
                    return Some(MoreSamples {
                        pairs: u32::try_from(pairs).unwrap_or(u32::MAX),
                        reason: format!("re-measure {}", waiting.join("; ")),
                    });
                }
            }
        }
        None
    }

    /// The farthest far sample of the active pairs, with `index` the pair's position in the
    /// case.
    fn far(&self) -> Option<FarSample> {
        let name = &self.case.primary.name;
        let values = |side: &crate::Side| -> Vec<f64> {
            let all = side.samples.get(name).map_or(&[][..], Vec::as_slice);
            self.active.iter().map(|p| all[*p]).collect()
        };
        let mut far = far_sample(&values(&self.case.candidate), &values(&self.case.bar))?;
        far.index = self.active[far.index];
        Some(far)
    }

    fn compare(&self, bootstrap: &Bootstrap, confidence: Confidence) -> Option<Comparison> {
        let bootstrap = Bootstrap {
            confidence,
            ..*bootstrap
        };
        let case = self.case;
        compare_metric_over(
            &bootstrap,
            &case.primary,
            &case.candidate,
            &case.bar,
            Some(&self.active),
        )
    }

    /// The end of the walk, with the notes of the pairs set aside before `extra`.
    fn walked(self, comparison: Comparison, confidence: Confidence, extra: String) -> Walked {
        let mut notes = String::new();
        for s in &self.set_aside {
            let verb = if s.replaced {
                "re-measured"
            } else {
                "set aside"
            };
            notes.push_str(&format!(
                "; {verb} pair {}: {}",
                s.pair + 1,
                self.describe(&s.far, "was")
            ));
        }
        notes.push_str(&extra);
        Walked {
            comparison,
            confidence,
            pairs: self.active,
            set_aside: self.set_aside,
            notes,
        }
    }

    /// `the bar's tok_s 80.12 was 19.8% below its side's median 100.0`.
    fn describe(&self, far: &FarSample, verb: &str) -> String {
        let relative = far.relative();
        let way = if relative < 0.0 { "below" } else { "above" };
        format!(
            "the {}'s {} {} {verb} {:.1}% {way} its side's median {}",
            far.side.as_str(),
            self.case.primary.name,
            format_sig4(far.value),
            relative.abs() * 100.0,
            format_sig4(far.median)
        )
    }
}

/// Whether a second look of `after` pairs is worth measuring: `Some(n)`, with `n` the pairs that
/// would show the first look's gain at the second look's confidence if its mean and spread held,
/// when `n · 10 ≤ after · PROMISING_TENTHS`.
fn promising(first: &Comparison, confidence: Confidence, after: usize) -> Option<usize> {
    let Evidence::Pairs {
        spread: Some(sd), ..
    } = first.evidence
    else {
        return None;
    };
    let shown = pairs_to_show(first.gain, sd, confidence, SHOW_LIMIT)?;
    (shown * 10 <= after * PROMISING_TENTHS).then_some(shown)
}

/// `97% worst case -0.4100` in the metric's orientation, or `no bound`.
fn bound_text(comparison: &Comparison, confidence: Confidence) -> String {
    match comparison.bound() {
        Some(bound) => {
            let oriented = match comparison.direction {
                Direction::Higher => bound,
                Direction::Lower => -bound,
            };
            format!(
                "{} worst case {}",
                confidence.percent(),
                format_signed(oriented)
            )
        }
        None => "no bound".to_owned(),
    }
}

/// `1 pair`, `2 pairs`.
fn count(n: usize) -> String {
    if n == 1 {
        "1 pair".to_owned()
    } else {
        format!("{n} pairs")
    }
}
