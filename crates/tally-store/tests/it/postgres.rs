//! The conformance suite and the backend-specific behaviour of `PgStore`, against the
//! PostgreSQL server named by `TALLY_TEST_PG_URL` (`scripts/pg-test-server.sh start` prints
//! one). Without it, or in a build without the `postgres` feature, each test prints a
//! `SKIPPED` line and returns: they never pass silently (nextest shows their output,
//! `.config/nextest.toml`).

#![allow(clippy::print_stderr)]

/// The test server's URL, or `None` after printing why the test is skipped.
#[cfg(feature = "postgres")]
pub(crate) fn pg_url(test: &str) -> Option<String> {
    match std::env::var("TALLY_TEST_PG_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            eprintln!(
                "SKIPPED {test}: TALLY_TEST_PG_URL is not set (start a server with \
                 `scripts/pg-test-server.sh start`)"
            );
            None
        }
    }
}

#[cfg(feature = "postgres")]
mod with_server {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Barrier};

    use tally_contract::conformance::store_contract;
    use tally_model::{Actor, CandidateId, UnixMillis, Verdict};
    use tally_store::{
        HeadUpdate, NewCampaign, NewCandidate, PgOptions, PgStore, Store, StoreError, VerdictWrite,
        VerdictWriteOutcome,
    };

    use super::pg_url;

    /// Schemas made by one test, dropped when it ends (passed or not).
    struct Schemas {
        url: String,
        prefix: String,
        made: AtomicUsize,
    }

    impl Schemas {
        fn new(url: &str, test: &str) -> Self {
            Self {
                url: url.to_owned(),
                prefix: format!("t_{test}_{}", std::process::id()),
                made: AtomicUsize::new(0),
            }
        }

        fn open(&self) -> PgStore {
            let n = self.made.fetch_add(1, Ordering::Relaxed);
            let options = PgOptions {
                schema: Some(format!("{}_{n}", self.prefix)),
                ..PgOptions::default()
            };
            PgStore::open_with(&self.url, &options).expect("open a PgStore")
        }

        fn options(&self, n: usize) -> PgOptions {
            PgOptions {
                schema: Some(format!("{}_{n}", self.prefix)),
                ..PgOptions::default()
            }
        }
    }

    impl Drop for Schemas {
        fn drop(&mut self) {
            for n in 0..self.made.load(Ordering::Relaxed) {
                let _ = PgStore::drop_schema(&self.url, &format!("{}_{n}", self.prefix));
            }
        }
    }

    #[test]
    fn postgres_passes_the_store_contract() {
        let Some(url) = pg_url("postgres_passes_the_store_contract") else {
            return;
        };
        let schemas = Schemas::new(&url, "contract");
        store_contract(|| Box::new(schemas.open()) as Box<dyn Store>);
        assert!(
            schemas.made.load(Ordering::Relaxed) >= 20,
            "the contract makes a store per check"
        );
    }

    #[test]
    fn postgres_reopens_with_the_data_and_schema_version() {
        let Some(url) = pg_url("postgres_reopens_with_the_data_and_schema_version") else {
            return;
        };
        let schemas = Schemas::new(&url, "reopen");
        let first = schemas.open();
        let campaign = first
            .create_campaign(&NewCampaign {
                name: "c".into(),
                evaluator: "e".into(),
                config_text: "name = \"c\"\n".into(),
                created: UnixMillis(5),
            })
            .unwrap();
        drop(first);
        let again = PgStore::open_with(&url, &schemas.options(0)).unwrap();
        assert_eq!(again.campaign(campaign.id).unwrap(), Some(campaign));
        assert_eq!(
            again.schema_version().unwrap(),
            PgStore::SCHEMA_VERSION as i64
        );
    }

    #[test]
    fn postgres_refuses_a_bad_url_and_names_the_fix() {
        let err = PgStore::open("mysql://x").unwrap_err().to_string();
        assert!(
            err.contains("postgres://USER:PASSWORD@HOST:PORT/DATABASE"),
            "{err}"
        );
        let err = PgStore::open("postgres://tally:secret@127.0.0.1:1/tally")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("cannot open the store postgres://tally:***@127.0.0.1:1/tally"),
            "{err}"
        );
        assert!(!err.contains("secret"), "{err}");
    }

    /// Two stores (two connections, as two processes have) race to make their candidate the
    /// head from the same expected head: exactly one wins, the other is told the head moved.
    #[test]
    fn postgres_lets_only_one_of_two_racing_writers_move_the_head() {
        let Some(url) = pg_url("postgres_lets_only_one_of_two_racing_writers_move_the_head") else {
            return;
        };
        let schemas = Schemas::new(&url, "race");
        let setup = schemas.open();
        let campaign = setup
            .create_campaign(&NewCampaign {
                name: "race".into(),
                evaluator: "e".into(),
                config_text: "name = \"race\"\n".into(),
                created: UnixMillis(1),
            })
            .unwrap();
        let added = setup
            .add_candidates(
                campaign.id,
                &["a", "b"].map(|rev| NewCandidate {
                    revision: rev.into(),
                    proposed_by: "ana".into(),
                    note: None,
                    created: UnixMillis(2),
                }),
            )
            .unwrap();
        for round in 0..20 {
            let stores: Vec<PgStore> = (0..2)
                .map(|_| PgStore::open_with(&url, &schemas.options(0)).unwrap())
                .collect();
            if round > 0 {
                // Back to "no head, both pending" by hand.
                for c in &added {
                    let _reset = setup
                        .set_verdict(
                            campaign.id,
                            c.id,
                            &VerdictWrite {
                                verdict: Verdict::Keep,
                                reason: None,
                                by: Actor::Person("reset".into()),
                                at: UnixMillis(3),
                                judged_against: None,
                                head: HeadUpdate::Set(None),
                            },
                        )
                        .unwrap();
                }
            }
            let barrier = Arc::new(Barrier::new(2));
            let outcomes: Vec<VerdictWriteOutcome> = std::thread::scope(|s| {
                let handles: Vec<_> = stores
                    .iter()
                    .zip([CandidateId(0), CandidateId(1)])
                    .map(|(store, id)| {
                        let barrier = Arc::clone(&barrier);
                        s.spawn(move || {
                            barrier.wait();
                            store
                                .set_verdict(
                                    campaign.id,
                                    id,
                                    &VerdictWrite {
                                        verdict: Verdict::Keep,
                                        reason: None,
                                        by: Actor::Person(format!("racer{round}")),
                                        at: UnixMillis(4),
                                        judged_against: None,
                                        head: HeadUpdate::MakeHead { expected: None },
                                    },
                                )
                                .unwrap()
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            let applied = outcomes
                .iter()
                .filter(|o| matches!(o, VerdictWriteOutcome::Applied(_)))
                .count();
            let moved = outcomes
                .iter()
                .filter(|o| matches!(o, VerdictWriteOutcome::HeadMoved(Some(_))))
                .count();
            assert_eq!((applied, moved), (1, 1), "round {round}: {outcomes:?}");
        }
    }

    /// A write that fails half-way leaves nothing: the transaction is rolled back.
    #[test]
    fn postgres_rolls_back_a_failing_write() {
        let Some(url) = pg_url("postgres_rolls_back_a_failing_write") else {
            return;
        };
        let schemas = Schemas::new(&url, "rollback");
        let store = schemas.open();
        let campaign = store
            .create_campaign(&NewCampaign {
                name: "rb".into(),
                evaluator: "e".into(),
                config_text: "x".into(),
                created: UnixMillis(1),
            })
            .unwrap();
        let good = NewCandidate {
            revision: "good".into(),
            proposed_by: "ana".into(),
            note: None,
            created: UnixMillis(2),
        };
        let bad = NewCandidate {
            revision: " ".into(),
            ..good.clone()
        };
        let err = store.add_candidates(campaign.id, &[good, bad]).unwrap_err();
        assert!(matches!(err, StoreError::InvalidValue { .. }), "{err:?}");
        assert!(store.list_candidates(campaign.id).unwrap().is_empty());
    }
}

#[cfg(not(feature = "postgres"))]
#[test]
fn postgres_store_tests_need_the_postgres_feature() {
    eprintln!(
        "SKIPPED postgres store tests: tally-store was built without the `postgres` feature \
         (cargo nextest run -p tally-store --features postgres)"
    );
}
