//! The process table (`Runtime::processes`) and one process in detail
//! (`Runtime::process_info`): a process whose queue grows is first by queue length; names,
//! type and group are right; turns and messages are counted; failures of a supervised child
//! are counted and listed; monitors and links are seen from both ends.
//!
//! Queues are made to grow by blocking the only worker of a group on a gate, so the counts
//! checked are exact, not raced: nothing depends on how fast anything runs.

mod common;

use std::time::Duration;

use common::{wait_until, Gate};
use whirl::prelude::*;
use whirl::supervision::{ChildSpec, RestartStrategy, Supervisor, SupervisorSpec};
use whirl::SharedClient;
use whirl_runtime::control::{ProcessQuery, ProcessSort};

/// Return at once.
#[derive(Message, Clone)]
struct Tick;

/// Wait in the handler until the gate opens.
#[derive(Message)]
struct Hold(SharedClient<Gate>);

/// Fail the handler.
#[derive(Message, Clone)]
struct Fail;

/// Monitor this process.
#[derive(Message)]
struct Monitor(Addr<Sink>);

/// Stop monitoring this process.
#[derive(Message)]
struct Demonitor(Addr<Sink>);

/// Link with this process.
#[derive(Message)]
struct Link(Addr<Sink>);

/// Takes whatever it is sent.
#[process]
#[derive(Clone)]
struct Sink;

#[process]
impl Sink {
    #[handle]
    fn tick(&mut self, _: Tick) {}

    #[handle]
    fn hold(&mut self, Hold(gate): Hold) {
        gate.wait();
    }

    #[handle]
    fn fail(&mut self, _: Fail) -> Result<(), Failure> {
        Err(Failure::new("told to fail"))
    }

    #[handle]
    fn monitor(&mut self, Monitor(other): Monitor, ctx: &mut Ctx<Self>) {
        ctx.monitor(&other);
    }

    #[handle]
    fn demonitor(&mut self, Demonitor(other): Demonitor, ctx: &mut Ctx<Self>) {
        let _ = ctx.demonitor(&other);
    }

    #[handle]
    fn link(&mut self, Link(other): Link, ctx: &mut Ctx<Self>) {
        ctx.link(&other);
    }
}

fn runtime() -> Runtime {
    Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts")
}

#[test]
fn a_process_whose_queue_grows_is_first_by_queue_length() {
    let rt = runtime();
    let group = rt
        .group("census")
        .threads(1)
        .build()
        .expect("the group builds");
    let quiet = rt.spawner().group(&group).spawn(Sink);
    let flooded = rt.spawner().group(&group).spawn(Sink);
    let some = rt.spawner().group(&group).spawn(Sink);
    rt.register("flooded", &flooded).unwrap();
    rt.block_until_idle();

    // The group's only worker is held inside `flooded`'s handler (it was scheduled first, and
    // takes `Hold` before any `Tick`): its queue and `some`'s grow.
    let gate = Gate::new();
    flooded.post(Hold(common::gate(&gate))).unwrap();
    for _ in 0..500 {
        flooded.post(Tick).unwrap();
    }
    for _ in 0..10 {
        some.post(Tick).unwrap();
    }

    let top = rt.processes(&ProcessQuery::top(ProcessSort::QueueLength, 2));
    let ids: Vec<ProcessId> = top.iter().map(|p| p.id).collect();
    assert_eq!(ids, [flooded.id(), some.id()], "{top:#?}");
    // The message being handled is still counted: the turn holding it has not ended.
    assert_eq!(top[0].queue_length, 501);
    assert_eq!(top[1].queue_length, 10);
    assert_eq!(top[0].names, ["flooded"]);
    assert!(top[1].names.is_empty());
    assert!(top[0].type_name.ends_with("Sink"), "{}", top[0].type_name);
    assert_eq!(top[0].group, "census");
    assert_eq!(top[0].failures, 0);

    // The limit and the group filter.
    assert_eq!(
        rt.processes(&ProcessQuery::top(ProcessSort::QueueLength, 1))
            .len(),
        1
    );
    let census = rt.processes(&ProcessQuery::top(ProcessSort::Id, 100).group("census"));
    let ids: Vec<ProcessId> = census.iter().map(|p| p.id).collect();
    assert_eq!(ids, [quiet.id(), flooded.id(), some.id()]);
    assert!(rt
        .processes(&ProcessQuery::top(ProcessSort::Id, 100).group("nope"))
        .is_empty());

    gate.open();
    rt.block_until_idle();
    let after = rt.process_info(flooded.id()).expect("alive");
    assert_eq!(after.info.queue_length, 0);
    assert_eq!(after.info.handled, 501);
    let top = rt.processes(&ProcessQuery::top(ProcessSort::Handled, 1));
    assert_eq!(top[0].id, flooded.id());
    rt.shutdown_graceful();
}

#[test]
fn turns_and_messages_are_counted_per_turn() {
    let rt = runtime();
    let sink = rt.spawn(Sink);
    rt.block_until_idle();
    let info = rt.process_info(sink.id()).expect("alive").info;
    // The start is a turn of its own.
    assert_eq!((info.turns, info.handled, info.queue_length), (1, 0, 0));
    for _ in 0..3 {
        sink.post(Tick).unwrap();
        rt.block_until_idle();
    }
    let info = rt.process_info(sink.id()).expect("alive").info;
    assert_eq!((info.turns, info.handled, info.queue_length), (4, 3, 0));
    let by_turns = rt.processes(&ProcessQuery::top(ProcessSort::Turns, 1));
    assert_eq!(by_turns[0].id, sink.id());
    // The most recently active process comes first by activity.
    let other = rt.spawn(Sink);
    rt.block_until_idle();
    // The runtime's clock moves on past `other`'s first turn before its second one.
    wait_until("the clock to move on", || {
        rt.process_info(other.id())
            .is_some_and(|d| d.info.idle >= Duration::from_millis(2))
    });
    other.post(Tick).unwrap();
    rt.block_until_idle();
    let recent = rt.processes(&ProcessQuery::top(ProcessSort::LastActivity, 1));
    assert_eq!(recent[0].id, other.id());
    rt.shutdown_graceful();
}

#[test]
fn a_supervised_childs_failures_are_counted_and_listed() {
    let rt = runtime();
    let spec = SupervisorSpec::new("census")
        .strategy(RestartStrategy::OneForOne)
        .intensity(10, Duration::from_secs(60))
        .child(ChildSpec::worker("flaky", Sink));
    let sup = rt.spawn(Supervisor::new(spec));
    rt.block_until_idle();
    let running = |sup: &Addr<Supervisor>| {
        sup.which_children()
            .expect("the supervisor answers")
            .into_iter()
            .find(|c| c.id == "flaky")
            .and_then(|c| c.pid)
    };
    let first = running(&sup).expect("started");
    let detail = rt.process_info(first).expect("alive");
    let supervision = detail.supervision.clone().expect("supervised");
    assert_eq!(
        (supervision.supervisor, supervision.child.as_str()),
        (sup.id(), "flaky")
    );
    assert_eq!((supervision.restarts, supervision.failures), (0, 0));
    assert_eq!(detail.monitored_by, [sup.id()]);
    assert!(detail.recent_failures.is_empty());

    let mut pid = first;
    for _ in 0..2 {
        let child: Addr<Sink> = sup
            .which_children()
            .unwrap()
            .into_iter()
            .find(|c| c.id == "flaky")
            .and_then(|c| c.addr::<Sink>())
            .expect("a Sink");
        child.post(Fail).unwrap();
        let before = pid;
        wait_until("the child to be restarted", || {
            running(&sup).is_some_and(|now| now != before)
        });
        pid = running(&sup).unwrap();
        rt.block_until_idle();
    }
    let detail = rt.process_info(pid).expect("alive");
    assert_eq!(detail.info.failures, 2);
    let supervision = detail.supervision.clone().expect("supervised");
    assert_eq!((supervision.restarts, supervision.failures), (2, 2));
    assert_eq!(detail.recent_failures.len(), 2, "{detail:#?}");
    for failure in &detail.recent_failures {
        assert_eq!(failure.child_of, Some((sup.id(), "flaky".to_owned())));
        assert!(
            failure.reason.contains("told to fail"),
            "{}",
            failure.reason
        );
        assert!(failure.type_name.ends_with("Sink"));
    }
    assert_eq!(detail.recent_failures[0].process, first);
    let top = rt.processes(&ProcessQuery::top(ProcessSort::Failures, 1));
    assert_eq!(top[0].id, pid);
    // The supervisor monitors its running child, and only that one.
    let sup_detail = rt.process_info(sup.id()).expect("alive");
    assert_eq!(sup_detail.monitors, [pid]);
    rt.shutdown_graceful();
}

#[test]
fn monitors_and_links_are_seen_from_both_ends() {
    let rt = runtime();
    let watcher = rt.spawn(Sink);
    let watched = rt.spawn(Sink);
    let a = rt.spawn(Sink);
    let b = rt.spawn(Sink);
    watcher.post(Monitor(watched.clone())).unwrap();
    a.post(Link(b.clone())).unwrap();
    rt.block_until_idle();

    let w = rt.process_info(watcher.id()).unwrap();
    assert_eq!(w.monitors, [watched.id()]);
    assert!(w.links.is_empty());
    let d = rt.process_info(watched.id()).unwrap();
    assert_eq!(d.monitored_by, [watcher.id()]);
    assert!(d.monitors.is_empty() && d.links.is_empty());
    assert_eq!(rt.process_info(a.id()).unwrap().links, [b.id()]);
    assert_eq!(rt.process_info(b.id()).unwrap().links, [a.id()]);

    // A watch that is not a process is counted apart.
    let watch = watched.watch(|_| {});
    assert_eq!(rt.process_info(watched.id()).unwrap().other_watchers, 1);
    drop(watch);

    watcher.post(Demonitor(watched.clone())).unwrap();
    rt.block_until_idle();
    assert!(rt.process_info(watcher.id()).unwrap().monitors.is_empty());

    // A monitored process that ends is forgotten by its watcher.
    watcher.post(Monitor(watched.clone())).unwrap();
    rt.block_until_idle();
    assert_eq!(
        rt.process_info(watcher.id()).unwrap().monitors,
        [watched.id()]
    );
    watched.exit(ExitReason::Normal);
    rt.block_until_idle();
    assert!(rt.process_info(watched.id()).is_none());
    assert!(rt.process_info(watcher.id()).unwrap().monitors.is_empty());
    rt.shutdown_graceful();
}
