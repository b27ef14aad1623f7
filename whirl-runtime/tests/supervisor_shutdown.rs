//! OTP's supervisor suite, shutdown: children stop in reverse start order; a supervisor's
//! shutdown stops its whole subtree (a child supervisor's subtree first); a child that does
//! not stop within its shutdown timeout is reported and left behind, not waited on forever;
//! a runtime shutdown restarts nothing.

mod common;
mod supervisor_support;

use std::time::Duration;
use whirl_runtime::request::Sender as _;

use common::{within_guard, Gate};
use supervisor_support::{block, child, runtime, start, Child, Do, Log, Seen};
use whirl_runtime::supervision::{ChildSpec, EventKind, Shutdown, SupervisorMsg, SupervisorSpec};
use whirl_runtime::ExitReason;

#[test]
fn children_stop_in_reverse_start_order() {
    let rt = runtime();
    let mut log = Log::new();
    let spec = log
        .spec("sup")
        .child(log.worker("a"))
        .child(log.worker("b"))
        .child(log.worker("c"));
    let sup = start(&rt, spec);
    log.rest();

    sup.shutdown().unwrap();
    assert_eq!(log.sup_terminated("sup"), ExitReason::Shutdown);
    assert_eq!(log.stop_order(), ["c", "b", "a"]);
    rt.block_until_idle();
    assert_eq!(rt.live_processes(), 0);
}

#[test]
fn a_supervisors_shutdown_stops_its_subtree_in_order() {
    let rt = runtime();
    let mut log = Log::new();
    let tx = log.sender();
    let mid = ChildSpec::supervisor(
        "mid",
        SupervisorSpec::new("mid")
            .child(ChildSpec::worker("x", Child::new("x", &tx)))
            .child(ChildSpec::worker("y", Child::new("y", &tx))),
    );
    let spec = log
        .spec("root")
        .child(log.worker("a"))
        .child(mid)
        .child(log.worker("b"));
    let root = start(&rt, spec);
    log.rest();

    root.shutdown().unwrap();
    assert_eq!(log.sup_terminated("root"), ExitReason::Shutdown);
    // The mid supervisor inherited the root's event sink, and was shut down, after its
    // own children and before `a`.
    let seen = log.rest();
    let order: Vec<&str> = seen
        .iter()
        .filter_map(|s| match s {
            Seen::Stopped { name, .. } => Some(*name),
            Seen::Sup(e) if matches!(e.kind, EventKind::Terminated { .. }) => Some(&e.supervisor),
            _ => None,
        })
        .collect();
    assert_eq!(order, ["b", "y", "x", "mid", "a"]);
    rt.block_until_idle();
    assert_eq!(rt.live_processes(), 0);
}

#[test]
fn a_child_past_its_shutdown_timeout_is_reported_and_left_to_finish() {
    let rt = runtime();
    let mut log = Log::new();
    let spec = log.spec("sup").child(log.worker("fast")).child(
        log.worker("slow")
            .shutdown(Shutdown::Timeout(Duration::from_millis(10))),
    );
    let sup = start(&rt, spec);
    let gate = Gate::new();
    child(&rt, "slow").post(block(&gate)).unwrap();
    log.wait("slow blocked", |s| {
        matches!(s, Seen::Blocked { name: "slow" })
    });

    sup.shutdown().unwrap();
    // `slow` cannot stop while its handler runs: the supervisor stops waiting, moves on to
    // `fast`, and terminates, all while `slow` is still blocked.
    let timed_out = log.event("sup", |k| matches!(k, EventKind::ShutdownTimedOut { .. }));
    assert!(matches!(timed_out, EventKind::ShutdownTimedOut { id, .. } if id == "slow"));
    assert_eq!(log.sup_terminated("sup"), ExitReason::Shutdown);
    assert_eq!(log.stop_order(), ["fast"]);

    // Once its handler returns, the exit request takes effect.
    gate.open();
    let (_, reason) = log.child_stopped("slow");
    assert_eq!(reason, ExitReason::Shutdown);
    rt.block_until_idle();
    assert_eq!(rt.live_processes(), 0);
}

#[test]
fn a_runtime_shutdown_stops_the_tree_and_restarts_nothing() {
    let rt = runtime();
    let mut log = Log::new();
    let spec = log
        .spec("sup")
        .child(log.worker("a"))
        .child(log.worker("b"));
    let _sup = start(&rt, spec);
    log.rest();

    within_guard("runtime shutdown", move || rt.shutdown_graceful());
    let seen = log.rest();
    assert!(
        !seen.iter().any(|s| matches!(
            s,
            Seen::Sup(e) if matches!(e.kind, EventKind::ChildRestarted { .. })
        )),
        "{seen:#?}"
    );
    let stopped = seen
        .iter()
        .filter(|s| matches!(s, Seen::Stopped { .. }))
        .count();
    assert_eq!(stopped, 2);
}

#[test]
fn a_supervisor_ended_by_exit_still_stops_every_child() {
    let rt = runtime();
    let mut log = Log::new();
    let spec = log
        .spec("sup")
        .child(log.worker("a"))
        .child(log.worker("b"));
    let sup = start(&rt, spec);
    log.rest();

    // `Addr::exit` skips the ordered path: the `terminated` hook asks every child to stop,
    // without waiting for them.
    sup.exit(ExitReason::Normal);
    assert_eq!(log.sup_terminated("sup"), ExitReason::Normal);
    log.child_stopped("a");
    log.child_stopped("b");
    rt.block_until_idle();
    assert_eq!(rt.live_processes(), 0);
}

#[test]
fn children_run_in_the_group_their_spec_names() {
    let rt = runtime();
    let mut log = Log::new();
    let io = rt.group("io").threads(1).build().expect("build group");
    let spec = log.spec("sup").child(log.worker("a").in_group(&io));
    let _sup = start(&rt, spec);
    let a = child(&rt, "a");
    let group = a.request_with(Do::Group).call().unwrap();
    assert_eq!(group, "io");
    let _ = log.rest();
    rt.shutdown_graceful();
}

#[test]
fn requests_wait_for_a_stop_in_progress_and_are_answered_in_order() {
    let rt = runtime();
    let mut log = Log::new();
    let spec = log
        .spec("sup")
        .child(log.worker("a"))
        .child(log.worker("slow").shutdown(Shutdown::Infinity));
    let sup = start(&rt, spec);
    let gate = Gate::new();
    child(&rt, "slow").post(block(&gate)).unwrap();
    log.wait("slow blocked", |s| {
        matches!(s, Seen::Blocked { name: "slow" })
    });

    // Both requests are queued now; the second must not be answered before the first is done.
    let stopped = sup
        .request_with(|r| SupervisorMsg::terminate_child("slow", r))
        .ask();
    let listed = sup.request_with(SupervisorMsg::which_children).ask();
    gate.open();
    let executor = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    executor.block_on(stopped).unwrap().unwrap();
    let children = executor.block_on(listed).unwrap();
    let slow = children.iter().find(|c| c.id == "slow").unwrap();
    assert_eq!(slow.pid, None, "answered after the stop finished");
    rt.shutdown_graceful();
}

#[test]
fn one_worker_thread_is_enough_to_restart_and_stop_a_tree() {
    // A supervisor that blocked its worker while waiting for a child to stop would deadlock
    // here: the child needs that same (only) worker to terminate.
    let rt = whirl_runtime::Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let mut log = Log::new();
    let x = ChildSpec::worker("x", Child::new("x", &log.sender()));
    let inner = ChildSpec::supervisor("inner", SupervisorSpec::new("inner").child(x));
    let spec = log
        .spec("sup")
        .strategy(whirl_runtime::supervision::RestartStrategy::OneForAll)
        .child(log.worker("a"))
        .child(inner)
        .child(log.worker("b"));
    let sup = start(&rt, spec);
    child(&rt, "b").post(Do::Fail("boom")).unwrap();
    log.restarted("sup", "b");
    rt.block_until_idle();
    assert_eq!(sup.count_children().unwrap().active, 3);
    log.rest();
    sup.shutdown().unwrap();
    assert_eq!(log.sup_terminated("sup"), ExitReason::Shutdown);
    assert_eq!(log.stop_order(), ["b", "x", "a"]);
    within_guard("runtime shutdown", move || rt.shutdown_graceful());
}
