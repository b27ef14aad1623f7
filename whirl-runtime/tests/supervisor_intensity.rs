//! OTP's supervisor suite, restart intensity and escalation: restarts within the period add
//! up to a failure of the supervisor, restarts spread over more than the period never do (on
//! a `ManualClock`, so the period is exact); a child that fails in its start hook; a restart
//! storm bounded by the intensity; escalation through two levels up to a root that fails and
//! is reported, not hung on.

mod common;
mod supervisor_support;

use std::time::Duration;
use whirl_runtime::request::Sender as _;

use common::{failure, within_guard};
use supervisor_support::{child, runtime, start, Child, Do, Log, Seen};
use whirl_runtime::supervision::{ChildSpec, EventKind, Supervisor};
use whirl_runtime::time::ManualClock;
use whirl_runtime::ExitReason;

const PERIOD: Duration = Duration::from_secs(5);

#[test]
fn more_restarts_than_the_intensity_within_the_period_fail_the_supervisor() {
    let rt = runtime();
    let mut log = Log::new();
    let clock = ManualClock::new();
    let spec = log
        .spec("sup")
        .intensity(2, PERIOD)
        .clock(clock.clone())
        .child(log.worker("w"))
        .child(log.worker("other"));
    let sup = start(&rt, spec);

    for _ in 0..2 {
        child(&rt, "w").post(Do::Fail("boom")).unwrap();
        log.restarted("sup", "w");
        clock.advance(Duration::from_secs(1));
    }
    child(&rt, "w").post(Do::Fail("boom")).unwrap();
    let exceeded = log.event("sup", |k| matches!(k, EventKind::IntensityExceeded { .. }));
    assert_eq!(
        exceeded,
        EventKind::IntensityExceeded {
            max_restarts: 2,
            period: PERIOD
        }
    );
    let reason = log.sup_terminated("sup");
    assert!(failure(&reason)
        .reason()
        .contains("maximum restart intensity"));
    // The remaining children were stopped (shut down) before the supervisor failed.
    let (_, other) = log.child_stopped("other");
    assert_eq!(other, ExitReason::Shutdown);
    rt.block_until_idle();
    assert!(sup.is_terminated());
    assert_eq!(rt.live_processes(), 0);
}

#[test]
fn restarts_spread_over_more_than_the_period_never_add_up() {
    let rt = runtime();
    let mut log = Log::new();
    let clock = ManualClock::new();
    let spec = log
        .spec("sup")
        .intensity(2, PERIOD)
        .clock(clock.clone())
        .child(log.worker("w"));
    let sup = start(&rt, spec);

    for _ in 0..8 {
        child(&rt, "w").post(Do::Fail("boom")).unwrap();
        log.restarted("sup", "w");
        clock.advance(Duration::from_secs(3));
    }
    rt.block_until_idle();
    assert!(!sup.is_terminated());
    assert_eq!(sup.count_children().unwrap().restarts, 8);
    assert_eq!(sup.which_children().unwrap()[0].restarts, 8);
    assert!(!log.rest().iter().any(|s| matches!(
        s,
        Seen::Sup(e) if matches!(e.kind, EventKind::IntensityExceeded { .. })
    )));
    rt.shutdown_graceful();
}

#[test]
fn the_default_intensity_is_one_restart_in_five_seconds() {
    let rt = runtime();
    let mut log = Log::new();
    let clock = ManualClock::new();
    let spec = log.spec("sup").clock(clock.clone()).child(log.worker("w"));
    let _sup = start(&rt, spec);

    child(&rt, "w").post(Do::Fail("one")).unwrap();
    log.restarted("sup", "w");
    clock.advance(Duration::from_secs(5));
    // Five seconds later the first restart no longer counts.
    child(&rt, "w").post(Do::Fail("two")).unwrap();
    log.restarted("sup", "w");
    clock.advance(Duration::from_millis(4_999));
    child(&rt, "w").post(Do::Fail("three")).unwrap();
    assert!(log.sup_terminated("sup").is_failure());
}

#[test]
fn a_child_that_fails_in_its_start_hook_is_restarted() {
    let rt = runtime();
    let mut log = Log::new();
    let spec = log
        .spec("sup")
        .clock(ManualClock::new())
        .child(log.failing_start("flaky", 1));
    let sup = start(&rt, spec);

    let exited = log.event("sup", |k| matches!(k, EventKind::ChildExited { .. }));
    let EventKind::ChildExited { reason, .. } = exited else {
        unreachable!()
    };
    assert_eq!(failure(&reason).reason(), "cannot start [expected]");
    let pid = log.restarted("sup", "flaky");
    log.wait(
        "flaky started",
        |s| matches!(s, Seen::Started { name: "flaky", pid: p } if *p == pid),
    );
    rt.block_until_idle();
    assert_eq!(sup.which_children().unwrap()[0].pid, Some(pid));
    rt.shutdown_graceful();
}

#[test]
fn a_child_that_never_starts_is_a_restart_storm_bounded_by_the_intensity() {
    let rt = runtime();
    let mut log = Log::new();
    let spec = log
        .spec("sup")
        .intensity(3, PERIOD)
        .clock(ManualClock::new())
        .child(log.failing_start("doomed", usize::MAX));
    let _sup = rt.spawn(Supervisor::new(spec));

    assert!(log.sup_terminated("sup").is_failure());
    rt.block_until_idle();
    let restarts = log
        .rest()
        .iter()
        .filter(|s| matches!(s, Seen::Sup(e) if matches!(e.kind, EventKind::ChildRestarted { .. })))
        .count();
    assert_eq!(
        restarts, 3,
        "the first start and three restarts, then escalation"
    );
    assert_eq!(rt.live_processes(), 0);
}

#[test]
fn a_child_that_panics_repeatedly_is_bounded_by_the_intensity() {
    let rt = runtime();
    let mut log = Log::new();
    let spec = log
        .spec("sup")
        .intensity(3, PERIOD)
        .clock(ManualClock::new())
        .child(log.worker("panicky"));
    let _sup = start(&rt, spec);

    for _ in 0..3 {
        child(&rt, "panicky").post(Do::Panic).unwrap();
        log.restarted("sup", "panicky");
    }
    child(&rt, "panicky").post(Do::Panic).unwrap();
    log.event("sup", |k| matches!(k, EventKind::IntensityExceeded { .. }));
    assert!(log.sup_terminated("sup").is_failure());
}

/// root (one-for-one, 1 in 5 s) ── peer
///                              └─ mid (one-for-one, 1 in 5 s) ── leaf
#[test]
fn escalation_through_two_levels_ends_in_a_reported_root_failure() {
    let rt = runtime();
    let mut log = Log::new();
    let clock = ManualClock::new();
    // `mid` starts from a clone of its spec at every restart, and inherits the root's clock.
    let mid = ChildSpec::supervisor("mid", log.spec("mid").child(log.worker("leaf")));
    let spec = log
        .spec("root")
        .clock(clock.clone())
        .child(log.worker("peer"))
        .child(mid);
    let root = start(&rt, spec);

    // Level one: the leaf fails twice, the mid supervisor gives up and the root restarts it.
    child(&rt, "leaf").post(Do::Fail("one")).unwrap();
    log.restarted("mid", "leaf");
    rt.block_until_idle();
    child(&rt, "leaf").post(Do::Fail("two")).unwrap();
    assert!(log.sup_terminated("mid").is_failure());
    log.restarted("root", "mid");
    rt.block_until_idle();
    assert!(!root.is_terminated());

    // Level two: the new mid supervisor gives up too, within the root's period.
    child(&rt, "leaf").post(Do::Fail("three")).unwrap();
    log.restarted("mid", "leaf");
    rt.block_until_idle();
    child(&rt, "leaf").post(Do::Fail("four")).unwrap();
    let reason = log.sup_terminated("root");
    assert!(failure(&reason).reason().contains("`root`"));
    let (_, peer) = log.child_stopped("peer");
    assert_eq!(peer, ExitReason::Shutdown);

    // Nothing hangs: the runtime goes idle with the whole tree gone, and shuts down.
    rt.block_until_idle();
    assert!(root.is_terminated());
    assert_eq!(rt.live_processes(), 0);
    within_guard("shutdown after a root failure", move || {
        rt.shutdown_graceful()
    });
}

#[test]
fn a_factory_that_panics_fails_the_supervisor_and_stops_its_children() {
    let rt = runtime();
    let mut log = Log::new();
    let spec = log
        .spec("sup")
        .child(log.worker("good"))
        .child(ChildSpec::worker_with("bad", (), |()| -> Child {
            panic!("cannot build [expected]")
        }));
    rt.spawn(Supervisor::new(spec));
    let reason = log.sup_terminated("sup");
    assert_eq!(
        failure(&reason).kind(),
        &whirl_runtime::FailureKind::Panic,
        "{reason}"
    );
    rt.block_until_idle();
    assert_eq!(rt.live_processes(), 0, "`good` was stopped too");
}
