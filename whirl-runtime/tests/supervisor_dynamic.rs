//! OTP's supervisor suite, the dynamic API and addressing: start/terminate/restart/delete a
//! child at run time, list and count children; simple-one-for-one children from a template;
//! invalid specs; and messages posted while a child restarts, which are delivered to the new
//! incarnation through its name, returned to the sender, or dead-lettered, never lost.

mod common;
mod supervisor_support;

use std::time::Duration;
use whirl_runtime::request::Sender as _;

use common::{failure, runtime_with_dead_letters};
use supervisor_support::{child, pid_of, running, runtime, start, Child, Do, Log, Observer};
use whirl_runtime::supervision::{
    ChildCounts, ChildRef, ChildSpec, ChildTemplate, EventKind, Restart, RestartStrategy,
    Supervisor, SupervisorError, SupervisorSpec,
};
use whirl_runtime::time::ManualClock;
use whirl_runtime::{ExitReason, NameError, PostError};

#[test]
fn children_are_started_terminated_restarted_and_deleted_at_run_time() {
    let rt = runtime();
    let mut log = Log::new();
    let sup = start(&rt, log.spec("sup").child(log.worker("a")));

    let b = sup.start_child(log.worker("b")).unwrap();
    assert_eq!(pid_of(&sup, "b"), b);
    match sup.start_child(log.worker("b")) {
        Err(SupervisorError::AlreadyStarted(pid, spec)) => {
            assert_eq!((pid, spec.id()), (b, "b"))
        }
        other => panic!("{other:?}"),
    }

    sup.terminate_child("b").unwrap();
    assert_eq!(running(&sup, "b"), Some(false), "stopped, still known");
    match sup.start_child(log.worker("b")) {
        Err(SupervisorError::AlreadyPresent(spec)) => assert_eq!(spec.id(), "b"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        sup.delete_child("a"),
        Err(SupervisorError::Running(id)) if id == "a"
    ));
    let b2 = sup.restart_child("b").unwrap();
    assert_ne!(b2, b);
    assert!(matches!(
        sup.restart_child("b"),
        Err(SupervisorError::Running(_))
    ));
    sup.terminate_child(b2).unwrap();
    sup.delete_child("b").unwrap();
    assert_eq!(running(&sup, "b"), None);
    assert!(matches!(
        sup.terminate_child("nope"),
        Err(SupervisorError::NotFound(ChildRef::Id(id))) if id == "nope"
    ));
    assert_eq!(
        sup.count_children().unwrap(),
        ChildCounts {
            specs: 1,
            active: 1,
            supervisors: 0,
            workers: 1,
            restarts: 0
        }
    );
    // Stopped on request: a shutdown, whatever the child was doing.
    let exited = log.event(
        "sup",
        |k| matches!(k, EventKind::ChildExited { id, .. } if id == "b"),
    );
    assert!(matches!(
        exited,
        EventKind::ChildExited {
            reason: ExitReason::Shutdown,
            ..
        }
    ));
    rt.shutdown_graceful();
}

#[test]
fn a_child_stopped_on_request_stays_stopped_when_a_sibling_restarts_all() {
    let rt = runtime();
    let mut log = Log::new();
    let spec = log
        .spec("sup")
        .strategy(RestartStrategy::OneForAll)
        .child(log.worker("a"))
        .child(log.worker("b"));
    let sup = start(&rt, spec);
    sup.terminate_child("b").unwrap();

    child(&rt, "a").post(Do::Fail("boom")).unwrap();
    log.restarted("sup", "a");
    rt.block_until_idle();
    assert_eq!(running(&sup, "a"), Some(true));
    assert_eq!(running(&sup, "b"), Some(false));
    rt.shutdown_graceful();
}

/// The template's argument: a client's name, and the channel its connection handler reports
/// on (a template is a plain function: what the child needs comes with the argument).
type Client = (&'static str, Observer);

fn client(log: &Log, name: &'static str) -> Client {
    (name, log.sender())
}

/// A connection handler started per client, registered under the client's name.
fn connection((client, tx): Client) -> ChildSpec {
    ChildSpec::worker("conn", Child::new(client, &tx)).named(client)
}

fn transient_connection(client: Client) -> ChildSpec {
    connection(client).restart(Restart::Transient)
}

/// A simple-one-for-one pool of connection handlers made by `template`.
fn connections(log: &Log, template: fn(Client) -> ChildSpec) -> SupervisorSpec<Client> {
    log.spec("pool")
        .strategy(RestartStrategy::SimpleOneForOne)
        .intensity(10, Duration::from_secs(5))
        .clock(ManualClock::new())
        .template(ChildTemplate::new(template))
}

#[test]
fn simple_one_for_one_starts_children_of_its_template_on_demand() {
    let rt = runtime();
    let mut log = Log::new();
    let pool = start(&rt, connections(&log, connection));
    assert!(pool.which_children().unwrap().is_empty());

    let alice = pool.start_dynamic(client(&log, "alice")).unwrap();
    let bob = pool.start_dynamic(client(&log, "bob")).unwrap();
    let ids: Vec<_> = pool
        .which_children()
        .unwrap()
        .into_iter()
        .map(|c| c.pid)
        .collect();
    assert_eq!(ids, [Some(alice), Some(bob)]);

    // Restarted with the same argument, so under the same name.
    child(&rt, "alice").post(Do::Fail("boom")).unwrap();
    let alice2 = log.restarted("pool", "conn");
    rt.block_until_idle();
    assert_eq!(child(&rt, "alice").id(), alice2);

    // Terminated by pid, a dynamic child is removed.
    pool.terminate_child(bob).unwrap();
    assert_eq!(pool.count_children().unwrap().specs, 1);

    // An argument of another type than the template's does not compile (see the
    // `compile_fail` example of `ChildTemplate`).
    assert!(matches!(
        pool.start_child(log.worker("static")),
        Err(SupervisorError::WrongStrategy {
            operation: "start_child",
            ..
        })
    ));
    rt.shutdown_graceful();
}

#[test]
fn a_transient_dynamic_child_that_finishes_is_removed() {
    let rt = runtime();
    let mut log = Log::new();
    let pool = start(&rt, connections(&log, transient_connection));
    pool.start_dynamic(client(&log, "carol")).unwrap();
    child(&rt, "carol").post(Do::Complete).unwrap();
    log.event("pool", |k| matches!(k, EventKind::ChildExited { .. }));
    rt.block_until_idle();
    assert!(pool.which_children().unwrap().is_empty());
    rt.shutdown_graceful();
}

#[test]
fn invalid_specs_fail_the_supervisor_at_start_saying_why() {
    let rt = runtime();
    let mut log = Log::new();
    let duplicate = log
        .spec("dup")
        .child(log.worker("same"))
        .child(log.worker("same"));
    rt.spawn(Supervisor::new(duplicate));
    let reason = log.sup_terminated("dup");
    assert!(failure(&reason)
        .reason()
        .contains("two children with id `same`"));

    let no_template = log.spec("sofo").strategy(RestartStrategy::SimpleOneForOne);
    rt.spawn(Supervisor::new(no_template));
    let reason = log.sup_terminated("sofo");
    assert!(failure(&reason).reason().contains("no child template"));
    rt.shutdown_graceful();
}

#[test]
fn messages_posted_during_a_restart_are_returned_or_dead_lettered_and_the_name_reaches_the_new_child(
) {
    let (rt, dead) = runtime_with_dead_letters(2);
    let mut log = Log::new();
    let sup = start(
        &rt,
        log.spec("sup")
            .intensity(10, Duration::from_secs(5))
            .clock(ManualClock::new())
            .child(log.worker("srv")),
    );
    let old = child(&rt, "srv");
    assert_eq!(old.request_with(|r| Do::Echo(1, r)).call().unwrap(), 2);

    // The old incarnation fails with messages behind the failing one, and more arrive while
    // it is being replaced.
    old.post(Do::Fail("boom")).unwrap();
    let mut returned = 0;
    for n in 0..100 {
        match old.post(Do::Note(n)) {
            Ok(()) => {}
            Err(PostError::Terminated(Do::Note(m))) => {
                assert_eq!(m, n, "the sender gets its own message back");
                returned += 1;
            }
            Err(e) => panic!("{e:?}"),
        }
    }
    let new_pid = log.restarted("sup", "srv");
    rt.block_until_idle();
    assert_eq!(
        returned + dead.len(),
        100,
        "every message is returned or dead-lettered"
    );
    assert!(matches!(
        old.post(Do::Complete),
        Err(PostError::Terminated(Do::Complete))
    ));

    // Re-resolving the name reaches the new incarnation.
    let new = rt.whereis::<Child>("srv").expect("re-registered");
    assert_eq!(new.id(), new_pid);
    assert_eq!(pid_of(&sup, "srv"), new_pid);
    assert_eq!(new.request_with(|r| Do::Echo(41, r)).call().unwrap(), 42);
    rt.shutdown_graceful();
}

#[test]
fn a_name_is_held_by_one_live_process_at_a_time() {
    let rt = runtime();
    let log = Log::new();
    let a = rt.spawn(Child::new("a", &log.sender()));
    let b = rt.spawn(Child::new("b", &log.sender()));
    rt.register("svc", &a).unwrap();
    assert_eq!(
        rt.register("svc", &b),
        Err(NameError::Taken {
            name: "svc".into(),
            holder: a.id()
        })
    );
    assert!(rt.whereis::<Supervisor>("svc").is_none(), "typed lookup");
    a.post(Do::Complete).unwrap();
    rt.block_until_idle();
    assert!(
        rt.whereis::<Child>("svc").is_none(),
        "a dead holder frees it"
    );
    rt.register("svc", &b).unwrap();
    assert_eq!(rt.whereis::<Child>("svc").unwrap().id(), b.id());
    assert!(rt.unregister("svc"));
    rt.shutdown_graceful();
}

#[test]
fn the_api_refuses_to_block_a_worker_and_works_from_async_code() {
    let rt = runtime();
    let log = Log::new();
    let sup = start(&rt, log.spec("sup").child(log.worker("a")));
    let (tx, _events) = common::events();
    let node = rt.spawn(common::Plain::new("node", &tx));
    let inside = sup.clone();
    let refused = common::run(&node, move |_, _| inside.which_children());
    assert!(matches!(refused, Err(SupervisorError::WouldBlockWorker)));

    let executor = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let counts = executor
        .block_on(
            sup.request_with(whirl_runtime::supervision::SupervisorMsg::count_children)
                .ask(),
        )
        .unwrap();
    assert_eq!(counts.active, 1);
    // Inside a handler, a name is resolved with `Ctx::whereis`.
    let found = common::run(&node, |_, ctx| ctx.whereis::<Child>("a").map(|a| a.id()));
    assert_eq!(found, Some(pid_of(&sup, "a")));
    rt.shutdown_graceful();
}
