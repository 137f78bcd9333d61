//! Delivery faults: legacy records, redeliveries and shuffling.

use std::collections::BTreeMap;

use tally_artifact::write::{ArtifactForm, to_jsonl};
use tally_evidence::{EventBody, InferenceRecord};
use tally_synth::{Delivery, Scenario};

fn lines(records: &[InferenceRecord]) -> BTreeMap<String, usize> {
    let bytes = to_jsonl(records, ArtifactForm::V2).unwrap();
    let mut counts = BTreeMap::new();
    for line in String::from_utf8(bytes).unwrap().lines() {
        *counts.entry(line.to_owned()).or_insert(0) += 1;
    }
    counts
}

#[test]
fn legacy_records_are_exactly_as_many_as_asked() {
    let scenario = Scenario::new(11, 200);
    for legacy in [0, 1, 7, 200, 450] {
        let delivery = Delivery {
            legacy,
            ..Delivery::default()
        };
        let records: Vec<_> = scenario.delivered(&delivery).unwrap().collect();
        let n = records
            .iter()
            .filter(|r| matches!(r, InferenceRecord::Legacy(_)))
            .count() as u64;
        assert_eq!(n, legacy);
    }
}

#[test]
fn legacy_records_are_version_one_inference_json() {
    let delivery = Delivery {
        legacy: 12,
        ..Delivery::default()
    };
    for record in Scenario::new(11, 60).delivered(&delivery).unwrap() {
        if let InferenceRecord::Legacy(legacy) = record {
            let value: serde_json::Value = serde_json::from_str(&legacy.json).unwrap();
            assert!(value["event_type"].as_str().unwrap().starts_with("infer."));
            let version = value
                .get("schema_version")
                .map_or(1, |v| v.as_i64().unwrap());
            assert_eq!(version, 1, "{}", legacy.json);
        }
    }
}

#[test]
fn redeliveries_add_about_the_asked_fraction() {
    let scenario = Scenario::new(12, 500);
    let plain = scenario.records().count() as f64;
    let delivery = Delivery {
        duplicates: 0.1,
        ..Delivery::default()
    };
    let with_dups = scenario.delivered(&delivery).unwrap().count() as f64;
    let fraction = with_dups / plain - 1.0;
    assert!((0.08..0.12).contains(&fraction), "{fraction}");
}

#[test]
fn redeliveries_are_copies_or_renamed_entities() {
    let scenario = Scenario::new(13, 100);
    let plain: Vec<_> = scenario.records().collect();
    let delivery = Delivery {
        duplicates: 0.3,
        ..Delivery::default()
    };
    let delivered: Vec<_> = scenario.delivered(&delivery).unwrap().collect();
    let originals = lines(&plain);
    let mut renamed = 0;
    for (line, count) in lines(&delivered) {
        match originals.get(&line) {
            Some(&n) => assert!(count == n || count == n + 1, "{line}"),
            None => {
                renamed += count;
                assert!(
                    line.contains("#redelivered") || line.contains("0-redelivered/"),
                    "{line}"
                );
            }
        }
    }
    assert!(renamed > 0);
    // Renamed copies are never artifact or capability records.
    for record in &delivered {
        if let InferenceRecord::Event(e) = record
            && e.event_id().contains("redelivered")
        {
            assert!(!matches!(
                e.body(),
                EventBody::Artifact(_) | EventBody::Capabilities(_)
            ));
        }
    }
}

#[test]
fn shuffle_permutes_the_same_records() {
    let scenario = Scenario::new(14, 200);
    let ordered = Delivery {
        duplicates: 0.05,
        legacy: 9,
        ..Delivery::default()
    };
    for window in [0, 500] {
        let shuffled = Delivery {
            shuffle: true,
            shuffle_window: window,
            ..ordered.clone()
        };
        let a: Vec<_> = scenario.delivered(&ordered).unwrap().collect();
        let b: Vec<_> = scenario.delivered(&shuffled).unwrap().collect();
        assert_ne!(a, b, "window {window} changed nothing");
        assert_eq!(lines(&a), lines(&b), "window {window}");
    }
}

#[test]
fn bad_parameters_are_refused() {
    let scenario = Scenario::new(1, 10);
    let delivery = Delivery {
        duplicates: 1.5,
        ..Delivery::default()
    };
    let err = scenario.delivered(&delivery).err().unwrap().to_string();
    assert!(err.contains("duplicates must be a fraction"), "{err}");
    let empty = Scenario::new(1, 0);
    let err = empty
        .delivered(&Delivery::default())
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("requests must be at least 1"), "{err}");
}
