//! Contract: campaigns and config texts — registration, lookups, state, config, head, and the
//! errors for names and ids that do not exist.

use tally_model::{CampaignId, CampaignState, CandidateId, ConfigTextId, UnixMillis, Verdict};

use super::{Make, add, campaign, campaign_with_baseline, expect_err};
use crate::error::StoreError;
use crate::records::NewCampaign;

pub(super) fn run(make: Make<'_>) {
    registers_and_finds_campaigns(make);
    refuses_duplicate_and_empty_names(make);
    changes_state_and_reason(make);
    records_config_texts_once(make);
    head_is_always_a_keep(make);
    missing_campaigns_are_errors_for_lists_and_writes(make);
}

fn registers_and_finds_campaigns(make: Make<'_>) {
    let store = make();
    let rule = "create_campaign";
    let a = campaign(&*store, "alpha");
    assert_eq!(a.id, CampaignId(1), "{rule}: ids count from 1");
    assert_eq!(a.name, "alpha", "{rule}");
    assert_eq!(
        a.state,
        CampaignState::Active,
        "{rule}: new campaigns are active"
    );
    assert_eq!(a.reason, None, "{rule}");
    assert_eq!(a.created, UnixMillis(1_000), "{rule}");
    assert_eq!(
        a.state_since,
        UnixMillis(1_000),
        "{rule}: state_since starts at creation"
    );
    assert_eq!(a.evaluator, "eval-1", "{rule}");
    assert_eq!(a.head, None, "{rule}: no head before the baseline is kept");
    assert_eq!(a.config, ConfigTextId(1), "{rule}");
    assert_eq!(a.config_text, "name = \"alpha\"\n", "{rule}");
    let b = campaign(&*store, "beta");
    assert_eq!(b.id, CampaignId(2), "{rule}: ids grow by one");
    assert_eq!(
        store.campaign(a.id).unwrap(),
        Some(a.clone()),
        "campaign(id)"
    );
    assert_eq!(
        store.campaign_by_name("beta").unwrap(),
        Some(b.clone()),
        "campaign_by_name"
    );
    assert_eq!(
        store.campaign_by_name("gamma").unwrap(),
        None,
        "campaign_by_name: unknown"
    );
    assert_eq!(
        store.campaign(CampaignId(99)).unwrap(),
        None,
        "campaign: unknown id"
    );
    assert_eq!(
        store.list_campaigns().unwrap(),
        vec![a, b],
        "list_campaigns: by id"
    );
}

fn refuses_duplicate_and_empty_names(make: Make<'_>) {
    let store = make();
    campaign(&*store, "alpha");
    let again = NewCampaign {
        name: "alpha".to_owned(),
        evaluator: "other".to_owned(),
        config_text: "x".to_owned(),
        created: UnixMillis(5),
    };
    let err = expect_err!(
        store.create_campaign(&again),
        StoreError::CampaignExists { .. },
        "create_campaign: duplicate name"
    );
    assert!(
        err.to_string().contains("\"alpha\""),
        "the error names the campaign: {err}"
    );
    expect_err!(
        store.create_campaign(&NewCampaign {
            name: " ".to_owned(),
            ..again.clone()
        }),
        StoreError::InvalidValue { .. },
        "create_campaign: empty name"
    );
    expect_err!(
        store.create_campaign(&NewCampaign {
            name: "delta".to_owned(),
            evaluator: String::new(),
            ..again
        }),
        StoreError::InvalidValue { .. },
        "create_campaign: empty evaluator"
    );
    assert_eq!(
        store.list_campaigns().unwrap().len(),
        1,
        "refused campaigns are not stored"
    );
}

fn changes_state_and_reason(make: Make<'_>) {
    let store = make();
    let c = campaign(&*store, "alpha");
    let rule = "set_campaign_state";
    let held = store
        .set_campaign_state(
            c.id,
            CampaignState::Held,
            Some("hold_at: gpu_usd 50 reached 50"),
            UnixMillis(7_000),
        )
        .unwrap();
    assert_eq!(held.state, CampaignState::Held, "{rule}");
    assert_eq!(
        held.reason.as_deref(),
        Some("hold_at: gpu_usd 50 reached 50"),
        "{rule}"
    );
    assert_eq!(
        held.state_since,
        UnixMillis(7_000),
        "{rule}: stamps state_since"
    );
    assert_eq!(held.created, UnixMillis(1_000), "{rule}: keeps created");
    let active = store
        .set_campaign_state(c.id, CampaignState::Active, None, UnixMillis(8_000))
        .unwrap();
    assert_eq!(
        (active.state, active.reason.clone()),
        (CampaignState::Active, None),
        "{rule}: clears the reason"
    );
    assert_eq!(
        store.campaign(c.id).unwrap(),
        Some(active),
        "{rule}: stored"
    );
    let stopped = store
        .set_campaign_state(
            c.id,
            CampaignState::Stopped,
            Some("plateau: 20 runs without a keep"),
            UnixMillis(9_000),
        )
        .unwrap();
    assert_eq!(stopped.state.as_str(), "stopped", "{rule}");
}

fn records_config_texts_once(make: Make<'_>) {
    let store = make();
    let c = campaign(&*store, "alpha");
    let rule = "record_config_text";
    assert_eq!(
        store.record_config_text("name = \"alpha\"\n").unwrap(),
        c.config,
        "{rule}: same text, same id"
    );
    let other = store
        .record_config_text("name = \"alpha\"\nevaluate = []\n")
        .unwrap();
    assert_eq!(
        other,
        ConfigTextId(2),
        "{rule}: a new text gets the next id"
    );
    assert_eq!(
        store
            .record_config_text("name = \"alpha\"\nevaluate = []\n")
            .unwrap(),
        other,
        "{rule}"
    );
    assert_eq!(
        store.config_text(other).unwrap().as_deref(),
        Some("name = \"alpha\"\nevaluate = []\n"),
        "config_text"
    );
    assert_eq!(
        store.config_text(ConfigTextId(42)).unwrap(),
        None,
        "config_text: unknown id"
    );
    let empty = store.record_config_text("").unwrap();
    assert_eq!(
        store.config_text(empty).unwrap().as_deref(),
        Some(""),
        "{rule}: the empty text is a text"
    );

    let changed = store
        .set_campaign_config(c.id, "eval-2", "name = \"alpha\"\n# v2\n")
        .unwrap();
    assert_eq!(changed.evaluator, "eval-2", "set_campaign_config");
    assert_eq!(
        changed.config_text, "name = \"alpha\"\n# v2\n",
        "set_campaign_config"
    );
    assert_eq!(
        changed.config,
        ConfigTextId(4),
        "set_campaign_config: stores the new text"
    );
    let back = store
        .set_campaign_config(c.id, "eval-1", "name = \"alpha\"\n")
        .unwrap();
    assert_eq!(
        back.config,
        ConfigTextId(1),
        "set_campaign_config: reuses a known text"
    );
}

fn head_is_always_a_keep(make: Make<'_>) {
    let store = make();
    let c = campaign_with_baseline(&*store, "alpha");
    assert_eq!(
        c.head,
        Some(CandidateId(0)),
        "keeping the baseline with MakeHead sets the head"
    );
    let pending = add(&*store, c.id, "rev1", 2_000);
    assert_eq!(pending.verdict, Verdict::Pending);
    expect_err!(
        store.set_head(c.id, pending.id),
        StoreError::InvalidValue { .. },
        "set_head: a pending candidate cannot be the head"
    );
    expect_err!(
        store.set_head(c.id, CandidateId(7)),
        StoreError::NoSuchCandidate { .. },
        "set_head: unknown candidate"
    );
    let same = store.set_head(c.id, CandidateId(0)).unwrap();
    assert_eq!(same.head, Some(CandidateId(0)), "set_head on a keep");
}

fn missing_campaigns_are_errors_for_lists_and_writes(make: Make<'_>) {
    let store = make();
    let ghost = CampaignId(9);
    let rule = "a missing campaign";
    expect_err!(
        store.list_candidates(ghost),
        StoreError::NoSuchCampaign(CampaignId(9)),
        rule
    );
    expect_err!(
        store.list_measurements(ghost),
        StoreError::NoSuchCampaign(_),
        rule
    );
    expect_err!(
        store.list_evaluations(ghost),
        StoreError::NoSuchCampaign(_),
        rule
    );
    expect_err!(
        store.unfinished_evaluations(ghost),
        StoreError::NoSuchCampaign(_),
        rule
    );
    expect_err!(
        store.next_pending_candidate(ghost),
        StoreError::NoSuchCampaign(_),
        rule
    );
    expect_err!(store.snapshot(ghost), StoreError::NoSuchCampaign(_), rule);
    expect_err!(store.totals(ghost), StoreError::NoSuchCampaign(_), rule);
    expect_err!(
        store.recent_evaluation_durations(ghost, 5),
        StoreError::NoSuchCampaign(_),
        rule
    );
    expect_err!(
        store.add_candidates(ghost, &[]),
        StoreError::NoSuchCampaign(_),
        rule
    );
    expect_err!(
        store.set_campaign_state(ghost, CampaignState::Held, None, UnixMillis(1)),
        StoreError::NoSuchCampaign(_),
        rule
    );
    expect_err!(
        store.set_campaign_config(ghost, "e", "t"),
        StoreError::NoSuchCampaign(_),
        rule
    );
    expect_err!(
        store.set_head(ghost, CandidateId(0)),
        StoreError::NoSuchCampaign(_),
        rule
    );
    let err = store.list_candidates(ghost).unwrap_err();
    assert_eq!(
        err.to_string(),
        "no campaign#9 in the store",
        "{rule}: message"
    );
}
