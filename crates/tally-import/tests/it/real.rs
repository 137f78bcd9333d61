//! The importers on every real trace: exact per-device and per-step figures, equal both to the
//! README's table and to the brute force over the raw file; determinism; launch detail.

use std::collections::BTreeMap;
use std::path::PathBuf;

use tally_evidence::{ActivityDomain, AttributionStatus, EventBody, InferenceRecord};
use tally_import::{Detail, ImportOptions, TraceFormat, UuidSource, import_to_vec};

use crate::brute;
use crate::corpus::{README, README_STEPS, corpus_files, per_device, per_iteration, trace};

fn format_of(name: &str) -> TraceFormat {
    if name.contains(".sqlite") {
        TraceFormat::Nsys
    } else {
        TraceFormat::Kineto
    }
}

fn import(
    name: &str,
    options: &ImportOptions,
) -> (Vec<InferenceRecord>, tally_import::ImportSummary) {
    import_to_vec(format_of(name), &[trace(name)], options)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn the_readme_lists_every_corpus_file() {
    let listed: Vec<&str> = README.iter().map(|f| f.file).collect();
    assert_eq!(corpus_files(), listed);
}

#[test]
fn every_file_gives_the_readme_and_brute_force_figures() {
    for figures in &README {
        let (records, summary) = import(figures.file, &ImportOptions::default());
        let input = &summary.inputs[0];
        // One device per file, at the index the README names.
        assert_eq!(input.devices.len(), 1, "{}", figures.file);
        let device = &input.devices[0];
        assert_eq!(
            device.device_index,
            Some(figures.device),
            "{}",
            figures.file
        );
        let got = (
            device.busy_ns,
            device.summed_ns,
            device.count,
            device.kernel_busy_ns,
            device.kernel_count,
        );
        let readme = (
            figures.busy,
            figures.summed,
            figures.count,
            figures.kernel_busy,
            figures.kernel_count,
        );
        assert_eq!(got, readme, "{}: summary vs README", figures.file);
        // The emitted records, accounted by the test's own union, give the same.
        let from_records = per_device(&records);
        assert_eq!(from_records.len(), 1, "{}", figures.file);
        let (&(busy, summed, count), uuid) = (
            from_records.values().next().unwrap(),
            from_records.keys().next().unwrap(),
        );
        assert_eq!(
            (busy, summed, count),
            (figures.busy, figures.summed, figures.count),
            "{}: records",
            figures.file
        );
        assert_eq!(device.device_uuid.as_deref(), Some(uuid.as_str()));
        // And an independent brute force over the raw file agrees.
        let path = trace(figures.file);
        let raw = match format_of(figures.file) {
            TraceFormat::Kineto => brute::kineto(&path),
            TraceFormat::Nsys => brute::nsys(&path),
        };
        assert_eq!(raw.devices.len(), 1);
        assert_eq!(
            raw.devices[&figures.device], readme,
            "{}: brute force",
            figures.file
        );
        assert_eq!(input.activity_records, figures.count);
        // Per step: the steps' GPU work found by correlation id, any thread, as the brute force.
        if format_of(figures.file) == TraceFormat::Kineto {
            let got: BTreeMap<String, _> = per_iteration(&records).into_iter().collect();
            assert_eq!(got, raw.steps, "{}: per step", figures.file);
        }
    }
}

fn step_name(step: u64) -> String {
    format!("ProfilerStep#{step}")
}

#[test]
fn per_step_figures_match_the_readme_and_the_brute_force() {
    let mut by_file: BTreeMap<&str, Vec<(u64, i64, i64, u64)>> = BTreeMap::new();
    for (file, step, busy, summed, count) in README_STEPS {
        by_file
            .entry(file)
            .or_default()
            .push((step, busy, summed, count));
    }
    for (file, steps) in by_file {
        let (records, _) = import(file, &ImportOptions::default());
        let got = per_iteration(&records);
        let raw = brute::kineto(&trace(file));
        for (step, busy, summed, count) in steps {
            assert_eq!(
                got[&step_name(step)],
                (busy, summed, count),
                "{file} step {step}"
            );
            assert_eq!(
                raw.steps[&step_name(step)],
                (busy, summed, count),
                "{file} step {step} brute"
            );
        }
    }
}

#[test]
fn the_2021_categories_import_with_their_profiler_steps() {
    let (records, summary) = import(
        "kineto_resnet50_legacy.pt.trace.json.gz",
        &ImportOptions::default(),
    );
    let input = &summary.inputs[0];
    assert_eq!(input.gpu_events, 9096);
    assert_eq!(input.iterations, 6);
    assert_eq!(input.linked_gpu_events, 6 * 1516);
    let steps = per_iteration(&records);
    let names: Vec<&str> = steps.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "ProfilerStep#10",
            "ProfilerStep#5",
            "ProfilerStep#6",
            "ProfilerStep#7",
            "ProfilerStep#8",
            "ProfilerStep#9"
        ]
    );
    assert_eq!(steps["ProfilerStep#5"], (100_629_000, 100_629_000, 1516));
    // Runtime calls sit on string thread ids; kinds cover the three categories.
    let mut kinds = BTreeMap::new();
    for record in &records {
        if let InferenceRecord::Event(e) = record
            && let EventBody::Activity(a) = e.body()
        {
            *kinds.entry(a.activity_kind.to_string()).or_insert(0) += 1;
        }
    }
    assert_eq!(kinds["gpu_kernel"], 8772);
    assert_eq!(kinds["gpu_memcpy"], 12);
    assert_eq!(kinds["gpu_memset"], 312);
}

#[test]
fn backward_thread_launches_link_to_their_step() {
    // In the ns-resolution trace the backward kernels are launched from pt_autograd_0, not from
    // the thread that holds the ProfilerStep ranges; all 6095 GPU events still link.
    let (records, summary) = import(
        "hta_ns_resolution_rank0.pt.trace.json.gz",
        &ImportOptions::default(),
    );
    let input = &summary.inputs[0];
    assert_eq!(input.linked_gpu_events, 6095);
    assert!(input.unresolved_gpu_events.is_empty());
    let mut threads = BTreeMap::new();
    for record in &records {
        let InferenceRecord::Event(e) = record else {
            continue;
        };
        let EventBody::Activity(a) = e.body() else {
            continue;
        };
        assert_eq!(a.attribution_status, AttributionStatus::Linked);
        let tid = e.metadata().to_map()["launch_tid"]
            .as_str()
            .unwrap()
            .to_owned();
        *threads.entry(tid).or_insert(0u64) += 1;
    }
    assert!(
        threads.len() >= 2,
        "launches come from several threads: {threads:?}"
    );
    // The sampled trace: about 45 % of the GPU events come from the backward thread.
    let (_, summary) = import("hta_sampled_2rank_rank0.json.gz", &ImportOptions::default());
    assert_eq!(summary.inputs[0].linked_gpu_events, 1204);
}

#[test]
fn unlinkable_events_are_counted_never_dropped() {
    let (records, summary) = import("hta_multistream_rank0.json.gz", &ImportOptions::default());
    let input = &summary.inputs[0];
    assert_eq!(input.unresolved_gpu_events["no_launch_record"], 872);
    assert_eq!(input.linked_gpu_events, 7747 - 872);
    assert_eq!(input.iterations, 5);
    let unresolved = records
        .iter()
        .filter(|r| matches!(r, InferenceRecord::Event(e) if matches!(e.body(), EventBody::Activity(a) if a.attribution_status == AttributionStatus::Unresolved)))
        .count();
    assert_eq!(unresolved, 872);
}

#[test]
fn imports_are_deterministic() {
    for name in ["hta_nccl_rank0.json.gz", "pipit_cloverleaf_nsys.sqlite.gz"] {
        let options = ImportOptions {
            emit_runtime: true,
            ..ImportOptions::default()
        };
        let (first, s1) = import(name, &options);
        let (second, s2) = import(name, &options);
        assert_eq!(first, second, "{name}");
        assert_eq!(s1, s2);
        let ids = |rs: &[InferenceRecord]| -> Vec<String> {
            rs.iter()
                .map(|r| match r {
                    InferenceRecord::Event(e) => format!("{}|{:x}", e.event_id(), e.fingerprint()),
                    InferenceRecord::Legacy(l) => l.json.to_string(),
                })
                .collect()
        };
        assert_eq!(ids(&first), ids(&second));
    }
}

#[test]
fn device_identities_are_derived_given_or_named_by_the_trace() {
    let (_, summary) = import("pipit_saxpy_mpi_nsys.sqlite.gz", &ImportOptions::default());
    let device = &summary.inputs[0].devices[0];
    assert_eq!(device.uuid_source, UuidSource::Trace);
    assert_eq!(
        device.device_uuid.as_deref(),
        Some("GPU-74e128b2-90b6-b409-07c8-33bee5ff6f88")
    );
    let (_, summary) = import("pipit_cloverleaf_nsys.sqlite.gz", &ImportOptions::default());
    let input = &summary.inputs[0];
    assert_eq!(input.devices[0].uuid_source, UuidSource::Derived);
    assert!(
        input.devices[0]
            .device_uuid
            .as_deref()
            .unwrap()
            .starts_with("derived:nsys:nid008553:pid")
    );
    assert!(input.notes.iter().any(|n| n.contains("4 GPUs")));
    let (_, summary) = import("hta_amd_mi250_rocm.json.gz", &ImportOptions::default());
    let device = &summary.inputs[0].devices[0];
    assert_eq!(device.uuid_source, UuidSource::Derived);
    assert_eq!(
        device.device_uuid.as_deref(),
        Some("derived:kineto:unknown-host:pid597913:gpu2:AMD-Radeon-Graphics")
    );
    let options = ImportOptions {
        device_uuids: vec![tally_import::DeviceUuidOption::parse("2=GPU-mi250").unwrap()],
        ..ImportOptions::default()
    };
    let (records, summary) = import("hta_amd_mi250_rocm.json.gz", &options);
    assert_eq!(summary.inputs[0].devices[0].uuid_source, UuidSource::Option);
    assert_eq!(
        per_device(&records).keys().collect::<Vec<_>>(),
        ["GPU-mi250"]
    );
    // A UUID contradicting the one the trace names is refused.
    let options = ImportOptions {
        device_uuids: vec![tally_import::DeviceUuidOption::parse("0=GPU-other").unwrap()],
        ..ImportOptions::default()
    };
    let err = import_to_vec(
        TraceFormat::Nsys,
        &[trace("pipit_saxpy_mpi_nsys.sqlite.gz")],
        &options,
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("--device-uuid 0=GPU-other"),
        "{err}"
    );
}

#[test]
fn launch_detail_keeps_device_busy_time() {
    let options = ImportOptions {
        detail: Detail::Launch,
        ..ImportOptions::default()
    };
    let (records, summary) = import("hta_multistream_rank0.json.gz", &options);
    let input = &summary.inputs[0];
    assert!(
        input.activity_records < input.gpu_events,
        "graph launches group"
    );
    let (busy, _, count) = *per_device(&records).values().next().unwrap();
    assert_eq!(busy, 438_424_000);
    assert_eq!(count, input.activity_records);
}

#[test]
fn nvtx_ranges_become_iterations_with_a_pattern() {
    let options = ImportOptions {
        iterations: Some(regex::Regex::new("^saxpy$").unwrap()),
        emit_runtime: true,
        ..ImportOptions::default()
    };
    let (records, summary) = import("pipit_saxpy_mpi_nsys.sqlite.gz", &options);
    let input = &summary.inputs[0];
    assert_eq!(input.iterations, 5);
    let mut per_range: BTreeMap<String, u64> = BTreeMap::new();
    for record in &records {
        let InferenceRecord::Event(e) = record else {
            continue;
        };
        let EventBody::Activity(a) = e.body() else {
            continue;
        };
        if a.activity_domain == ActivityDomain::Gpu
            && let Some(r) = &a.iteration_ref
        {
            *per_range.entry(r.id.to_string()).or_default() += 1;
        }
    }
    let counts: Vec<u64> = per_range.values().copied().collect();
    assert_eq!(
        counts,
        [1, 1, 1, 1, 1],
        "each saxpy range launches one kernel: {per_range:?}"
    );
    assert!(
        per_range
            .keys()
            .all(|k| k.ends_with("/saxpy[1]") || k.contains("/saxpy["))
    );
    let runtime = records
        .iter()
        .filter(|r| matches!(r, InferenceRecord::Event(e) if matches!(e.body(), EventBody::Activity(a) if a.activity_domain == ActivityDomain::Runtime)))
        .count() as u64;
    assert_eq!(runtime, input.runtime_records);
    assert!(runtime > 0);
}

#[test]
fn several_ranks_go_into_one_artifact() {
    let paths: Vec<PathBuf> = [
        "hta_sampled_2rank_rank0.json.gz",
        "hta_sampled_2rank_rank1.json.gz",
    ]
    .iter()
    .map(|n| trace(n))
    .collect();
    let (records, summary) =
        import_to_vec(TraceFormat::Kineto, &paths, &ImportOptions::default()).unwrap();
    assert_eq!(summary.inputs.len(), 2);
    let devices = per_device(&records);
    assert_eq!(devices.len(), 2);
    let mut figures: Vec<_> = devices.values().copied().collect();
    figures.sort();
    assert_eq!(
        figures,
        [
            (547_656_000, 607_844_000, 1204),
            (580_050_000, 667_530_000, 1154)
        ]
    );
    // Step 551 of each rank is its own iteration.
    let iterations = records
        .iter()
        .filter(|r| matches!(r, InferenceRecord::Event(e) if matches!(e.body(), EventBody::Iteration(_))))
        .count();
    assert_eq!(iterations, 4);
    // One artifact record, first.
    let InferenceRecord::Event(first) = &records[0] else {
        panic!()
    };
    assert!(matches!(first.body(), EventBody::Artifact(_)));
}
