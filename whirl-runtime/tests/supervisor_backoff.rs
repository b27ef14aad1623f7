//! Restart with backoff (issue 38): a child whose failures come from outside it is restarted
//! after growing delays, capped, outside the restart intensity, so that an outage longer than
//! the intensity period does not fail the supervisor.
//!
//! Nothing here measures time. The delays are asserted as the supervisor reports them
//! (`RestartDelayed`), their order against the restarts as the events' order; the intensity
//! period and the backoff's reset run on a `ManualClock` the test advances; the delays
//! themselves are real (the runtime's timers) and short, or an hour where a test needs a
//! restart that does not happen.

mod common;
mod supervisor_support;

use std::time::Duration;

use common::{failure, within_guard};
use supervisor_support::{child, running, runtime, start, Do, Log, Seen};
use whirl_runtime::request::Sender as _;
use whirl_runtime::supervision::{Backoff, ChildSpec, EventKind, RestartStrategy, Supervisor};
use whirl_runtime::time::ManualClock;
use whirl_runtime::ExitReason;

const MS: Duration = Duration::from_millis(1);
const PERIOD: Duration = Duration::from_secs(5);

/// The supervisor's events about child `id`, in order, from everything seen.
fn events_of(seen: &[Seen], id: &str) -> Vec<EventKind> {
    seen.iter()
        .filter_map(|s| match s {
            Seen::Sup(e) => Some(e.kind.clone()),
            _ => None,
        })
        .filter(|k| match k {
            EventKind::ChildStarted { id: i, .. }
            | EventKind::ChildExited { id: i, .. }
            | EventKind::ChildRestarted { id: i, .. }
            | EventKind::RestartDelayed { id: i, .. }
            | EventKind::BackoffExhausted { id: i, .. } => i == id,
            _ => false,
        })
        .collect()
}

/// The `(attempt, delay)` of each `RestartDelayed` in `events`.
fn delays(events: &[EventKind]) -> Vec<(u32, Duration)> {
    events
        .iter()
        .filter_map(|k| match k {
            EventKind::RestartDelayed { attempt, delay, .. } => Some((*attempt, *delay)),
            _ => None,
        })
        .collect()
}

#[track_caller]
fn delayed(log: &mut Log, sup: &str, id: &str) -> (u32, Duration) {
    match log.event(
        sup,
        |k| matches!(k, EventKind::RestartDelayed { id: i, .. } if i == id),
    ) {
        EventKind::RestartDelayed { attempt, delay, .. } => (attempt, delay),
        _ => unreachable!(),
    }
}

/// A child that cannot start six times (its database is down), under the default intensity (1
/// restart in 5 s, on a clock that never moves): without backoff the second restart would fail
/// the supervisor. With it, each failure waits twice as long as the one before, up to the cap,
/// and each restart comes after its delay was announced.
#[test]
fn restarts_wait_growing_delays_up_to_the_cap() {
    let rt = runtime();
    let mut log = Log::new();
    let db = log
        .failing_start("db", 6)
        .backoff(Backoff::exponential(MS, 8 * MS));
    let spec = log.spec("sup").clock(ManualClock::new()).child(db);
    let sup = rt.spawn(Supervisor::new(spec));

    log.wait_keep("db started", |s| {
        matches!(s, Seen::Started { name: "db", .. })
    });
    rt.block_until_idle();
    let events = events_of(&log.rest(), "db");
    let delays = delays(&events);
    let attempts: Vec<u32> = delays.iter().map(|(a, _)| *a).collect();
    assert_eq!(attempts, [1, 2, 3, 4, 5, 6]);
    let millis: Vec<u128> = delays.iter().map(|(_, d)| d.as_millis()).collect();
    assert_eq!(millis, [1, 2, 4, 8, 8, 8], "doubling, then capped");
    assert!(delays.windows(2).all(|w| w[0].1 <= w[1].1), "never shorter");

    // In order: every failure is followed by its delay, then by its restart.
    let shape: Vec<&str> = events
        .iter()
        .map(|k| match k {
            EventKind::ChildStarted { .. } => "started",
            EventKind::ChildExited { .. } => "exited",
            EventKind::RestartDelayed { .. } => "delayed",
            EventKind::ChildRestarted { .. } => "restarted",
            _ => "other",
        })
        .collect();
    let mut expected = vec!["started"];
    for _ in 0..6 {
        expected.extend(["exited", "delayed", "restarted"]);
    }
    assert_eq!(shape, expected);

    assert!(!sup.is_terminated());
    let counts = sup.count_children().unwrap();
    assert_eq!((counts.active, counts.restarts), (1, 6));
    rt.shutdown_graceful();
}

/// Ten failures over ten seconds of the supervisor's clock, twice its intensity period: every
/// one is restarted, and the supervisor never exceeds its intensity.
#[test]
fn an_outage_longer_than_the_intensity_period_is_ridden_out() {
    let rt = runtime();
    let mut log = Log::new();
    let clock = ManualClock::new();
    let db = log
        .worker("db")
        .backoff(Backoff::exponential(MS, 4 * MS).reset_after(Duration::from_secs(60)));
    let spec = log
        .spec("sup")
        .intensity(1, PERIOD)
        .clock(clock.clone())
        .child(db);
    let sup = start(&rt, spec);

    let mut seen_delays = Vec::new();
    for _ in 0..10 {
        child(&rt, "db")
            .post(Do::Fail("the database is down"))
            .unwrap();
        seen_delays.push(delayed(&mut log, "sup", "db"));
        log.restarted("sup", "db");
        clock.advance(Duration::from_secs(1));
    }
    rt.block_until_idle();
    assert!(!sup.is_terminated());
    assert_eq!(sup.count_children().unwrap().restarts, 10);
    assert!(!log.rest().iter().any(|s| matches!(
        s,
        Seen::Sup(e) if matches!(e.kind, EventKind::IntensityExceeded { .. })
    )));
    let attempts: Vec<u32> = seen_delays.iter().map(|(a, _)| *a).collect();
    assert_eq!(
        attempts,
        (1..=10).collect::<Vec<_>>(),
        "one run of failures"
    );
    assert!(seen_delays.iter().all(|(_, d)| *d <= 4 * MS), "capped");
    rt.shutdown_graceful();
}

/// Only the backoff child's restarts are exempt: a sibling without one still fails the
/// supervisor on its second restart within the period, after the backoff child's three.
#[test]
fn other_children_still_count_against_the_intensity() {
    let rt = runtime();
    let mut log = Log::new();
    let spec = log
        .spec("sup")
        .intensity(1, PERIOD)
        .clock(ManualClock::new())
        .child(log.worker("db").backoff(Backoff::exponential(MS, 2 * MS)))
        .child(log.worker("w"));
    let _sup = start(&rt, spec);

    for _ in 0..3 {
        child(&rt, "db").post(Do::Fail("outage")).unwrap();
        log.restarted("sup", "db");
    }
    child(&rt, "w").post(Do::Fail("bug")).unwrap();
    log.restarted("sup", "w");
    child(&rt, "w").post(Do::Fail("bug")).unwrap();
    log.event("sup", |k| matches!(k, EventKind::IntensityExceeded { .. }));
    assert!(failure(&log.sup_terminated("sup"))
        .reason()
        .contains("maximum restart intensity"));
}

/// A child that ran at least `reset_after` (on the supervisor's clock) before failing starts
/// again from the shortest delay; one that did not goes on where its run left off.
#[test]
fn a_child_that_ran_long_enough_starts_again_from_the_shortest_delay() {
    let rt = runtime();
    let mut log = Log::new();
    let clock = ManualClock::new();
    let db = log
        .worker("db")
        .backoff(Backoff::exponential(MS, 8 * MS).reset_after(Duration::from_secs(10)));
    let spec = log.spec("sup").clock(clock.clone()).child(db);
    let _sup = start(&rt, spec);

    let fail = |log: &mut Log| {
        child(&rt, "db").post(Do::Fail("outage")).unwrap();
        let d = delayed(log, "sup", "db");
        log.restarted("sup", "db");
        d
    };
    assert_eq!(fail(&mut log), (1, MS));
    assert_eq!(fail(&mut log), (2, 2 * MS));
    clock.advance(Duration::from_secs(9));
    assert_eq!(fail(&mut log), (3, 4 * MS), "ran 9 s: not long enough");
    clock.advance(Duration::from_secs(10));
    assert_eq!(fail(&mut log), (1, MS), "ran 10 s: reset");
    assert_eq!(fail(&mut log), (2, 2 * MS));
    rt.shutdown_graceful();
}

/// Jitter shortens each delay by at most its fraction, and the cap stays an upper bound.
#[test]
fn jittered_delays_stay_between_their_floor_and_the_cap() {
    let rt = runtime();
    let mut log = Log::new();
    let backoff = Backoff::exponential(2 * MS, 16 * MS).jitter(0.5);
    let db = log.failing_start("db", 8).backoff(backoff);
    let spec = log.spec("sup").clock(ManualClock::new()).child(db);
    let _sup = rt.spawn(Supervisor::new(spec));

    log.wait_keep("db started", |s| {
        matches!(s, Seen::Started { name: "db", .. })
    });
    let delays = delays(&events_of(&log.rest(), "db"));
    assert_eq!(delays.len(), 8);
    for (attempt, delay) in delays {
        let full = backoff.delay(attempt);
        assert!(delay <= full && delay >= full / 2, "{attempt}: {delay:?}");
        assert!(delay <= backoff.max_delay());
    }
    rt.shutdown_graceful();
}

/// With `max_attempts(3)`, the fourth failure in a row fails the supervisor: escalation, as
/// when the intensity is exceeded.
#[test]
fn a_backoff_that_gives_up_fails_the_supervisor() {
    let rt = runtime();
    let mut log = Log::new();
    let db = log
        .failing_start("db", usize::MAX)
        .backoff(Backoff::exponential(MS, 2 * MS).max_attempts(3));
    let spec = log
        .spec("sup")
        .clock(ManualClock::new())
        .child(db)
        .child(log.worker("other"));
    let _sup = rt.spawn(Supervisor::new(spec));

    let reason = log.sup_terminated("sup");
    assert!(
        failure(&reason)
            .reason()
            .contains("3 delayed restarts in a row"),
        "{reason}"
    );
    let (_, other) = log.child_stopped("other");
    assert_eq!(other, ExitReason::Shutdown);
    rt.block_until_idle();
    let events = events_of(&log.rest(), "db");
    let attempts: Vec<u32> = delays(&events).iter().map(|(a, _)| *a).collect();
    assert_eq!(attempts, [1, 2, 3]);
    assert!(events.contains(&EventKind::BackoffExhausted {
        id: "db".into(),
        attempts: 3
    }));
    assert_eq!(rt.live_processes(), 0);
}

/// One-for-all: the sibling is stopped at once, and restarted with the failed child once its
/// delay is over, as one restart.
#[test]
fn one_for_all_restarts_the_siblings_with_the_child_after_its_delay() {
    let rt = runtime();
    let mut log = Log::new();
    let spec = log
        .spec("sup")
        .strategy(RestartStrategy::OneForAll)
        .clock(ManualClock::new())
        .child(log.worker("db").backoff(Backoff::exponential(MS, 2 * MS)))
        .child(log.worker("cache"));
    let sup = start(&rt, spec);

    child(&rt, "db").post(Do::Fail("outage")).unwrap();
    log.restarted("sup", "cache");
    rt.block_until_idle();
    let order: Vec<String> = log
        .rest()
        .into_iter()
        .filter_map(|s| match s {
            Seen::Sup(e) => match e.kind {
                EventKind::ChildExited { id, reason, .. } => Some(format!("exited {id} {reason}")),
                EventKind::RestartDelayed { id, .. } => Some(format!("delayed {id}")),
                EventKind::ChildRestarted { id, .. } => Some(format!("restarted {id}")),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(order.len(), 4, "{order:?}");
    assert!(order[0].starts_with("exited db failed"), "{order:?}");
    assert_eq!(order[1], "delayed db");
    assert_eq!(order[2], "exited cache shutdown");
    assert_eq!(order[3], "restarted db");
    assert_eq!(sup.count_children().unwrap().restarts, 1);
    rt.shutdown_graceful();
}

/// A child waiting out an hour's delay is stopped, the supervisor keeps answering, and the
/// dynamic API acts on it: `terminate_child` cancels the restart, `restart_child` starts it at
/// once. Shutting down does not wait for the hour.
#[test]
fn a_waiting_child_is_stopped_and_the_dynamic_api_overrides_its_delay() {
    let rt = runtime();
    let mut log = Log::new();
    let hour = Duration::from_secs(3600);
    let spec = log
        .spec("sup")
        .clock(ManualClock::new())
        .child(log.worker("db").backoff(Backoff::exponential(hour, hour)));
    let sup = start(&rt, spec);

    child(&rt, "db").post(Do::Fail("outage")).unwrap();
    assert_eq!(delayed(&mut log, "sup", "db"), (1, hour));
    rt.block_until_idle();
    assert_eq!(running(&sup, "db"), Some(false), "waiting, stopped");
    assert!(rt.whereis::<supervisor_support::Child>("db").is_none());
    assert_eq!(sup.count_children().unwrap().active, 0);

    sup.terminate_child("db").unwrap();
    let pid = sup.restart_child("db").unwrap();
    assert_eq!(sup.which_child("db").unwrap().pid, Some(pid));

    // A new run of failures: the delay starts again from `min`, and the shutdown cancels it.
    child(&rt, "db").post(Do::Fail("outage")).unwrap();
    assert_eq!(delayed(&mut log, "sup", "db"), (1, hour));
    within_guard("shutdown with a restart an hour away", move || {
        rt.shutdown_graceful()
    });
}

#[test]
fn an_invalid_backoff_is_a_spec_error() {
    let rt = runtime();
    let mut log = Log::new();
    let spec = log.spec("sup").child(
        ChildSpec::worker("db", supervisor_support::Child::new("db", &log.sender()))
            .backoff(Backoff::exponential(Duration::ZERO, MS)),
    );
    rt.spawn(Supervisor::new(spec));
    let reason = log.sup_terminated("sup");
    assert!(failure(&reason).reason().contains("backoff"), "{reason}");
}
