//! Same scenario and delivery, same bytes; record counts scale with the request count.

use tally_artifact::write::ArtifactForm;
use tally_evidence::{EventType, InferenceRecord};
use tally_synth::{Delivery, RECORDS_PER_REQUEST, Scenario, write_artifact_to};

fn bytes(scenario: &Scenario, delivery: &Delivery, form: ArtifactForm) -> Vec<u8> {
    write_artifact_to(scenario, delivery, form, Vec::new())
        .unwrap()
        .0
}

fn faulty() -> Delivery {
    Delivery {
        duplicates: 0.05,
        shuffle: true,
        shuffle_window: 1000,
        legacy: 17,
    }
}

#[test]
fn same_seed_gives_identical_bytes() {
    let scenario = Scenario {
        unresolved: 5,
        ..Scenario::new(42, 150)
    };
    for form in [ArtifactForm::V2, ArtifactForm::V4] {
        for delivery in [Delivery::default(), faulty()] {
            let a = bytes(&scenario, &delivery, form);
            let b = bytes(&scenario, &delivery, form);
            assert!(!a.is_empty());
            assert_eq!(a, b, "{form:?} {delivery:?}");
        }
    }
}

#[test]
fn different_seeds_give_different_runs() {
    let a = bytes(
        &Scenario::new(1, 50),
        &Delivery::default(),
        ArtifactForm::V2,
    );
    let b = bytes(
        &Scenario::new(2, 50),
        &Delivery::default(),
        ArtifactForm::V2,
    );
    assert_ne!(a, b);
}

#[test]
fn record_count_scales_with_requests() {
    let small = Scenario::new(3, 400).records().count() as f64;
    let large = Scenario::new(3, 4000).records().count() as f64;
    let per_request = large / 4000.0;
    assert!(
        (RECORDS_PER_REQUEST * 0.85..RECORDS_PER_REQUEST * 1.15).contains(&per_request),
        "{per_request} records per request"
    );
    let ratio = large / small;
    assert!(
        (8.5..11.5).contains(&ratio),
        "10x the requests gave {ratio}x the records"
    );
}

#[test]
fn target_record_count_is_approached() {
    let scenario = Scenario::with_target_records(9, 40_000);
    let n = scenario.records().count() as f64;
    assert!((34_000.0..46_000.0).contains(&n), "{n}");
}

#[test]
fn every_record_type_is_present() {
    let records: Vec<InferenceRecord> = Scenario::new(5, 300).records().collect();
    let events = crate::events(&records);
    for t in EventType::ALL {
        let n = events.iter().filter(|e| e.event_type() == t).count();
        assert!(n > 0, "no {}", t.as_str());
    }
    assert_eq!(
        events
            .iter()
            .filter(|e| e.event_type() == EventType::Artifact)
            .count(),
        1
    );
    // The first record is the artifact identity.
    assert_eq!(
        crate::events(&records[..1])[0].event_type(),
        EventType::Artifact
    );
}
