//! Ideas, implementer runs with their usage, and `[checks]` runs (`docs/implementers.md#ideas`,
//! `docs/campaign.md#checks`) on both backends: every check below runs against an in-memory
//! SQLite store (`ideas::sqlite::…`) and against a fresh schema on the PostgreSQL server named by
//! `TALLY_TEST_PG_URL` (`ideas::postgres::…`, which prints a `SKIPPED` line and returns without
//! it). Ideas are numbered per campaign from 1 with a base that must be a candidate, state
//! changes are stamped, runs are recorded before they start and settled once, usage is unknown
//! until read; a run may end `stopped`. SQLite only: a store of schema version 1 is upgraded in
//! place with its campaigns kept, and one of version 5 keeps its runs when `runs` is rebuilt. PostgreSQL only: two connections numbering ideas and runs at once never collide.

use rusqlite::Connection;
use tally_contract::{CheckRecord, CheckStore};
use tally_model::{CandidateId, UnixMillis};
use tally_store::{
    IdeaState, IdeaStore, ImplementerStore, NewIdea, NewRun, SqliteStore, Store, StoreError,
};

use crate::fixtures::running_campaign;

/// A store that keeps ideas, runs and check runs: what every check below needs.
trait FullStore: ImplementerStore + CheckStore {}
impl<T: ImplementerStore + CheckStore> FullStore for T {}

/// `#[test]`s `sqlite::NAME` and `postgres::NAME` for each check `fn NAME(&dyn FullStore)`.
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[test]
                fn $name() {
                    super::$name(&tally_store::SqliteStore::open_in_memory().unwrap());
                }
            )*
        }
        mod postgres {
            $(
                #[test]
                fn $name() {
                    #[cfg(feature = "postgres")]
                    if let Some(store) = super::pg::fresh(stringify!($name)) {
                        super::$name(&*store);
                    }
                    #[cfg(not(feature = "postgres"))]
                    crate::ideas::pg_feature_off(stringify!($name));
                }
            )*
        }
    };
}

on_both_backends!(
    ideas_are_numbered_checked_and_parked,
    runs_are_recorded_before_they_start_and_settled_once,
    a_settled_runs_commits_are_appended_to_in_order,
    a_runs_usage_is_stored_replaced_and_unknown_until_read,
    a_run_cut_by_the_campaigns_stop_is_stored_as_stopped,
    check_runs_are_kept_per_candidate_in_the_order_recorded,
);

#[cfg(not(feature = "postgres"))]
#[allow(clippy::print_stderr)]
fn pg_feature_off(test: &str) {
    eprintln!("SKIPPED {test}: built without the `postgres` feature");
}

/// A fresh PostgreSQL schema per check, dropped at its end.
#[cfg(feature = "postgres")]
mod pg {
    use tally_store::{PgOptions, PgStore};

    pub(super) struct Fresh {
        store: Option<PgStore>,
        url: String,
        schema: String,
    }

    impl std::ops::Deref for Fresh {
        type Target = PgStore;
        fn deref(&self) -> &PgStore {
            self.store.as_ref().expect("open until dropped")
        }
    }

    impl Drop for Fresh {
        fn drop(&mut self) {
            drop(self.store.take());
            let _ = PgStore::drop_schema(&self.url, &self.schema);
        }
    }

    impl Fresh {
        /// Another connection to the same schema (as a second `tally run` would have).
        pub(super) fn another(&self) -> PgStore {
            PgStore::open_with(&self.url, &options(&self.schema)).unwrap()
        }
    }

    fn options(schema: &str) -> PgOptions {
        PgOptions {
            schema: Some(schema.to_owned()),
            ..PgOptions::default()
        }
    }

    /// A store on a new schema, or `None` after printing why the test is skipped.
    pub(super) fn fresh(test: &str) -> Option<Fresh> {
        let url = crate::postgres::pg_url(test)?;
        let short: String = test
            .chars()
            .filter(|c| c.is_ascii_alphabetic())
            .take(24)
            .collect();
        let schema = format!("t_ideas_{short}_{}", std::process::id());
        let store = PgStore::open_with(&url, &options(&schema)).unwrap();
        Some(Fresh {
            store: Some(store),
            url,
            schema,
        })
    }
}

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

fn new_run(idea: u32) -> NewRun {
    NewRun {
        idea,
        base: CandidateId(0),
        tag: format!("tag-{idea}"),
        run_dir: "/tmp/run-1".to_owned(),
        started: UnixMillis(7_000),
        deadline: UnixMillis(9_000),
    }
}
fn ideas_are_numbered_checked_and_parked(store: &dyn FullStore) {
    let (campaign, _, _) = running_campaign(store);
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

fn a_run_cut_by_the_campaigns_stop_is_stored_as_stopped(store: &dyn FullStore) {
    use tally_store::{RunEnd, RunSettlement};
    let (campaign, _, _) = running_campaign(store);
    store.add_idea(campaign, &idea("fuse", None)).unwrap();
    store.start_run(campaign, &new_run(1)).unwrap();
    let settlement = RunSettlement {
        end: RunEnd::Stopped,
        exit_code: None,
        error: Some("stopped by the campaign".to_owned()),
        commits: Vec::new(),
        ended: UnixMillis(8_000),
    };
    store.settle_run(campaign, 1, &settlement).unwrap();
    let runs = store.list_runs(campaign).unwrap();
    assert_eq!(runs[0].settled, Some(settlement));
    assert!(!RunEnd::Stopped.counts_as_attempt());
}

#[test]
fn a_version_5_store_keeps_its_runs_when_runs_is_rebuilt_for_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tally.db");
    // Schema version 5 with a campaign, as an older tally left it.
    crate::fixtures::version_5_store(
        &path,
        "INSERT INTO config_texts VALUES (1, 'x', 'name = \"old\"');
             INSERT INTO campaigns VALUES (1, 'old', 'active', NULL, 1, 1, 'e', 1, NULL);
             INSERT INTO candidates (campaign_id, number, revision, parent, proposed_by, note,
                 created_ms, verdict, verdict_set_by, reason, judged_ms)
                 VALUES (1, 0, 'abc', NULL, 'you', '', 1, 'pending', NULL, NULL, NULL);
             INSERT INTO ideas VALUES (1, 1, 'fuse', '', NULL, NULL, 'ready', NULL, 'you', 1, 1);
             INSERT INTO runs (campaign_id, number, idea, base, tag, run_dir, started_ms,
                 deadline_ms, end_reason, exit_code, commits, ended_ms, usage_usd, usage_source)
                 VALUES (1, 1, 1, 0, 't', '/r', 1, 2, 'finished', 0, '[]', 3, 0.5, 'file');",
    );
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), 7);
    let campaign = store.campaign_by_name("old").unwrap().unwrap().id;
    let runs = store.list_runs(campaign).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(
        runs[0].settled.as_ref().map(|s| s.end),
        Some(tally_store::RunEnd::Finished)
    );
    assert_eq!(runs[0].usage.as_ref().and_then(|u| u.usd), Some(0.5));
}

fn runs_are_recorded_before_they_start_and_settled_once(store: &dyn FullStore) {
    use tally_store::{RunCommit, RunEnd, RunSettlement};
    let (campaign, _, _) = running_campaign(store);
    store.add_idea(campaign, &idea("fuse", None)).unwrap();
    let new = new_run(1);
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
    assert!(
        store
            .settle_run(campaign, 5, &settlement)
            .unwrap_err()
            .to_string()
            .contains("run#5"),
        "a missing run is named"
    );
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

fn a_settled_runs_commits_are_appended_to_in_order(store: &dyn FullStore) {
    use tally_store::{RunCommit, RunEnd, RunSettlement};
    let (campaign, _, _) = running_campaign(store);
    store.add_idea(campaign, &idea("fuse", None)).unwrap();
    store.start_run(campaign, &new_run(1)).unwrap();
    let commit = |revision: &str, candidate: u32, note: &str| RunCommit {
        revision: revision.to_owned(),
        candidate: Some(CandidateId(candidate)),
        note: note.to_owned(),
    };
    let merge = commit("m1", 3, "queued: merge");
    let running = store.append_run_commits(campaign, 1, std::slice::from_ref(&merge));
    assert!(
        running.unwrap_err().to_string().contains("still running"),
        "a running run has no commits to append to"
    );
    store
        .settle_run(
            campaign,
            1,
            &RunSettlement {
                end: RunEnd::Finished,
                exit_code: Some(0),
                error: None,
                commits: vec![commit("a", 1, "queued"), commit("b", 2, "queued")],
                ended: UnixMillis(8_000),
            },
        )
        .unwrap();
    let appended = store
        .append_run_commits(campaign, 1, std::slice::from_ref(&merge))
        .unwrap();
    let notes: Vec<String> = appended
        .settled
        .unwrap()
        .commits
        .into_iter()
        .map(|c| c.note)
        .collect();
    assert_eq!(notes, ["queued", "queued", "queued: merge"]);
    let missing = store.append_run_commits(campaign, 7, &[merge]).unwrap_err();
    assert!(missing.to_string().contains("run#7"), "{missing}");
}

fn a_runs_usage_is_stored_replaced_and_unknown_until_read(store: &dyn FullStore) {
    use tally_store::RunUsage;
    let (campaign, _, _) = running_campaign(store);
    store.add_idea(campaign, &idea("fuse", None)).unwrap();
    let new = new_run(1);
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

fn check_runs_are_kept_per_candidate_in_the_order_recorded(store: &dyn FullStore) {
    let (campaign, candidate, _) = running_campaign(store);
    let record = |passed: bool, started: i64| CheckRecord {
        candidate,
        key: r#"[["unit",["cargo","test"]]]"#.to_owned(),
        commands: 2,
        passed,
        failed_check: (!passed).then(|| "unit".to_owned()),
        reason: (!passed).then(|| "exit 101: 1 test failed".to_owned()),
        started: UnixMillis(started),
        ended: UnixMillis(started + 500),
    };
    // Recorded out of time order: reads follow the recording order, not `started`.
    let failed = record(false, 9_000);
    let passed = record(true, 3_000);
    store.record_check(campaign, &failed).unwrap();
    store.record_check(campaign, &passed).unwrap();
    assert_eq!(
        store.checks_of_candidate(campaign, candidate).unwrap(),
        vec![failed, passed]
    );
    assert_eq!(
        store.checks_of_candidate(campaign, CandidateId(0)).unwrap(),
        vec![],
        "other candidates have none"
    );
    let mut stray = record(true, 1);
    stray.candidate = CandidateId(42);
    assert!(
        store.record_check(campaign, &stray).is_err(),
        "the candidate must exist"
    );
    assert_eq!(
        store
            .checks_of_candidate(campaign, candidate)
            .unwrap()
            .len(),
        2
    );
}

/// Two connections (as two `tally run` workers on two machines) adding ideas and starting runs
/// at once: every number is taken exactly once, with no gap.
#[cfg(feature = "postgres")]
#[test]
fn postgres_numbers_ideas_and_runs_once_across_connections() {
    use std::sync::{Arc, Barrier};
    let Some(store) = pg::fresh("postgres_numbers_ideas_and_runs_once_across_connections") else {
        return;
    };
    let (campaign, _, _) = running_campaign(&*store);
    store.add_idea(campaign, &idea("seed", None)).unwrap();
    let barrier = Arc::new(Barrier::new(2));
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let other = store.another();
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                barrier.wait();
                let mut numbers = Vec::new();
                for _ in 0..15 {
                    numbers.push(
                        other
                            .add_idea(campaign, &idea("more", None))
                            .unwrap()
                            .number,
                    );
                    numbers.push(1000 + other.start_run(campaign, &new_run(1)).unwrap().number);
                }
                numbers
            })
        })
        .collect();
    let mut all: Vec<u32> = workers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    all.sort_unstable();
    let expected: Vec<u32> = (2..=31).chain(1001..=1030).collect();
    assert_eq!(all, expected, "each idea and run number handed out once");
    assert_eq!(store.list_runs(campaign).unwrap().len(), 30);
}
