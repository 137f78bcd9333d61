//! The `limits` stop rule's stops (`docs/campaign.md#stop-rules`): `target`, `max_runs`, `max_hours` and
//! `plateau`, asked before every evaluation; a stopped campaign starts nothing until
//! `tally campaign resume` (which asks the rule again) or a changed `[plugins.stop_rule]` table.

use tally_engine::RunEnd;
use tally_model::{CampaignState, Verdict};

use crate::lab::{Lab, config};

fn limits(params: &str) -> String {
    config(
        3,
        &format!("[plugins.stop_rule]\nprovider = \"limits\"\n{params}\n"),
    )
}

/// A lab with the baseline kept; revision `n` scores `score(n)` on every sample.
fn lab(text: &str, score: fn(u32) -> f64) -> Lab {
    let lab = Lab::new(text);
    lab.values(move |rev, _, _| score(rev));
    lab.init();
    lab
}

/// The candidates whose verdict is still pending.
fn pending(lab: &Lab) -> Vec<u32> {
    let campaign = lab.campaign().id;
    tally_store::Store::list_candidates(&*lab.store, campaign)
        .unwrap()
        .into_iter()
        .filter(|c| c.verdict == Verdict::Pending)
        .map(|c| c.id.0)
        .collect()
}

#[test]
fn target_stops_once_the_head_reaches_it() {
    let lab = lab(&limits("target = 110"), |rev| 100.0 + 10.0 * f64::from(rev));
    lab.add(&[1, 2]);
    let end = lab.run();
    let reason = "target: score 110.0 ≥ 110";
    assert_eq!(end, RunEnd::Stopped(reason.into()));
    assert_eq!(lab.state(), (CampaignState::Stopped, Some(reason.into())));
    assert_eq!(lab.verdict(1).0, Verdict::Keep);
    assert_eq!(pending(&lab), [2]);
    assert_eq!(lab.served().len(), 3 + 6, "nothing of candidate 2 ran");
}

#[test]
fn target_on_a_lower_is_better_primary_compares_the_other_way() {
    let text = limits("target = 90").replace("direction = \"higher\"", "direction = \"lower\"");
    let lab = lab(&text, |rev| 100.0 - 10.0 * f64::from(rev));
    lab.add(&[1, 2]);
    assert_eq!(
        lab.run(),
        RunEnd::Stopped("target: score 90.00 ≤ 90".into())
    );
    assert_eq!(pending(&lab), [2]);
}

#[test]
fn max_runs_counts_judged_candidates_without_the_baseline() {
    let lab = lab(
        &limits("max_runs = 2"),
        |rev| if rev == 0 { 100.0 } else { 95.0 },
    );
    lab.add(&[1, 2, 3]);
    assert_eq!(lab.run(), RunEnd::Stopped("max_runs: 2 runs".into()));
    assert_eq!(pending(&lab), [3]);
    assert_eq!(lab.served().len(), 3 + 2 * 6);
}

#[test]
fn max_hours_counts_from_the_first_evaluation() {
    let lab = lab(&limits("max_hours = 1"), |rev| {
        if rev == 0 { 100.0 } else { 95.0 }
    });
    lab.add(&[1]);
    lab.clock.advance(3_599_000);
    assert_eq!(lab.run(), RunEnd::Idle, "59 min 59 s: go");
    lab.add(&[2]);
    lab.clock.advance(1_000);
    assert_eq!(
        lab.run(),
        RunEnd::Stopped("max_hours: 1h since the first evaluation".into())
    );
    assert_eq!(pending(&lab), [2]);
}

#[test]
fn plateau_counts_judged_candidates_since_the_last_keep() {
    // 1 discard, 2 keep, 3 and 4 discard against 2: two runs without a keep.
    let scores = |rev| [100.0, 95.0, 110.0, 105.0, 105.0, 200.0][rev as usize];
    let lab = lab(&limits("plateau = 2"), scores);
    lab.add(&[1, 2, 3, 4, 5]);
    assert_eq!(
        lab.run(),
        RunEnd::Stopped("plateau: 2 runs without a keep".into())
    );
    let verdicts: Vec<Verdict> = (1..=5).map(|n| lab.verdict(n).0).collect();
    assert_eq!(
        verdicts,
        [
            Verdict::Discard,
            Verdict::Keep,
            Verdict::Discard,
            Verdict::Discard,
            Verdict::Pending
        ]
    );
}

#[test]
fn a_stopped_campaign_starts_nothing_until_resumed_or_its_stop_table_changes() {
    let mut lab = lab(
        &limits("max_runs = 1"),
        |rev| if rev == 0 { 100.0 } else { 95.0 },
    );
    lab.add(&[1, 2, 3]);
    let stopped = RunEnd::Stopped("max_runs: 1 runs".into());
    assert_eq!(lab.run(), stopped);
    let served = lab.served().len();

    // Stopped: the rule is not even asked.
    assert_eq!(lab.run(), stopped);
    assert_eq!(lab.served().len(), served);

    // Resumed: active again, and the rule is asked again before the next evaluation.
    let resumed = lab.engine().resume().unwrap();
    assert_eq!(
        (resumed.state, resumed.reason),
        (CampaignState::Active, None)
    );
    assert_eq!(lab.run(), stopped);
    assert_eq!(lab.served().len(), served);

    // Another table in tally.toml (not only another text) makes it active again.
    lab.reconfigure(&format!("# a comment\n{}", limits("max_runs = 1")));
    assert_eq!(lab.run(), stopped);
    lab.reconfigure(&limits("max_runs = 3"));
    assert_eq!(lab.run(), RunEnd::Idle);
    assert_eq!(pending(&lab), Vec::<u32>::new());
    assert_eq!(lab.state(), (CampaignState::Active, None));
    assert!(lab.notes().contains(
        &"the [plugins.stop_rule] table changed: the campaign is active again".to_string()
    ));
}
