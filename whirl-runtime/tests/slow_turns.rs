//! The slow-turn watchdog (AppBackplane's slow-event warning): a handler that holds its worker
//! longer than the group's threshold is reported once — a `tracing` warning naming the
//! process and the message type, the group's `slow_turns` statistic — its worker counts as
//! blocked while it lasts, and `AdaptiveConcurrency` gives a blocked group with work waiting
//! another thread. Fast work, and a group whose threshold is off, report nothing.
//!
//! Handlers sleep or wait on gates to make turns slow; every check waits for something to
//! happen within a generous deadline, never for a clock to say how fast it happened. The
//! warnings are captured by a small `tracing` subscriber installed for the whole test binary;
//! each test reads only those of its own group, so the tests may run in parallel.

mod common;

use std::time::{Duration, Instant};

use common::capture::{capture, Fields};
use common::Gate;
use whirl::prelude::*;
use whirl::SharedClient;
use whirl_runtime::control::AdaptiveConcurrency;

const SLOW_TURN_TEXT: &str = "slow turn: a handler held a worker longer than the group's threshold";

// ---------------------------------------------------------------------------------------------
// Capturing warnings.
// ---------------------------------------------------------------------------------------------

/// The slow-turn warnings captured so far for the group `group`.
fn slow_turn_warnings(group: &str) -> Vec<Fields> {
    capture()
        .events
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .iter()
        .filter(|f| {
            f.get("message").map(String::as_str) == Some(SLOW_TURN_TEXT)
                && f.get("group").map(String::as_str) == Some(group)
        })
        .cloned()
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Waiting.
// ---------------------------------------------------------------------------------------------

const DEADLINE: Duration = Duration::from_secs(10);

/// Polls `done` every 10 ms until it holds, failing the test with `what` after 10 s.
#[track_caller]
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < DEADLINE,
            "timed out after {DEADLINE:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

// ---------------------------------------------------------------------------------------------
// Processes.
// ---------------------------------------------------------------------------------------------

/// Sleep this long in the handler.
#[derive(Message)]
struct Nap(Duration);

/// Wait in the handler until the gate opens.
#[derive(Message)]
struct Hold(SharedClient<Gate>);

/// Return at once.
#[derive(Message)]
struct Tick;

/// A process whose handlers sleep, block on a gate, or return at once.
#[process]
struct Worker {
    ticks: u64,
}

#[process]
impl Worker {
    #[handle]
    fn nap(&mut self, Nap(d): Nap) {
        std::thread::sleep(d);
    }

    #[handle]
    fn hold(&mut self, Hold(gate): Hold) {
        gate.wait();
    }

    #[handle]
    fn tick(&mut self, _: Tick) {
        self.ticks += 1;
    }
}

fn worker() -> Worker {
    Worker { ticks: 0 }
}

// ---------------------------------------------------------------------------------------------
// Tests.
// ---------------------------------------------------------------------------------------------

#[test]
fn a_handler_that_sleeps_past_the_threshold_is_reported_once() {
    capture();
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let group = rt
        .group("sleepy")
        .threads(1)
        .slow_turn_threshold(Some(Duration::from_millis(50)))
        .build()
        .expect("build group");
    assert_eq!(
        group.stats().slow_turn_threshold,
        Some(Duration::from_millis(50))
    );
    let sleeper = rt.spawner().group(&group).spawn(worker());
    sleeper.post(Nap(Duration::from_millis(300))).unwrap();

    wait_for("the slow turn to be counted", || {
        group.stats().slow_turns >= 1
    });
    wait_for("the slow handler to return", || group.counts().handled == 1);
    rt.block_until_idle();
    wait_for("the worker to stop counting as blocked", || {
        group.stats().blocked_workers == 0
    });

    // One slow turn, one report: not one per look the watchdog took while it lasted.
    let stats = group.stats();
    assert_eq!(stats.slow_turns, 1, "{stats:?}");
    let warnings = slow_turn_warnings("sleepy");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let warning = &warnings[0];
    assert_eq!(
        warning.get("process"),
        Some(&sleeper.id().to_string()),
        "{warning:?}"
    );
    let message_type = warning.get("message_type").cloned().unwrap_or_default();
    assert!(
        message_type.ends_with("Nap"),
        "the warning names the message type: {warning:?}"
    );
    let duration: u64 = warning
        .get("duration_ms")
        .and_then(|d| d.parse().ok())
        .expect("a duration in milliseconds");
    assert!(duration > 50, "reported over the threshold: {warning:?}");
    assert_eq!(
        warning.get("threshold_ms").map(String::as_str),
        Some("50"),
        "{warning:?}"
    );
    // The runtime-wide statistics carry it too.
    let in_runtime = rt
        .stats()
        .groups
        .into_iter()
        .find(|g| g.name == "sleepy")
        .expect("the group in the runtime's statistics");
    assert_eq!(in_runtime.slow_turns, 1);
    rt.shutdown_graceful();
}

#[test]
fn a_fast_workload_reports_nothing() {
    capture();
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    // The default threshold (100 ms).
    let group = rt.group("brisk").threads(2).build().expect("build group");
    assert_eq!(
        group.stats().slow_turn_threshold,
        Some(whirl::GroupBuilder::DEFAULT_SLOW_TURN_THRESHOLD)
    );
    let workers: Vec<_> = (0..4)
        .map(|_| rt.spawner().group(&group).spawn(worker()))
        .collect();
    for _ in 0..500 {
        for w in &workers {
            w.post(Tick).unwrap();
        }
    }
    rt.block_until_idle();
    assert_eq!(group.counts().handled, 2_000);
    // Give the watchdog a few looks at the idle workers (not a measure of anything).
    std::thread::sleep(Duration::from_millis(200));

    let stats = group.stats();
    assert_eq!(stats.slow_turns, 0, "{stats:?}");
    assert_eq!(stats.blocked_workers, 0, "{stats:?}");
    assert!(slow_turn_warnings("brisk").is_empty());
    rt.shutdown_graceful();
}

#[test]
fn a_group_without_a_threshold_reports_nothing() {
    capture();
    let rt = Runtime::builder()
        .threads(1)
        .slow_turn_threshold(None)
        .build()
        .expect("the runtime starts");
    assert_eq!(rt.default_group().stats().slow_turn_threshold, None);
    let group = rt
        .group("unwatched")
        .threads(1)
        .slow_turn_threshold(None)
        .build()
        .expect("build group");
    let sleeper = rt.spawner().group(&group).spawn(worker());
    sleeper.post(Nap(Duration::from_millis(300))).unwrap();
    // The same, in the default group.
    let default_sleeper = rt.spawn(worker());
    default_sleeper
        .post(Nap(Duration::from_millis(300)))
        .unwrap();
    rt.block_until_idle();
    assert_eq!(group.counts().handled, 1);

    for stats in [group.stats(), rt.default_group().stats()] {
        assert_eq!(stats.slow_turn_threshold, None, "{stats:?}");
        assert_eq!(stats.slow_turns, 0, "{stats:?}");
        assert_eq!(stats.blocked_workers, 0, "{stats:?}");
    }
    assert!(slow_turn_warnings("unwatched").is_empty());
    rt.shutdown_graceful();
}

#[test]
fn adaptive_concurrency_gives_a_blocked_group_a_thread() {
    capture();
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let group = rt
        .group("growing")
        .threads(1..=3)
        .controller(AdaptiveConcurrency::new().period(Duration::from_millis(50)))
        .slow_turn_threshold(Some(Duration::from_millis(50)))
        .build()
        .expect("build group");
    assert_eq!(group.threads(), 1);

    // Block the group's only worker.
    let gate = Gate::new();
    let blocker = rt.spawner().group(&group).spawn(worker());
    blocker.post(Hold(common::gate(&gate))).unwrap();
    wait_for("the worker to count as blocked", || {
        group.stats().blocked_workers == 1
    });
    assert_eq!(group.threads(), 1, "nothing waits yet: no thread added");

    // Work for other processes queues behind it: far below the backlog threshold, with no
    // queue latency measured (nothing was handled), so only the blocked worker says "grow".
    let others: Vec<_> = (0..3)
        .map(|_| rt.spawner().group(&group).spawn(worker()))
        .collect();
    for other in &others {
        other.post(Tick).unwrap();
    }
    wait_for("a second thread", || group.threads() >= 2);
    // The new thread takes the waiting work while the first is still held.
    wait_for("the queued ticks to be handled", || {
        group.counts().handled >= 3
    });
    assert_eq!(group.stats().blocked_workers, 1, "the first is still held");

    gate.open();
    rt.block_until_idle();
    let stats = group.stats();
    assert_eq!(stats.slow_turns, 1, "{stats:?}");
    assert_eq!(slow_turn_warnings("growing").len(), 1);
    rt.shutdown_graceful();
}
