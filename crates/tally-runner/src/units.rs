//! The per-unit results file (`docs/campaign.md#units`).
//!
//! Owns: parsing and checking what the evaluate command wrote at `TALLY_UNITS_FILE`:
//! `{"<metric>": {"<unit id>": number, ...}, ...}`. Every metric in the file must have been
//! printed as a `METRIC` line, have at least one unit, only finite numbers, and its contributions
//! must sum to the printed value within a relative tolerance of [`SUM_TOLERANCE`]
//! (`|sum − value| ≤ 1e-3 · max(|sum|, |value|)`). A file with no metrics (`{}`) is valid and
//! simply carries no units. The reason a file is rejected is returned as text: the caller makes
//! it the sample's `bad units file: <why>` failure.
//!
//! Deliberately absent: reading the file (the sample runner does, so this stays pure) and any
//! statistics over units (`tally-stats` bootstraps over them).

use std::collections::BTreeMap;

use serde_json::Value;

/// Relative tolerance between a metric's printed value and the sum of its units.
pub const SUM_TOLERANCE: f64 = 1e-3;

/// Per-unit contributions: metric name → unit id → contribution. Sorted by name and id.
pub type Units = BTreeMap<String, BTreeMap<String, f64>>;

/// Parses and checks a units file against the metrics the same sample printed. `Err` holds the
/// reason, one clause without a trailing period (e.g. ``metric `tok_s` has no units``).
pub fn parse_units(text: &str, printed: &BTreeMap<String, f64>) -> Result<Units, String> {
    let value: Value = serde_json::from_str(text).map_err(|err| {
        if ["NaN", "Infinity"].iter().any(|t| text.contains(t)) {
            format!("it contains NaN or Infinity, which are not finite numbers ({err})")
        } else {
            format!("it is not valid JSON ({err})")
        }
    })?;
    let Value::Object(metrics) = value else {
        return Err(format!(
            "expected an object of metrics {{\"<metric>\": {{\"<unit id>\": number}}}}, found {}",
            kind(&value)
        ));
    };
    let mut units = Units::new();
    for (metric, contributions) in metrics {
        let Value::Object(contributions) = contributions else {
            return Err(format!(
                "metric `{metric}` should map unit ids to numbers, found {}",
                kind(&contributions)
            ));
        };
        let Some(&printed_value) = printed.get(&metric) else {
            return Err(format!(
                "metric `{metric}` has units but was not printed as a METRIC line"
            ));
        };
        if contributions.is_empty() {
            return Err(format!("metric `{metric}` has no units"));
        }
        let mut values = BTreeMap::new();
        for (unit, contribution) in contributions {
            let number = contribution.as_f64().filter(|v| v.is_finite());
            let Some(number) = number else {
                return Err(format!(
                    "unit `{unit}` of metric `{metric}` is not a finite number ({contribution})"
                ));
            };
            values.insert(unit, number);
        }
        let sum: f64 = values.values().sum();
        let scale = sum.abs().max(printed_value.abs());
        if (sum - printed_value).abs() > SUM_TOLERANCE * scale || !sum.is_finite() {
            return Err(format!(
                "the units of metric `{metric}` sum to {sum} but it printed {printed_value} \
                 (relative tolerance {SUM_TOLERANCE})"
            ));
        }
        units.insert(metric, values);
    }
    Ok(units)
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn printed(pairs: &[(&str, f64)]) -> BTreeMap<String, f64> {
        pairs.iter().map(|&(n, v)| (n.to_owned(), v)).collect()
    }

    #[test]
    fn contributions_that_sum_to_the_metric_are_kept_sorted() {
        let units = parse_units(
            r#"{"tok_s": {"q2": 60.0, "q1": 40.04}, "lat": {"a": 1}}"#,
            &printed(&[("tok_s", 100.0), ("lat", 1.0), ("other", 5.0)]),
        )
        .unwrap();
        assert_eq!(units.len(), 2);
        assert_eq!(units["tok_s"].keys().collect::<Vec<_>>(), ["q1", "q2"]);
        assert_eq!(units["tok_s"]["q1"], 40.04);
    }

    #[test]
    fn an_empty_file_object_carries_no_units() {
        assert_eq!(parse_units("{}", &printed(&[])).unwrap(), Units::new());
    }

    #[test]
    fn the_tolerance_is_relative_one_in_a_thousand() {
        let at = |sum: f64| {
            parse_units(
                &format!(r#"{{"m": {{"u": {sum}}}}}"#),
                &printed(&[("m", 1000.0)]),
            )
        };
        assert!(at(1000.99).is_ok());
        assert!(at(999.01).is_ok());
        assert_eq!(
            at(1001.5).unwrap_err(),
            "the units of metric `m` sum to 1001.5 but it printed 1000 (relative tolerance 0.001)"
        );
        // A zero metric needs contributions that sum to zero.
        let zero = parse_units(r#"{"m": {"a": 1, "b": -1}}"#, &printed(&[("m", 0.0)]));
        assert!(zero.is_ok());
    }

    #[test]
    fn each_rejection_says_why() {
        let p = printed(&[("m", 3.0)]);
        assert_eq!(
            parse_units(r#"{"m": {}}"#, &p).unwrap_err(),
            "metric `m` has no units"
        );
        assert_eq!(
            parse_units(r#"{"x": {"a": 1}}"#, &p).unwrap_err(),
            "metric `x` has units but was not printed as a METRIC line"
        );
        assert_eq!(
            parse_units(r#"{"m": {"a": "3"}}"#, &p).unwrap_err(),
            "unit `a` of metric `m` is not a finite number (\"3\")"
        );
        assert_eq!(
            parse_units(r#"{"m": {"a": null}}"#, &p).unwrap_err(),
            "unit `a` of metric `m` is not a finite number (null)"
        );
        assert_eq!(
            parse_units(r#"{"m": [1, 2]}"#, &p).unwrap_err(),
            "metric `m` should map unit ids to numbers, found an array"
        );
        assert!(
            parse_units("[1]", &p)
                .unwrap_err()
                .starts_with("expected an object of metrics")
        );
        assert!(
            parse_units(r#"{"m": {"a": NaN}}"#, &p)
                .unwrap_err()
                .starts_with("it contains NaN or Infinity")
        );
        assert!(parse_units(r#"{"m": {"a": 1e999}}"#, &p).is_err());
        assert!(
            parse_units("", &p)
                .unwrap_err()
                .starts_with("it is not valid JSON")
        );
    }

    #[test]
    fn overflowing_sums_are_rejected() {
        let p = printed(&[("m", f64::MAX)]);
        let text = format!(r#"{{"m": {{"a": {max:e}, "b": {max:e}}}}}"#, max = f64::MAX);
        let err = parse_units(&text, &p).unwrap_err();
        assert!(err.contains("sum to inf"), "{err}");
    }
}
