//! `tally run` without `--until-idle` waits for candidates through the engine's clock: it polls
//! the queue every 500 ms of clock time and asks the stop rule every 30 s of it, so a time limit
//! ends a campaign that nobody feeds (`docs/campaign.md#stop-rules`). With the fixed clock the
//! wait is simulated, not slept.

use std::time::{Duration, Instant};

use tally_engine::{Clock, RunEnd};
use tally_model::CampaignState;
use tally_runner::CancelToken;

use crate::lab::{Lab, START_MS, config};

#[test]
fn six_minutes_of_waiting_on_an_empty_queue_pass_on_the_clock_not_in_reality() {
    let lab = Lab::new(&config(
        3,
        "[plugins.stop_rule]\nprovider = \"limits\"\nmax_hours = 0.1\n",
    ));
    lab.init();
    let served = lab.served().len();
    let started = Instant::now();
    let end = lab.engine().run(false, &CancelToken::new()).unwrap();
    let reason = "max_hours: 0.1h since the first evaluation";
    assert_eq!(end, RunEnd::Stopped(reason.into()));
    assert_eq!(lab.state(), (CampaignState::Stopped, Some(reason.into())));
    // The stop rule was asked at 0 s, 30 s, ... of waiting: the first answer at 6 min ends it.
    assert_eq!(lab.clock.now().0 - START_MS, 360_000);
    assert_eq!(lab.served().len(), served, "nothing ran while waiting");
    // 720 polls of the queue; far below six minutes, with room for a loaded machine.
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
}
