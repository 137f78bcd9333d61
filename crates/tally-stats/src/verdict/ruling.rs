//! What a host tells a rule about how a case's pairs are being measured ([`Sampling`]), and the
//! rule's answer when it may ask for more ([`Ruling`]): a judgement, or "measure more pairs"
//! (`docs/verdicts.md#more-pairs`).
//!
//! A rule asked through [`crate::BootstrapRule::decide`] (and every out-of-tree rule, whose JSON
//! protocol has only the case and the judgement) never asks for more: it judges the pairs it has.
//! This module holds data only; deciding lives in `rule` and `looks`.

use crate::{FarSample, Judgement};

/// How the pairs of a case were measured, and whether more can be measured now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sampling {
    /// The pairs of the first look: the campaign's `repeats`.
    pub repeats: u32,
    /// Whether the host can measure more pairs of this case now. `false` when the evaluation
    /// stopped at a failure, or when a verdict is replayed or set from measurements added by
    /// hand: the rule then judges the pairs it has.
    pub can_measure: bool,
}

/// A rule's answer when it may ask for more pairs.
#[derive(Clone, Debug, PartialEq)]
pub enum Ruling {
    /// The verdict.
    Judged(Judgement),
    /// Measure more pairs, then ask again with them in the case.
    More(MoreSamples),
}

/// A request for more pairs of the same candidate and bar, measured after the ones in the case.
#[derive(Clone, Debug, PartialEq)]
pub struct MoreSamples {
    /// How many pairs (at least 1).
    pub pairs: u32,
    /// Why, in one line: `re-measure pair 2: the bar's tok_s 80.12 is 19.8% below ...` or
    /// `add 2 pairs: the first 3 are inconclusive ...`.
    pub reason: String,
}

/// A pair the rule left out of its comparison because one of its samples was far from its
/// side's others ([`crate::far_sample`]). It stays in the store and in the case; only the
/// comparison leaves it out.
#[derive(Clone, Debug, PartialEq)]
pub struct SetAside {
    /// Its position in the case's sample lists (0-based; the reason says `pair <pair + 1>`).
    pub pair: usize,
    /// Its far sample (its `index` is `pair`).
    pub far: FarSample,
    /// Whether a later pair took its place.
    pub replaced: bool,
}
