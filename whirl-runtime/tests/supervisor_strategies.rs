//! OTP's supervisor suite, strategies × restart types: for each of one-for-one, one-for-all
//! and rest-for-one, a child of each restart type exits normally or abnormally between two
//! permanent siblings, and the test checks who was restarted and who was left alone. Then the
//! order of a one-for-all restart, and temporary children under one-for-all.

mod common;
mod supervisor_support;

use std::time::Duration;
use whirl_runtime::request::Sender as _;

use supervisor_support::{child, pid_of, runtime, start, Do, Log, Seen};
use whirl_runtime::supervision::{EventKind, Restart, RestartStrategy};
use whirl_runtime::time::ManualClock;
use whirl_runtime::ProcessId;

/// The siblings' and the subject's pids before and after.
fn pids(
    sup: &whirl_runtime::Addr<whirl_runtime::supervision::Supervisor>,
) -> Vec<Option<ProcessId>> {
    sup.which_children()
        .unwrap()
        .into_iter()
        .map(|c| c.pid)
        .collect()
}

fn case(strategy: RestartStrategy, restart: Restart, abnormal: bool) {
    let what = format!("{strategy:?} / {restart:?} / abnormal={abnormal}");
    let rt = runtime();
    let mut log = Log::new();
    let spec = log
        .spec("sup")
        .strategy(strategy)
        .intensity(10, Duration::from_secs(5))
        .clock(ManualClock::new())
        .child(log.worker("first"))
        .child(log.worker("subject").restart(restart))
        .child(log.worker("last"));
    let sup = start(&rt, spec);
    let before = pids(&sup);

    let subject = child(&rt, "subject");
    subject
        .post(if abnormal {
            Do::Fail("boom")
        } else {
            Do::Complete
        })
        .unwrap();
    let restarted = match restart {
        Restart::Permanent => true,
        Restart::Transient => abnormal,
        Restart::Temporary => false,
    };
    if restarted {
        log.restarted("sup", "subject");
        match strategy {
            RestartStrategy::OneForAll => {
                log.restarted("sup", "first");
                log.restarted("sup", "last");
            }
            RestartStrategy::RestForOne => {
                log.restarted("sup", "last");
            }
            _ => {}
        }
    } else {
        log.event(
            "sup",
            |k| matches!(k, EventKind::ChildExited { id, .. } if id == "subject"),
        );
    }
    rt.block_until_idle();
    let after = pids(&sup);

    let (first_restarted, last_restarted) = match (restarted, strategy) {
        (false, _) | (true, RestartStrategy::OneForOne) => (false, false),
        (true, RestartStrategy::OneForAll) => (true, true),
        (true, _) => (false, true),
    };
    let ids: Vec<String> = sup
        .which_children()
        .unwrap()
        .into_iter()
        .map(|c| c.id)
        .collect();
    if restart == Restart::Temporary {
        assert_eq!(
            ids,
            ["first", "last"],
            "{what}: a temporary child is removed"
        );
        assert_eq!(after, [before[0], before[2]], "{what}: siblings untouched");
        return;
    }
    assert_eq!(ids, ["first", "subject", "last"], "{what}");
    assert_eq!(after[0] != before[0], first_restarted, "{what}: first");
    assert_eq!(after[2] != before[2], last_restarted, "{what}: last");
    if restarted {
        assert!(
            after[1].is_some() && after[1] != before[1],
            "{what}: subject"
        );
    } else {
        assert_eq!(after[1], None, "{what}: subject stays stopped");
    }
    assert!(
        !log.rest().iter().any(|s| matches!(
            s,
            Seen::Sup(e) if matches!(&e.kind, EventKind::IntensityExceeded { .. })
        )),
        "{what}"
    );
    rt.shutdown_graceful();
}

#[test]
fn one_for_one_with_each_restart_type_and_exit() {
    for restart in [Restart::Permanent, Restart::Transient, Restart::Temporary] {
        for abnormal in [false, true] {
            case(RestartStrategy::OneForOne, restart, abnormal);
        }
    }
}

#[test]
fn one_for_all_with_each_restart_type_and_exit() {
    for restart in [Restart::Permanent, Restart::Transient, Restart::Temporary] {
        for abnormal in [false, true] {
            case(RestartStrategy::OneForAll, restart, abnormal);
        }
    }
}

#[test]
fn rest_for_one_with_each_restart_type_and_exit() {
    for restart in [Restart::Permanent, Restart::Transient, Restart::Temporary] {
        for abnormal in [false, true] {
            case(RestartStrategy::RestForOne, restart, abnormal);
        }
    }
}

#[test]
fn a_panicking_child_is_restarted_like_a_failing_one() {
    let rt = runtime();
    let mut log = Log::new();
    let spec = log
        .spec("sup")
        .child(log.worker("p").restart(Restart::Transient));
    let sup = start(&rt, spec);
    let old = pid_of(&sup, "p");
    child(&rt, "p").post(Do::Panic).unwrap();
    let new = log.restarted("sup", "p");
    assert_ne!(new, old);
    rt.shutdown_graceful();
}

#[test]
fn one_for_all_stops_siblings_in_reverse_order_and_restarts_in_start_order() {
    let rt = runtime();
    let mut log = Log::new();
    let spec = log
        .spec("sup")
        .strategy(RestartStrategy::OneForAll)
        .child(log.worker("a"))
        .child(log.worker("b"))
        .child(log.worker("c"))
        .child(log.worker("d"));
    let _sup = start(&rt, spec);
    log.rest();

    child(&rt, "b").post(Do::Fail("boom")).unwrap();
    log.wait_keep("d restarted", |s| {
        matches!(s, Seen::Sup(e) if matches!(&e.kind, EventKind::ChildRestarted { id, .. } if id == "d"))
    });
    rt.block_until_idle();
    let seen = log.rest();
    let stopped: Vec<_> = seen
        .iter()
        .filter_map(|s| match s {
            Seen::Stopped { name, .. } => Some(*name),
            _ => None,
        })
        .collect();
    assert_eq!(
        stopped,
        ["b", "d", "c", "a"],
        "b failed; then the rest in reverse"
    );
    let restarted: Vec<_> = seen
        .iter()
        .filter_map(|s| match s {
            Seen::Sup(e) => match &e.kind {
                EventKind::ChildRestarted { id, .. } => Some(id.as_str()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(restarted, ["a", "b", "c", "d"]);
    rt.shutdown_graceful();
}

#[test]
fn temporary_children_under_one_for_all_are_stopped_and_not_restarted() {
    let rt = runtime();
    let mut log = Log::new();
    let spec = log
        .spec("sup")
        .strategy(RestartStrategy::OneForAll)
        .child(log.worker("a"))
        .child(log.worker("tmp").restart(Restart::Temporary))
        .child(log.worker("c"));
    let sup = start(&rt, spec);

    child(&rt, "a").post(Do::Fail("boom")).unwrap();
    log.restarted("sup", "c");
    let (_, reason) = log.child_stopped("tmp");
    assert_eq!(
        reason,
        whirl_runtime::ExitReason::Shutdown,
        "stopped, not failed"
    );
    rt.block_until_idle();
    let ids: Vec<String> = sup
        .which_children()
        .unwrap()
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(ids, ["a", "c"], "the temporary child is gone");
    assert!(rt.whereis::<supervisor_support::Child>("tmp").is_none());
    assert_eq!(sup.count_children().unwrap().restarts, 1);
    rt.shutdown_graceful();
}
