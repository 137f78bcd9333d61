//! `status` (`docs/campaign.md#sections`): the default list is every installed section of the surface in
//! (order, name) order — headline, goal, evaluations, latency, candidates on `status`; `exclude`
//! keeps the default list minus the named sections; an explicit `sections` list replaces it in
//! its own order, with its parameters.

use tally_engine::StatusReport;
use tally_plugin::{Block, Surface};

use crate::lab::{Lab, config, metrics};

const LATENCY: &str = "[[metrics]]\nname = \"p50_ms\"\ndirection = \"lower\"\n";

/// A campaign with the baseline and two judged candidates, each printing a p50 latency.
fn status(extra: &str, surface: Surface) -> StatusReport {
    let lab = Lab::new(&config(3, &format!("{LATENCY}{extra}")));
    lab.respond(|ask| {
        let rev = f64::from(ask.rev);
        metrics(&[("score", 100.0 + rev), ("p50_ms", 20.0 - rev / 3.0)])
    });
    lab.init();
    lab.add(&[1, 2]);
    lab.run();
    lab.engine().status(surface).unwrap()
}

/// `(provider, order, title)` of every section, in display order.
fn shown(report: &StatusReport) -> Vec<(String, u32, String)> {
    report
        .sections
        .iter()
        .map(|s| {
            let rendered = s.result.clone().expect("renders").expect("has something");
            (s.provider.clone(), s.order, rendered.title)
        })
        .collect()
}

fn owned(list: &[(&str, u32, &str)]) -> Vec<(String, u32, String)> {
    list.iter()
        .map(|(p, o, t)| (p.to_string(), *o, t.to_string()))
        .collect()
}

#[test]
fn the_default_list_is_every_status_section_by_order() {
    let report = status("", Surface::Status);
    assert_eq!(
        shown(&report),
        owned(&[
            ("headline", 100, "speed"),
            ("goal", 110, "Goal"),
            ("evaluations", 170, "Evaluations"),
            ("latency", 175, "Latency"),
            ("candidates", 180, "Candidates"),
        ])
    );
    assert_eq!(report.data.candidates.len(), 3);
    assert_eq!(report.facts["runs"], 2.0);
    assert_eq!(report.facts["evaluations"], 3.0);
    assert!(report.fact_errors.is_empty());
}

#[test]
fn the_brief_surface_leaves_out_status_only_sections() {
    let report = status("", Surface::Run);
    let providers: Vec<String> = shown(&report).into_iter().map(|s| s.0).collect();
    assert_eq!(providers, ["headline", "goal", "latency", "candidates"]);
}

#[test]
fn exclude_keeps_the_default_list_minus_the_named_sections() {
    let report = status(
        "[status]\nexclude = [\"latency\", \"goal\"]\n",
        Surface::Status,
    );
    assert_eq!(
        shown(&report),
        owned(&[
            ("headline", 100, "speed"),
            ("evaluations", 170, "Evaluations"),
            ("candidates", 180, "Candidates"),
        ])
    );
}

#[test]
fn an_explicit_list_replaces_the_default_in_its_own_order_with_its_parameters() {
    let report = status(
        "[status]\nsections = [{ provider = \"latency\", rows = 2, metrics = [\"p50_ms\"] }, \
         { provider = \"headline\" }]\n",
        Surface::Status,
    );
    assert_eq!(
        shown(&report),
        owned(&[("latency", 175, "Latency"), ("headline", 100, "speed")])
    );
    let latency = report.sections[0].result.clone().unwrap().unwrap();
    let [Block::Table(table)] = latency.blocks.as_slice() else {
        panic!("one table: {:?}", latency.blocks);
    };
    assert_eq!(table.columns, ["candidate", "verdict", "p50_ms"]);
    // Latest candidate first, two rows; candidate 2's mean p50 is 20 − 2/3.
    let rows: Vec<Vec<&str>> = table
        .rows
        .iter()
        .map(|r| r.iter().skip(1).map(String::as_str).collect())
        .collect();
    assert_eq!(rows, [["keep", "19.33"], ["keep", "19.67"]]);
}
