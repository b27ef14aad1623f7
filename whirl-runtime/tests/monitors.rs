//! Invariant 5 and the paper's section III-A, row by row: a *system* monitor receives every
//! termination notice as an ordinary message; a *non-system* monitor fails when the process it
//! monitors fails and ignores normal exits; `link` monitors both ways; monitoring a process
//! that has already terminated delivers the notice at once; failures travel along chains.

mod common;

use common::{
    events, failure, link, make_complete, make_fail, monitor, post_job, run, Event, Plain, System,
};
use whirl_runtime::admission::Offer;
use whirl_runtime::{Down, ExitReason, Failure, FailureKind, Runtime};

fn runtime() -> Runtime {
    common::quiet_expected_panics();
    Runtime::builder()
        .threads(2)
        .build()
        .expect("the runtime starts")
}

/// Asserts that `reason` is a linked failure caused by `peer`, carrying `text`.
#[track_caller]
fn assert_linked(reason: &ExitReason, peer: whirl_runtime::ProcessId, text: &str) {
    let f = failure(reason);
    assert_eq!(f.kind(), &FailureKind::Linked(peer), "{reason:?}");
    assert_eq!(f.reason(), text);
}

// --- System monitors -----------------------------------------------------------------------

#[test]
fn a_system_monitor_gets_down_for_a_normal_exit() {
    let rt = runtime();
    let (tx, mut ev) = events();
    let sup = rt.spawn(System::new("sup", &tx));
    let w = rt.spawn(Plain::new("w", &tx));
    monitor(&sup, &w);
    make_complete(&w);
    assert_eq!(ev.down("sup"), Down::new(w.id(), ExitReason::Normal));
    rt.block_until_idle();
    assert!(!sup.is_terminated());
    rt.shutdown_graceful();
}

#[test]
fn a_system_monitor_gets_down_for_an_error_and_for_a_panic() {
    let rt = runtime();
    let (tx, mut ev) = events();
    let sup = rt.spawn(System::new("sup", &tx));
    let erring = rt.spawn(Plain::new("erring", &tx));
    let panicking = rt.spawn(Plain::new("panicking", &tx));
    monitor(&sup, &erring);
    monitor(&sup, &panicking);

    make_fail(&erring, "bad input");
    let down = ev.down("sup");
    assert_eq!(down.id, erring.id());
    assert_eq!(down.reason, ExitReason::Failed(Failure::new("bad input")));

    post_job(&panicking, |_, _| panic!("[expected] kaboom")).unwrap();
    let down = ev.down("sup");
    assert_eq!(down.id, panicking.id());
    let f = failure(&down.reason);
    assert_eq!(
        (f.kind(), f.reason()),
        (&FailureKind::Panic, "[expected] kaboom")
    );

    // The system monitor handles these as messages and keeps running.
    assert_eq!(run(&sup, |n, _| n.name), "sup");
    rt.shutdown_graceful();
}

#[test]
fn a_system_monitor_hears_every_one_of_many_processes() {
    let rt = runtime();
    let (tx, mut ev) = events();
    let sup = rt.spawn(System::new("sup", &tx));
    let workers: Vec<_> = (0..100).map(|_| rt.spawn(Plain::new("w", &tx))).collect();
    for w in &workers {
        monitor(&sup, w);
    }
    for (i, w) in workers.iter().enumerate() {
        if i % 2 == 0 {
            make_complete(w);
        } else {
            make_fail(w, "odd");
        }
    }
    let mut downs: Vec<Down> = (0..100).map(|_| ev.down("sup")).collect();
    downs.sort_by_key(|d| d.id);
    let mut expected: Vec<Down> = workers
        .iter()
        .enumerate()
        .map(|(i, w)| {
            Down::new(
                w.id(),
                if i % 2 == 0 {
                    ExitReason::Normal
                } else {
                    ExitReason::Failed(Failure::new("odd"))
                },
            )
        })
        .collect();
    expected.sort_by_key(|d| d.id);
    assert_eq!(downs, expected);
    rt.block_until_idle();
    assert!(
        !ev.rest().iter().any(|e| matches!(e, Event::Down { .. })),
        "one notice per termination"
    );
    rt.shutdown_graceful();
}

#[test]
fn the_notice_arrives_after_the_messages_the_process_sent_before_terminating() {
    // Happened-before: the worker posts to its monitor, then fails; the monitor must see the
    // message first, then the notice, as ordinary messages in order.
    let rt = runtime();
    let (tx, mut ev) = events();
    let sup = rt.spawn(System::new("sup", &tx));
    for round in 0..200 {
        let w = rt.spawn(Plain::new("w", &tx));
        monitor(&sup, &w);
        let sup2 = sup.clone();
        post_job(&w, move |_, _| {
            post_job(&sup2, move |s, _| {
                s.log.push(round);
                Ok(())
            })
            .unwrap();
            Err(Failure::new("done"))
        })
        .unwrap();
        ev.down("sup");
        let log = run(&sup, |s, _| std::mem::take(&mut s.log));
        assert_eq!(log, vec![round], "the notice overtook an earlier message");
    }
    rt.shutdown_graceful();
}

#[test]
fn a_system_monitor_in_a_group_that_rejects_everything_still_gets_notices() {
    // Notices bypass the group's predicate: shedding them would break supervision.
    let rt = runtime();
    let closed = rt
        .group("closed")
        .threads(1)
        .predicate(|_: &Offer<'_>| false)
        .build()
        .expect("build group");
    let (tx, mut ev) = events();
    let w = rt.spawn(Plain::new("w", &tx));
    let sup = rt.spawner().group(&closed).spawn(System::new("sup", &tx));
    assert!(matches!(
        post_job(&sup, |_, _| Ok(())),
        Err(whirl_runtime::PostError::Rejected(_))
    ));
    // Nobody can post to the supervisor, so the worker links to it: the link makes the
    // supervisor monitor the worker.
    let sup2 = sup.clone();
    run(&w, move |_, ctx| ctx.link(&sup2));
    make_fail(&w, "crash");
    let down = ev.down("sup");
    assert_eq!(down.id, w.id());
    assert_eq!(down.reason, ExitReason::Failed(Failure::new("crash")));
    rt.block_until_idle();
    assert!(
        !sup.is_terminated(),
        "a system process survives a linked failure"
    );
    rt.shutdown_graceful();
}

// --- Non-system monitors ---------------------------------------------------------------------

#[test]
fn a_non_system_monitor_fails_when_the_target_fails() {
    let rt = runtime();
    let (tx, mut ev) = events();
    let watcher = rt.spawn(Plain::new("watcher", &tx));
    let target = rt.spawn(Plain::new("target", &tx));
    monitor(&watcher, &target);
    make_fail(&target, "target broke");
    assert_eq!(
        ev.terminated("target"),
        ExitReason::Failed(Failure::new("target broke"))
    );
    assert_linked(&ev.terminated("watcher"), target.id(), "target broke");
    rt.block_until_idle();
    assert!(watcher.is_terminated());
    rt.shutdown_graceful();
}

#[test]
fn a_non_system_monitor_fails_when_the_target_panics() {
    let rt = runtime();
    let (tx, mut ev) = events();
    let watcher = rt.spawn(Plain::new("watcher", &tx));
    let target = rt.spawn(Plain::new("target", &tx));
    monitor(&watcher, &target);
    post_job(&target, |_, _| panic!("[expected] panic in target")).unwrap();
    assert_linked(
        &ev.terminated("watcher"),
        target.id(),
        "[expected] panic in target",
    );
    rt.shutdown_graceful();
}

#[test]
fn a_non_system_monitor_ignores_a_normal_exit() {
    let rt = runtime();
    let (tx, mut ev) = events();
    let watcher = rt.spawn(Plain::new("watcher", &tx));
    let target = rt.spawn(Plain::new("target", &tx));
    monitor(&watcher, &target);
    make_complete(&target);
    assert_eq!(ev.terminated("target"), ExitReason::Normal);
    // The notice was dealt with while the target terminated, before the runtime went idle.
    rt.block_until_idle();
    assert!(!watcher.is_terminated());
    assert_eq!(run(&watcher, |n, _| n.name), "watcher");
    assert!(
        ev.rest().is_empty(),
        "the watcher got nothing to see: no Down message, no termination"
    );
    rt.shutdown_graceful();
}

#[test]
fn monitoring_is_one_way() {
    let rt = runtime();
    let (tx, mut ev) = events();
    let watcher = rt.spawn(Plain::new("watcher", &tx));
    let target = rt.spawn(Plain::new("target", &tx));
    monitor(&watcher, &target);
    make_fail(&watcher, "watcher broke");
    ev.terminated("watcher");
    rt.block_until_idle();
    assert!(
        !target.is_terminated(),
        "the target does not watch its monitor"
    );
    assert_eq!(run(&target, |n, _| n.name), "target");
    rt.shutdown_graceful();
}

#[test]
fn demonitor_stops_the_notices() {
    let rt = runtime();
    let (tx, mut ev) = events();
    let system = rt.spawn(System::new("system", &tx));
    let plain = rt.spawn(Plain::new("plain", &tx));
    let target = rt.spawn(Plain::new("target", &tx));
    monitor(&system, &target);
    monitor(&plain, &target);
    let t = target.clone();
    assert!(run(&system, move |_, ctx| ctx.demonitor(&t)));
    let t = target.clone();
    assert!(run(&plain, move |_, ctx| ctx.demonitor(&t)));
    let t = target.clone();
    assert!(
        !run(&system, move |_, ctx| ctx.demonitor(&t)),
        "nothing left to remove"
    );
    make_fail(&target, "gone");
    ev.terminated("target");
    rt.block_until_idle();
    assert!(
        ev.rest().is_empty(),
        "no Down for the system process, no linked failure for the plain one"
    );
    assert!(!plain.is_terminated());
    // Too late: the notice was given.
    let t = target.clone();
    assert!(!run(&system, move |_, ctx| ctx.demonitor(&t)));
    rt.shutdown_graceful();
}

// --- Already terminated ----------------------------------------------------------------------

#[test]
fn monitoring_a_terminated_process_delivers_the_notice_at_once() {
    let rt = runtime();
    let (tx, mut ev) = events();
    let completed = rt.spawn(Plain::new("completed", &tx));
    let failed = rt.spawn(Plain::new("failed", &tx));
    make_complete(&completed);
    make_fail(&failed, "gone");
    ev.terminated("completed");
    ev.terminated("failed");

    // A system monitor: both notices, with the recorded reasons.
    let sup = rt.spawn(System::new("sup", &tx));
    monitor(&sup, &completed);
    assert_eq!(
        ev.down("sup"),
        Down::new(completed.id(), ExitReason::Normal)
    );
    monitor(&sup, &failed);
    assert_eq!(
        ev.down("sup"),
        Down::new(failed.id(), ExitReason::Failed(Failure::new("gone")))
    );

    // A non-system monitor: fails at once on the failed one...
    let late = rt.spawn(Plain::new("late", &tx));
    monitor(&late, &failed);
    assert_linked(&ev.terminated("late"), failed.id(), "gone");

    // ...and ignores the completed one.
    let calm = rt.spawn(Plain::new("calm", &tx));
    monitor(&calm, &completed);
    rt.block_until_idle();
    assert!(!calm.is_terminated());
    rt.shutdown_graceful();
}

#[test]
fn linking_with_a_failed_process_fails_at_once() {
    let rt = runtime();
    let (tx, mut ev) = events();
    let failed = rt.spawn(Plain::new("failed", &tx));
    make_fail(&failed, "gone");
    ev.terminated("failed");
    let late = rt.spawn(Plain::new("late", &tx));
    link(&late, &failed);
    assert_linked(&ev.terminated("late"), failed.id(), "gone");
    rt.shutdown_graceful();
}

// --- Links -----------------------------------------------------------------------------------

#[test]
fn a_link_propagates_a_failure_in_both_directions() {
    let rt = runtime();
    let (tx, mut ev) = events();

    let a = rt.spawn(Plain::new("a1", &tx));
    let b = rt.spawn(Plain::new("b1", &tx));
    link(&a, &b);
    make_fail(&a, "a broke");
    assert_linked(&ev.terminated("b1"), a.id(), "a broke");

    // The other direction: the link was made from `a`'s side, `b` fails.
    let a = rt.spawn(Plain::new("a2", &tx));
    let b = rt.spawn(Plain::new("b2", &tx));
    link(&a, &b);
    make_fail(&b, "b broke");
    assert_linked(&ev.terminated("a2"), b.id(), "b broke");

    rt.shutdown_graceful();
}

#[test]
fn a_normal_exit_does_not_kill_a_linked_peer() {
    let rt = runtime();
    let (tx, mut ev) = events();
    let a = rt.spawn(Plain::new("a", &tx));
    let b = rt.spawn(Plain::new("b", &tx));
    let c = rt.spawn(Plain::new("c", &tx));
    link(&a, &b);
    link(&b, &c);
    make_complete(&a); // the side that made the link
    make_complete(&c); // the side that did not
    assert_eq!(ev.terminated("a"), ExitReason::Normal);
    assert_eq!(ev.terminated("c"), ExitReason::Normal);
    rt.block_until_idle();
    assert!(!b.is_terminated());
    assert_eq!(run(&b, |n, _| n.name), "b");
    rt.shutdown_graceful();
}

#[test]
fn a_system_process_linked_to_a_failing_peer_survives_and_its_failure_kills_the_peer() {
    let rt = runtime();
    let (tx, mut ev) = events();
    let sup = rt.spawn(System::new("sup", &tx));
    let w1 = rt.spawn(Plain::new("w1", &tx));
    let w2 = rt.spawn(Plain::new("w2", &tx));
    link(&sup, &w1);
    link(&w2, &sup);

    make_fail(&w1, "w1 broke");
    let down = ev.down("sup");
    assert_eq!(down.id, w1.id());
    rt.block_until_idle();
    assert!(!sup.is_terminated());
    assert!(!w2.is_terminated());

    // Now the system process itself fails: its non-system peer fails with it.
    make_fail(&sup, "supervisor gave up");
    assert_linked(&ev.terminated("w2"), sup.id(), "supervisor gave up");
    rt.shutdown_graceful();
}

#[test]
fn a_failure_travels_along_a_chain_of_links() {
    let rt = runtime();
    let (tx, mut ev) = events();
    // a - b - c, links made from alternating sides; failure starts at each end in turn.
    for (first, last) in [("a", "c"), ("c", "a")] {
        let a = rt.spawn(Plain::new("a", &tx));
        let b = rt.spawn(Plain::new("b", &tx));
        let c = rt.spawn(Plain::new("c", &tx));
        link(&a, &b);
        link(&c, &b);
        let (start, end) = if first == "a" { (&a, &c) } else { (&c, &a) };
        make_fail(start, "root cause");
        assert_eq!(
            ev.terminated(first),
            ExitReason::Failed(Failure::new("root cause"))
        );
        assert_linked(&ev.terminated("b"), start.id(), "root cause");
        assert_linked(&ev.terminated(last), b.id(), "root cause");
        rt.block_until_idle();
        assert!(end.is_terminated());
        assert!(ev.rest().is_empty());
    }
    rt.shutdown_graceful();
}

#[test]
fn a_failure_in_the_middle_of_a_chain_takes_both_ends() {
    let rt = runtime();
    let (tx, mut ev) = events();
    let a = rt.spawn(Plain::new("a", &tx));
    let b = rt.spawn(Plain::new("b", &tx));
    let c = rt.spawn(Plain::new("c", &tx));
    let sup = rt.spawn(System::new("sup", &tx));
    link(&a, &b);
    link(&b, &c);
    for p in [&a, &b, &c] {
        monitor(&sup, p);
    }
    make_fail(&b, "middle");
    assert_linked(&ev.terminated("a"), b.id(), "middle");
    assert_linked(&ev.terminated("c"), b.id(), "middle");
    // The supervisor hears all three, each with its own reason.
    let mut downs: Vec<Down> = (0..3).map(|_| ev.down("sup")).collect();
    downs.sort_by_key(|d| d.id);
    let kinds: Vec<FailureKind> = downs
        .iter()
        .map(|d| failure(&d.reason).kind().clone())
        .collect();
    assert_eq!(
        kinds,
        vec![
            FailureKind::Linked(b.id()),
            FailureKind::Error,
            FailureKind::Linked(b.id())
        ]
    );
    rt.shutdown_graceful();
}

#[test]
fn monitors_work_across_groups() {
    let rt = runtime();
    let far = rt.group("far").threads(1).build().expect("build group");
    let (tx, mut ev) = events();
    let sup = rt.spawner().group(&far).spawn(System::new("sup", &tx));
    let w = rt.spawn(Plain::new("w", &tx));
    let peer = rt.spawner().group(&far).spawn(Plain::new("peer", &tx));
    monitor(&sup, &w);
    link(&w, &peer);
    make_fail(&w, "cross-group");
    assert_eq!(ev.down("sup").id, w.id());
    assert_linked(&ev.terminated("peer"), w.id(), "cross-group");
    rt.shutdown_graceful();
}

#[test]
fn monitors_registered_while_targets_terminate_each_get_exactly_one_notice() {
    // Registration races with termination: whichever wins, the notice is delivered once
    // (from the terminating process, or at once to a late monitor).
    const TARGETS: usize = 200;
    let rt = runtime();
    let sups_group = rt.group("sups").threads(2).build().expect("build group");
    let (tx, mut ev) = events();
    let names = ["s0", "s1", "s2"];
    let sups: Vec<_> = names
        .iter()
        .map(|n| rt.spawner().group(&sups_group).spawn(System::new(n, &tx)))
        .collect();
    let targets: Vec<_> = (0..TARGETS)
        .map(|_| rt.spawn(Plain::new("t", &tx)))
        .collect();
    std::thread::scope(|s| {
        s.spawn(|| {
            for (i, t) in targets.iter().enumerate() {
                if i % 3 == 0 {
                    make_complete(t);
                } else {
                    make_fail(t, "raced");
                }
            }
        });
        for sup in &sups {
            let targets = targets.clone();
            post_job(sup, move |_, ctx| {
                for t in &targets {
                    ctx.monitor(t);
                }
                Ok(())
            })
            .unwrap();
        }
    });
    let mut seen = std::collections::HashSet::new();
    for _ in 0..names.len() * TARGETS {
        match ev.wait_for(|e| matches!(e, Event::Down { .. })) {
            Event::Down { by, notice } => {
                assert!(
                    seen.insert((by, notice.id)),
                    "{by} heard twice of {}",
                    notice.id
                );
                let i = targets.iter().position(|t| t.id() == notice.id).unwrap();
                assert_eq!(notice.reason.is_failure(), i % 3 != 0);
            }
            _ => unreachable!(),
        }
    }
    rt.block_until_idle();
    assert!(
        !ev.rest().iter().any(|e| matches!(e, Event::Down { .. })),
        "a notice was delivered twice"
    );
    rt.shutdown_graceful();
}
