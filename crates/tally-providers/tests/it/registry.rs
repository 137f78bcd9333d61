//! `builtins()`: every provider registered once, with the parameters, defaults, facts, surfaces
//! and orders `docs/campaign.md` gives them, and accepted by the real `tally.toml` reader.

use tally_plugin::{Capability, ParamKind, Surface};

#[test]
fn every_capability_lists_its_providers() {
    let registry = tally_providers::builtins();
    let names = |c| registry.names(c);
    assert_eq!(
        names(Capability::VerdictRule),
        ["bootstrap", "min_speedup", "exec"]
    );
    assert_eq!(names(Capability::StopRule), ["limits", "exec"]);
    assert_eq!(
        names(Capability::FactSource),
        ["gpu_hours", "agent_usage", "exec"]
    );
    assert_eq!(
        names(Capability::Section),
        [
            "headline",
            "goal",
            "evaluations",
            "latency",
            "candidates",
            "exec"
        ]
    );
    for capability in Capability::ALL {
        for info in registry.infos(capability) {
            assert!(info.builtin);
            assert!(!info.doc.is_empty(), "{} has no doc", info.name);
            for p in &info.params {
                assert!(!p.doc.is_empty(), "{}.{} has no doc", info.name, p.name);
            }
        }
    }
}

#[test]
fn sections_declare_surfaces_and_order() {
    let registry = tally_providers::builtins();
    let shown: Vec<(String, Option<u32>, Vec<Surface>)> = registry
        .infos(Capability::Section)
        .into_iter()
        .map(|i| (i.name.clone(), i.order, i.surfaces.clone()))
        .collect();
    let both = vec![Surface::Status, Surface::Run];
    assert_eq!(
        shown,
        [
            ("headline".to_string(), Some(100), both.clone()),
            ("goal".to_string(), Some(110), both.clone()),
            ("evaluations".to_string(), Some(170), vec![Surface::Status]),
            ("latency".to_string(), Some(175), both.clone()),
            ("candidates".to_string(), Some(180), both),
            ("exec".to_string(), None, vec![]),
        ]
    );
}

#[test]
fn gpu_hours_supplies_its_facts_with_units() {
    let registry = tally_providers::builtins();
    let info = registry.supplier_of("gpu_usd").unwrap();
    assert_eq!(info.name, "gpu_hours");
    let facts: Vec<(&str, &str, &str)> = info
        .facts
        .iter()
        .map(|f| (f.name.as_str(), f.unit.as_str(), f.doc.as_str()))
        .collect();
    assert_eq!(
        facts,
        [
            (
                "gpu_hours",
                "h",
                "the GPU-hours that the evaluations of the campaign held"
            ),
            ("gpu_usd", "USD", "what those GPU-hours cost, in USD"),
        ]
    );
    let params: Vec<(&str, ParamKind, Option<&serde_json::Value>, bool)> = info
        .params
        .iter()
        .map(|p| (p.name.as_str(), p.kind, p.default.as_ref(), p.required))
        .collect();
    assert_eq!(
        params,
        [
            (
                "gpus",
                ParamKind::Integer,
                Some(&serde_json::json!(1)),
                false
            ),
            ("usd_per_gpu_hour", ParamKind::Number, None, true),
        ]
    );
    let host: Vec<String> = tally_providers::host_facts()
        .into_iter()
        .map(|f| f.name)
        .collect();
    assert_eq!(
        host,
        [
            "runs",
            "keeps",
            "without_keep",
            "hours",
            "head",
            "evaluations"
        ]
    );
}

#[test]
fn the_inference_template_reads_and_builds() {
    let text = r#"
name = "server"
evaluate = ["./evaluate.sh"]

[[metrics]]
name = "tokens_per_s"
direction = "higher"
role = "primary"
repeats = 3

[[metrics]]
name = "p95_ms"
direction = "lower"
role = "guardrail"
margin = 5

[plugins.verdict_rule]
provider = "min_speedup"
min_speedup = 0.05

[plugins.stop_rule]
max_runs = 200
hold_at = { gpu_usd = 50 }

[[plugins.fact_source]]
provider = "gpu_hours"
usd_per_gpu_hour = 2.49

[status]
sections = [{ provider = "latency", rows = 8 }, "candidates"]
"#;
    let registry = tally_providers::builtins();
    let settings = tally_config::parse_settings(text, &registry).unwrap();
    assert_eq!(settings.stop_rule.provider, "limits");
    (registry.verdict_rule("min_speedup").unwrap().build)(&settings.verdict_rule.params)
        .map_err(|_| ())
        .unwrap();
    let stop = (registry.stop_rule("limits").unwrap().build)(&settings.stop_rule.params)
        .map_err(|_| ())
        .unwrap();
    assert_eq!(stop.wanted_facts(), ["runs", "gpu_usd"]);
    (registry.fact_source("gpu_hours").unwrap().build)(&settings.fact_sources[0].params)
        .map_err(|_| ())
        .unwrap();
    let bad = text.replace("usd_per_gpu_hour = 2.49", "usd_per_gpu_hours = 2.49");
    let err = tally_config::parse_settings(&bad, &registry).unwrap_err();
    assert_eq!(
        err.to_string(),
        "plugins.fact_source[0].usd_per_gpu_hours: unknown key; did you mean `usd_per_gpu_hour`?\n\
         plugins.fact_source[0].usd_per_gpu_hour: missing required parameter: add `usd_per_gpu_hour = <number>` (price of one GPU-hour in USD)"
    );
}
