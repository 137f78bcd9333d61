//! Ideas on SQLite (`docs/implementers.md#ideas`): numbered per campaign from 1, a base that
//! must be a candidate, state changes stamped, and a store of schema version 1 upgraded in place
//! with its campaigns kept.

use rusqlite::Connection;
use tally_model::{CandidateId, UnixMillis};
use tally_store::{IdeaState, IdeaStore, NewIdea, SqliteStore, Store, StoreError};

use crate::fixtures::running_campaign;

fn idea(title: &str, base: Option<u32>) -> NewIdea {
    NewIdea {
        title: title.to_owned(),
        text: format!("try {title}"),
        attempts: None,
        base: base.map(CandidateId),
        added_by: "ann".to_owned(),
        created: UnixMillis(5_000),
    }
}

#[test]
fn ideas_are_numbered_checked_and_parked() {
    let store = SqliteStore::open_in_memory().unwrap();
    let (campaign, _, _) = running_campaign(&store);
    let first = store
        .add_idea(campaign, &idea("fuse kernels", None))
        .unwrap();
    assert_eq!((first.number, first.state), (1, IdeaState::Ready));
    assert_eq!((first.attempts, first.base), (None, None));
    let mut second = idea("bigger batch", Some(0));
    second.attempts = Some(3);
    let second = store.add_idea(campaign, &second).unwrap();
    assert_eq!(
        (second.number, second.base, second.attempts),
        (2, Some(CandidateId(0)), Some(3))
    );

    let err = store
        .add_idea(campaign, &idea("no such base", Some(9)))
        .unwrap_err();
    assert!(matches!(err, StoreError::NoSuchCandidate { .. }), "{err}");
    let err = store.add_idea(campaign, &idea("  ", None)).unwrap_err();
    assert!(err.to_string().contains("idea title"), "{err}");
    assert_eq!(
        store.list_ideas(campaign).unwrap().len(),
        2,
        "refused ideas left nothing"
    );

    let parked = store
        .set_idea_state(
            campaign,
            1,
            IdeaState::Parked,
            Some("parked by ann"),
            UnixMillis(6_000),
        )
        .unwrap()
        .unwrap();
    assert_eq!(parked.state, IdeaState::Parked);
    assert_eq!(parked.reason.as_deref(), Some("parked by ann"));
    assert_eq!(
        (parked.created, parked.state_since),
        (UnixMillis(5_000), UnixMillis(6_000))
    );
    assert_eq!(store.idea(campaign, 1).unwrap(), Some(parked));
    assert_eq!(
        store
            .set_idea_state(campaign, 7, IdeaState::Parked, None, UnixMillis(1))
            .unwrap(),
        None
    );
    assert_eq!(store.idea(campaign, 7).unwrap(), None);
}

#[test]
fn a_version_1_store_is_upgraded_with_its_campaigns() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tally.db");
    {
        // Schema version 1 exactly as the first migration left it.
        let mut raw = Connection::open(&path).unwrap();
        let tx = raw.transaction().unwrap();
        tx.execute_batch(include_str!("../../migrations/sqlite/0001_initial.sql"))
            .unwrap();
        tx.pragma_update(None, "user_version", 1).unwrap();
        tx.commit().unwrap();
    }
    {
        let raw = Connection::open(&path).unwrap();
        raw.execute_batch(
            "INSERT INTO config_texts VALUES (1, 'x', 'name = \"old\"');
             INSERT INTO campaigns VALUES (1, 'old', 'active', NULL, 1, 1, 'e', 1, NULL);",
        )
        .unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(
        store.schema_version().unwrap(),
        SqliteStore::SCHEMA_VERSION as i64
    );
    let campaign = store.campaign_by_name("old").unwrap().unwrap().id;
    assert_eq!(
        store
            .add_idea(campaign, &idea("first", None))
            .unwrap()
            .number,
        1
    );
}

#[test]
fn runs_are_recorded_before_they_start_and_settled_once() {
    use tally_store::{NewRun, RunCommit, RunEnd, RunSettlement};
    let store = SqliteStore::open_in_memory().unwrap();
    let (campaign, _, _) = running_campaign(&store);
    store.add_idea(campaign, &idea("fuse", None)).unwrap();
    let new = NewRun {
        idea: 1,
        base: CandidateId(0),
        tag: "tag-1".to_owned(),
        run_dir: "/tmp/run-1".to_owned(),
        started: UnixMillis(7_000),
        deadline: UnixMillis(9_000),
    };
    let run = store.start_run(campaign, &new).unwrap();
    assert_eq!((run.number, run.settled.as_ref()), (1, None));
    let settlement = RunSettlement {
        end: RunEnd::Finished,
        exit_code: Some(0),
        error: None,
        commits: vec![RunCommit {
            revision: "abc".to_owned(),
            candidate: Some(CandidateId(1)),
            note: "queued".to_owned(),
        }],
        ended: UnixMillis(8_000),
    };
    let settled = store.settle_run(campaign, 1, &settlement).unwrap();
    assert_eq!(settled.settled, Some(settlement.clone()));
    assert_eq!(settled.started, new);
    let again = store.settle_run(campaign, 1, &settlement).unwrap_err();
    assert!(again.to_string().contains("settled already"), "{again}");
    let mut other = new.clone();
    other.idea = 9;
    assert!(
        store.start_run(campaign, &other).is_err(),
        "the idea must exist"
    );
    assert_eq!(store.list_runs(campaign).unwrap(), vec![settled]);
}

#[test]
fn a_runs_usage_is_stored_replaced_and_unknown_until_read() {
    use tally_store::{NewRun, RunUsage};
    let store = SqliteStore::open_in_memory().unwrap();
    let (campaign, _, _) = running_campaign(&store);
    store.add_idea(campaign, &idea("fuse", None)).unwrap();
    let new = NewRun {
        idea: 1,
        base: CandidateId(0),
        tag: "tag-1".to_owned(),
        run_dir: "/tmp/run-1".to_owned(),
        started: UnixMillis(7_000),
        deadline: UnixMillis(9_000),
    };
    let run = store.start_run(campaign, &new).unwrap();
    assert_eq!(run.usage, None, "no usage until it is read");
    let tokens_only = RunUsage {
        input: Some(1_200),
        output: Some(300),
        cached: None,
        usd: None,
        source: "codex".to_owned(),
        usd_source: Some("ignored without usd".to_owned()),
    };
    let stored = store.set_run_usage(campaign, 1, &tokens_only).unwrap();
    let usage = stored.unwrap().usage.unwrap();
    assert_eq!(
        (usage.input, usage.cached, usage.usd),
        (Some(1_200), None, None)
    );
    assert_eq!(usage.usd_source, None, "no USD, no USD source");
    assert_eq!(usage.tokens(), Some(1_500));
    let manual = RunUsage {
        usd: Some(0.75),
        source: "manual".to_owned(),
        usd_source: Some("manual".to_owned()),
        ..tokens_only
    };
    store.set_run_usage(campaign, 1, &manual).unwrap();
    assert_eq!(store.list_runs(campaign).unwrap()[0].usage, Some(manual));
    assert_eq!(
        store
            .set_run_usage(campaign, 2, &tokens_only_default())
            .unwrap(),
        None
    );
}

fn tokens_only_default() -> tally_store::RunUsage {
    tally_store::RunUsage {
        input: None,
        output: None,
        cached: None,
        usd: None,
        source: "file".to_owned(),
        usd_source: None,
    }
}
