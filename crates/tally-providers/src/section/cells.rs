//! How the built-in sections spell things in cells and figures: candidates (`#7 1a2b3c4`),
//! money (`$41.20`), facts in their units, signed deltas and percentages. One place, so every
//! section spells a candidate or a dollar the same way. Layout is not decided here.

use tally_plugin::{CampaignSummary, CandidateView, MetricView};
use tally_stats::{format_sig4, format_signed};

/// The cell for a missing value.
pub(crate) const NONE: &str = "—";

/// `#7 1a2b3c4`: the id and the short revision.
pub(crate) fn candidate(c: &CandidateView) -> String {
    let short: String = c.revision.chars().take(7).collect();
    if short.is_empty() {
        format!("#{}", c.id)
    } else {
        format!("#{} {short}", c.id)
    }
}

/// `candidate#7 1a2b3c4` for prose.
pub(crate) fn candidate_long(c: &CandidateView) -> String {
    format!("candidate{}", candidate(c))
}

/// `$41.20`.
pub(crate) fn money(x: f64) -> String {
    if x < 0.0 {
        format!("-${:.2}", -x)
    } else {
        format!("${x:.2}")
    }
}

/// A number rounded to 2 decimals, never `-0.00`.
pub(crate) fn two_decimals(x: f64) -> String {
    let text = format!("{x:.2}");
    if text == "-0.00" { "0.00".into() } else { text }
}

/// A fact's value as its unit suggests: money and hours with 2 decimals, whole numbers as
/// integers, anything else to 4 significant figures.
pub(crate) fn fact_value(value: f64, unit: &str) -> String {
    if unit == "USD" || unit == "h" {
        two_decimals(value)
    } else if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format_sig4(value)
    }
}

/// A metric value: 4 significant figures.
pub(crate) fn metric(x: f64) -> String {
    format_sig4(x)
}

/// `+12.30 (+4.1%)`: `value − base`, and the change relative to `|base|` when it is not 0.
pub(crate) fn delta(value: f64, base: f64) -> String {
    let diff = value - base;
    if base == 0.0 {
        format_signed(diff)
    } else {
        format!("{} ({})", format_signed(diff), percent(diff / base.abs()))
    }
}

/// `+4.1%`, `-0.3%`, `0.0%`.
pub(crate) fn percent(fraction: f64) -> String {
    let text = format!("{:+.1}%", fraction * 100.0);
    match text.as_str() {
        "+0.0%" | "-0.0%" => "0.0%".into(),
        _ => text,
    }
}

/// The campaign's primary metric (`docs/campaign.md#metrics`: exactly one; the first as a fallback).
pub(crate) fn primary(campaign: &CampaignSummary) -> Option<&MetricView> {
    campaign
        .metrics
        .iter()
        .find(|m| m.role == "primary")
        .or_else(|| campaign.metrics.first())
}
