//! Verdict rules over a case (`docs/campaign.md#verdict`): the case and judgement types that also cross
//! the JSON protocol of out-of-tree rules (`docs/campaign.md#external-providers`), the comparison of one metric, the
//! sequential design that may ask for more pairs (`looks`, `ruling`), and the built-in rules
//! `bootstrap` and `min_speedup`.
//!
//! Nothing here reads a store or runs a benchmark; the engine assembles the case.

pub(crate) mod case;
pub(crate) mod compare;
pub(crate) mod looks;
pub(crate) mod min_speedup;
pub(crate) mod rule;
pub(crate) mod ruling;
