//! What observers read besides the counters: rejections per principal, the last slow turns
//! and dead letters, a supervision tree walked without knowing its types, and a runtime
//! observer that does not keep the runtime alive.

use std::time::{Duration, Instant};

use whirl::admission::QueueLength;
use whirl::prelude::*;
use whirl::supervision::{ChildKind, ChildSpec};

const DEADLINE: Duration = Duration::from_secs(10);

#[track_caller]
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < DEADLINE, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[derive(Message)]
struct Sleep(Duration);

#[process]
#[derive(Clone)]
struct Sleeper;

#[process]
impl Sleeper {
    #[handle]
    fn sleep(&mut self, Sleep(d): Sleep) {
        std::thread::sleep(d);
    }
}

#[test]
fn rejections_are_counted_per_principal() {
    let rt = Runtime::new();
    // Admits while nothing is queued or being handled: while the worker holds the first
    // message, the rest of the burst is rejected.
    let group = rt
        .group("rejecting")
        .threads(1)
        .predicate(QueueLength::max(1))
        .build()
        .expect("group");
    let gold = Principal::builder(7)
        .priority(2)
        .build()
        .expect("a valid principal");
    let bronze = Principal::builder(8).build().expect("a valid principal");
    let a = rt
        .spawner()
        .group(&group)
        .principal(gold.clone())
        .spawn(Sleeper);
    let b = rt
        .spawner()
        .group(&group)
        .principal(bronze.clone())
        .spawn(Sleeper);
    a.post(Sleep(Duration::from_millis(200)))
        .expect("first is admitted");
    let mut rejected = [0u64; 2];
    for (i, addr) in [&a, &b].into_iter().enumerate() {
        for _ in 0..20 {
            if let Err(PostError::Rejected(_)) = addr.post(Sleep(Duration::ZERO)) {
                rejected[i] += 1;
            }
        }
    }
    assert!(rejected[0] > 0 && rejected[1] > 0, "{rejected:?}");
    let stats = group.stats();
    let of = |id: u64| {
        stats
            .principals
            .iter()
            .find(|p| p.id == id)
            .map_or(0, |p| p.rejected)
    };
    assert_eq!([of(7), of(8)], rejected, "{:?}", stats.principals);
    assert_eq!(stats.counts.rejected, rejected[0] + rejected[1]);
    assert_eq!(
        (gold.rejected(), bronze.rejected()),
        (rejected[0], rejected[1])
    );
    rt.shutdown_timeout(Duration::from_secs(1));
}

#[test]
fn the_last_slow_turns_are_listed_with_their_message_type() {
    let rt = Runtime::new();
    let group = rt
        .group("slow")
        .threads(1)
        .slow_turn_threshold(Some(Duration::from_millis(20)))
        .build()
        .expect("group");
    let sleeper = rt.spawner().group(&group).spawn(Sleeper);
    sleeper
        .post(Sleep(Duration::from_millis(150)))
        .expect("post");
    wait_for("a slow turn", || {
        !group.stats().recent_slow_turns.is_empty()
    });
    let turn = group.stats().recent_slow_turns[0].clone();
    assert_eq!(turn.process, sleeper.id());
    assert!(
        turn.message_type.is_some_and(|t| t.ends_with("Sleep")),
        "{turn:?}"
    );
    assert!(turn.held >= Duration::from_millis(20), "{turn:?}");
    rt.shutdown_timeout(Duration::from_secs(1));
}

#[test]
fn the_last_dead_letters_are_listed() {
    let rt = Runtime::builder()
        .dead_letters(|_| {})
        .build()
        .expect("the runtime starts");
    let sleeper = rt.spawn(Sleeper);
    sleeper
        .post(Sleep(Duration::from_millis(100)))
        .expect("post");
    for _ in 0..200 {
        sleeper.post(Sleep(Duration::ZERO)).expect("post");
    }
    sleeper.exit(ExitReason::Shutdown);
    wait_for("the process to end", || sleeper.is_terminated());
    let stats = rt.stats();
    // A turn handles what it already knows is queued (at most its budget, 64) before it acts
    // on the exit; the rest is dead-lettered.
    let counts = stats.counts;
    assert_eq!(counts.handled + counts.dead_lettered, 201, "{counts:?}");
    assert!(counts.dead_lettered >= 200 - 64, "{counts:?}");
    let recent = stats.recent_dead_letters;
    assert_eq!(recent.len(), 32, "the kernel keeps the last 32");
    assert!(recent
        .iter()
        .all(|d| d.to == sleeper.id() && d.message_type.ends_with("Sleep")));
    assert!(
        recent.windows(2).all(|w| w[0].at <= w[1].at),
        "oldest first"
    );
    rt.shutdown_timeout(Duration::from_secs(1));
}

#[test]
fn a_supervision_tree_is_walked_without_its_types() {
    let rt = Runtime::new();
    let spec = SupervisorSpec::new("root")
        .child(ChildSpec::worker("w", Sleeper))
        .child(ChildSpec::supervisor(
            "inner",
            SupervisorSpec::new("inner").child(ChildSpec::worker("deep", Sleeper)),
        ));
    let root = rt.spawn(Supervisor::new(spec));
    let children = root
        .which_children_timeout(Duration::from_secs(5))
        .expect("root answers");
    assert_eq!(children.len(), 2);
    assert!(children[0]
        .which_children_timeout(Duration::from_secs(1))
        .is_none());
    assert_eq!(children[1].kind, ChildKind::Supervisor);
    let inner = children[1]
        .which_children_timeout(Duration::from_secs(5))
        .expect("a supervisor")
        .expect("it answers");
    assert_eq!(inner.len(), 1);
    assert_eq!(inner[0].id, "deep");
    rt.shutdown_timeout(Duration::from_secs(1));
}

#[test]
fn an_observer_does_not_keep_the_runtime_alive() {
    let rt = Runtime::new();
    let observer = rt.observer();
    rt.spawn(Sleeper);
    let stats = observer.stats().expect("running");
    assert!(stats.live_processes >= 1);
    assert!(observer.is_running());
    drop(rt);
    assert!(observer.stats().is_none());
    assert!(!observer.is_running());
}
