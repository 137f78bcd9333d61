//! Batch and thread independence: any batch size and any number of parse threads give the same
//! records, the same origins and the same first error as one batch on one thread; the sink sees
//! records in file order and its error stops the load.

use proptest::prelude::*;
use tally_artifact::read::{CorrelationRecordDecoder, for_each_record_in_bytes};
use tally_evidence::Error;

use super::{ACTIVITY, CTX, ITERATION, compact, definition, options, read_with, record, v2};

#[derive(Clone, Debug)]
enum Line {
    Iteration(u32),
    Activity(u32),
    Legacy,
    Blank,
    Define(u8),
    /// A definition of the id with another context: a conflict once the id is defined.
    Redefine(u8),
    Compact(u8, u32),
    /// A compact record whose body is invalid (the id's lookup error, if any, wins).
    BadCompact(u8),
    Broken,
}

fn line_strategy() -> impl Strategy<Value = Line> {
    prop_oneof![
        8 => any::<u32>().prop_map(Line::Iteration),
        4 => any::<u32>().prop_map(Line::Activity),
        1 => Just(Line::Legacy),
        2 => Just(Line::Blank),
        2 => (0u8..3).prop_map(Line::Define),
        1 => (0u8..3).prop_map(Line::Redefine),
        6 => (0u8..3, any::<u32>()).prop_map(|(c, n)| Line::Compact(c, n)),
        1 => (0u8..3).prop_map(Line::BadCompact),
        1 => Just(Line::Broken),
    ]
}

fn text(lines: &[(Line, u8)]) -> String {
    let mut out = String::new();
    for (line, end) in lines {
        match line {
            Line::Iteration(n) => out.push_str(&v2(
                "infer.iteration",
                &ITERATION.replace("\"I1\"", &format!("\"I{n}\"")),
            )),
            Line::Activity(n) => out.push_str(&record(
                3,
                "infer.activity_ref",
                CTX,
                &format!(
                    r#"{},"metadata":{{"intervals":[[0,{}]]}}"#,
                    ACTIVITY.replace("\"K1\"", &format!("\"K{n}\"")),
                    n % 100
                ),
            )),
            Line::Legacy => out.push_str(r#"{"event_type":"infer.summary","x":[1,2]}"#),
            Line::Blank => out.push_str(" \t"),
            Line::Define(c) => out.push_str(&definition(&format!("c{c}"))),
            Line::Redefine(c) => out.push_str(
                &definition(&format!("c{c}")).replace(r#""run_id":"r""#, r#""run_id":"other""#),
            ),
            Line::BadCompact(c) => out.push_str(&compact(
                &format!("c{c}"),
                "infer.iteration",
                r#""iteration_ref":{"producer_id":"p","id":""}"#,
            )),
            Line::Compact(c, n) => out.push_str(&compact(
                &format!("c{c}"),
                "infer.iteration",
                &ITERATION.replace("\"I1\"", &format!("\"J{n}\"")),
            )),
            Line::Broken => out.push_str("{\"event_type\": nope}"),
        }
        out.push_str(match end % 3 {
            0 => "\n",
            1 => "\r\n",
            _ => "\r",
        });
    }
    out
}

fn outcome(text: &str, batch: usize, threads: usize) -> (Vec<(u64, String)>, Option<String>) {
    let mut records = Vec::new();
    let mut decoder = CorrelationRecordDecoder::new();
    let result = for_each_record_in_bytes(
        "t",
        text.as_bytes(),
        &options(batch, threads),
        &mut decoder,
        |origin, record| {
            records.push((origin.line.unwrap(), format!("{record:?}")));
            Ok(())
        },
    );
    (records, result.err().map(|e| e.to_string()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn any_batch_size_and_thread_count_read_the_same(
        lines in prop::collection::vec((line_strategy(), any::<u8>()), 0..60),
        batch in 1usize..400,
        threads in 1usize..4,
    ) {
        let text = text(&lines);
        let expected = outcome(&text, 1 << 30, 1);
        prop_assert_eq!(outcome(&text, batch, threads), expected);
    }
}

#[test]
fn definitions_carry_across_batches() {
    let mut text = definition("c1");
    text.push('\n');
    for i in 0..500 {
        text.push_str(&compact(
            "c1",
            "infer.iteration",
            &ITERATION.replace("I1", &format!("I{i}")),
        ));
        text.push('\n');
    }
    for (batch, threads) in [(64, 2), (1000, 1), (1 << 20, 2)] {
        let records = read_with(text.as_bytes(), &options(batch, threads)).unwrap();
        assert_eq!(records.len(), 500);
        assert_eq!(records.first().unwrap().0, 2);
        assert_eq!(records.last().unwrap().0, 501);
    }
}

#[test]
fn the_first_failing_line_wins_across_kinds_of_failure() {
    // Line 3 refers to an undefined id, line 4 is not JSON: the registry error wins because it
    // comes first in the file, whatever the batching.
    let text = format!(
        "{}\n{}\n{}\n{{bad\n",
        definition("c1"),
        compact("c1", "infer.iteration", ITERATION),
        compact("c2", "infer.iteration", ITERATION),
    );
    for batch in [1, 50, 1 << 20] {
        let e = read_with(text.as_bytes(), &options(batch, 2)).unwrap_err();
        assert_eq!(e.to_string(), "t: line 3: unknown context_id: c2");
    }
}

#[test]
fn the_sink_sees_file_order_and_its_error_stops_the_load() {
    let mut text = String::new();
    for i in 0..300 {
        text.push_str(&v2(
            "infer.iteration",
            &ITERATION.replace("I1", &format!("I{i}")),
        ));
        text.push('\n');
    }
    let mut seen = Vec::new();
    let result = for_each_record_in_bytes(
        "t",
        text.as_bytes(),
        &options(500, 2),
        &mut CorrelationRecordDecoder::new(),
        |origin, _| {
            let line = origin.line.unwrap();
            seen.push(line);
            if line == 123 {
                return Err(Error::refused("enough"));
            }
            Ok(())
        },
    );
    assert_eq!(result.unwrap_err().to_string(), "enough");
    assert_eq!(seen, (1..=123).collect::<Vec<u64>>());
}

#[test]
fn a_decoder_continues_a_file() {
    let mut decoder = CorrelationRecordDecoder::new();
    for_each_record_in_bytes(
        "a",
        definition("c1").as_bytes(),
        &options(64, 1),
        &mut decoder,
        |_, _| Ok(()),
    )
    .unwrap();
    assert_eq!(decoder.registry().len(), 1);
    let mut n = 0;
    for_each_record_in_bytes(
        "b",
        compact("c1", "infer.iteration", ITERATION).as_bytes(),
        &options(64, 1),
        &mut decoder,
        |_, _| {
            n += 1;
            Ok(())
        },
    )
    .unwrap();
    assert_eq!(n, 1);
    assert!(
        decoder
            .decode(&compact("c1", "infer.iteration", ITERATION))
            .unwrap()
            .is_some()
    );
    assert!(decoder.decode(&definition("c2")).unwrap().is_none());
    assert_eq!(
        decoder
            .registry()
            .identity(decoder.registry().lookup("c2").unwrap()),
        Some("c1")
    );
}
