//! Without a `tracing` subscriber, slow turns and restarts reach standard error the way
//! failures do, rate-limited: of each kind the first five, then one per ten seconds.
//!
//! The scenario runs in a child process (this test binary run again, with an environment
//! variable saying so), so that its standard error is read whole and no other test's
//! subscriber is installed in it.

mod common;
mod supervisor_support;

use std::process::Command;
use std::time::{Duration, Instant};

use supervisor_support::{child, start, Do, Log};
use whirl::prelude::*;

/// Set in the child process: run the scenario instead of checking it.
const SCENARIO: &str = "WHIRL_STDERR_SCENARIO";

/// Restarts the scenario causes: more than are printed before the limit applies (five).
const RESTARTS: usize = 12;

/// Sleeps in its handler.
#[derive(Message)]
struct Nap(Duration);

#[process]
struct Sleeper;

#[process]
impl Sleeper {
    #[handle]
    fn nap(&mut self, Nap(d): Nap) {
        std::thread::sleep(d);
    }
}

/// A slow turn, then a child failed and restarted [`RESTARTS`] times.
fn scenario() {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let group = rt
        .group("sleepy")
        .threads(1)
        .slow_turn_threshold(Some(Duration::from_millis(20)))
        .build()
        .expect("the group builds");
    let sleeper = rt.spawner().group(&group).spawn(Sleeper);
    sleeper
        .post(Nap(Duration::from_millis(300)))
        .expect("posted");
    let deadline = Instant::now() + Duration::from_secs(10);
    while group.stats().slow_turns == 0 {
        assert!(Instant::now() < deadline, "the slow turn was never seen");
        std::thread::sleep(Duration::from_millis(10));
    }

    let mut log = Log::new();
    let spec = log
        .spec("sup")
        .intensity(100, Duration::from_secs(60))
        .child(log.worker("w"));
    let _sup = start(&rt, spec);
    for _ in 0..RESTARTS {
        child(&rt, "w").post(Do::Fail("boom")).expect("posted");
        log.restarted("sup", "w");
    }
    rt.shutdown_timeout(Duration::from_secs(10));
}

#[test]
fn slow_turns_and_restarts_reach_stderr_rate_limited() {
    if std::env::var_os(SCENARIO).is_some() {
        return scenario();
    }
    let out = Command::new(std::env::current_exe().expect("this test binary"))
        .args([
            "--exact",
            "slow_turns_and_restarts_reach_stderr_rate_limited",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(SCENARIO, "1")
        .output()
        .expect("the scenario runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the scenario failed: {stderr}");
    let slow: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("whirl: slow turn: process"))
        .collect();
    assert_eq!(slow.len(), 1, "{stderr}");
    assert!(
        slow[0].contains("group `sleepy`") && slow[0].contains("threshold 20 ms"),
        "{stderr}"
    );
    let restarts = stderr
        .lines()
        .filter(|l| l.starts_with("whirl: supervisor `sup` restarted child `w`"))
        .count();
    // The first five of twelve: the rest fell within the quiet period.
    assert_eq!(restarts, 5, "{stderr}");
}
