//! More of OTP's supervisor_SUITE, where whirl used to differ without reason: counting and
//! terminating simple-one-for-one children, names already taken, a zero intensity period,
//! temporary children's start arguments, `get_childspec`, typed child addresses, synchronous
//! starts, significant children and `auto_shutdown`, and the `shutdown` exit reason.

mod common;
mod supervisor_support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use whirl_runtime::request::Sender as _;

use common::failure;
use supervisor_support::{child, pid_of, running, runtime, start, Child, Do, Log, Observer};
use whirl_runtime::supervision::{
    AutoShutdown, ChildCounts, ChildRef, ChildSpec, ChildTemplate, EventKind, Restart,
    RestartStrategy, StartDynamic, Supervisor, SupervisorError, SupervisorSpec,
};
use whirl_runtime::time::ManualClock;
use whirl_runtime::{Ctx, ExitReason, Failure, Isolated, Process, SharedClient};

/// The template's argument: a client's name, and the channel its handler reports on.
type Client = (&'static str, Observer);

fn connection((client, tx): Client) -> ChildSpec {
    ChildSpec::worker("conn", Child::new(client, &tx)).named(client)
}

fn pool(log: &Log) -> SupervisorSpec<Client> {
    log.spec("pool")
        .strategy(RestartStrategy::SimpleOneForOne)
        .intensity(10, Duration::from_secs(5))
        .clock(ManualClock::new())
        .template(ChildTemplate::new(connection))
}

// --- count_children, terminate_child under simple-one-for-one -------------------------------

/// OTP's `count_children` under simple_one_for_one: one spec (the template).
#[test]
fn count_children_under_simple_one_for_one_counts_one_spec() {
    let rt = runtime();
    let log = Log::new();
    let pool = start(&rt, pool(&log));
    assert_eq!(
        pool.count_children().unwrap().specs,
        1,
        "the template alone"
    );
    pool.start_dynamic(("alice", log.sender())).unwrap();
    pool.start_dynamic(("bob", log.sender())).unwrap();
    assert_eq!(
        pool.count_children().unwrap(),
        ChildCounts {
            specs: 1,
            active: 2,
            supervisors: 0,
            workers: 2,
            restarts: 0
        }
    );
    rt.shutdown_graceful();
}

/// OTP: `terminate_child(Sup, Id)` under simple_one_for_one is `{error, simple_one_for_one}`;
/// its children are terminated by pid.
#[test]
fn a_simple_one_for_one_child_is_terminated_by_pid_not_by_id() {
    let rt = runtime();
    let log = Log::new();
    let pool = start(&rt, pool(&log));
    let alice = pool.start_dynamic(("alice", log.sender())).unwrap();
    let bob = pool.start_dynamic(("bob", log.sender())).unwrap();
    assert!(matches!(
        pool.terminate_child("conn"),
        Err(SupervisorError::WrongStrategy {
            operation: "terminate_child by id",
            strategy: RestartStrategy::SimpleOneForOne
        })
    ));
    assert_eq!(pool.count_children().unwrap().active, 2, "nothing stopped");
    pool.terminate_child(alice).unwrap();
    let left: Vec<_> = pool
        .which_children()
        .unwrap()
        .into_iter()
        .map(|c| c.pid)
        .collect();
    assert_eq!(left, [Some(bob)]);
    rt.shutdown_graceful();
}

// --- Names ----------------------------------------------------------------------------------

/// OTP: starting a child registered under a name a live process holds is
/// `{error, {already_started, Pid}}`; the name stays with its holder.
#[test]
fn a_child_never_takes_its_name_from_a_live_process() {
    let rt = runtime();
    let mut log = Log::new();
    let squatter = rt.spawn(Child::new("squatter", &log.sender()));
    rt.register("svc", &squatter).unwrap();
    rt.block_until_idle();
    let live = rt.live_processes();

    let sup = start(&rt, log.spec("sup"));
    let spec = ChildSpec::worker("svc", Child::new("svc", &log.sender())).named("svc");
    match sup.start_child(spec.clone()) {
        Err(SupervisorError::NameTaken { id, name, holder }) => {
            assert_eq!(
                (id.as_str(), name.as_str(), holder),
                ("svc", "svc", squatter.id())
            )
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(child(&rt, "svc").id(), squatter.id(), "the name stays");
    assert_eq!(running(&sup, "svc"), None, "nothing was added");
    rt.block_until_idle();
    assert_eq!(
        rt.live_processes(),
        live + 1,
        "only the supervisor was spawned"
    );

    // Once the holder is gone, the name is free.
    squatter.post(Do::Complete).unwrap();
    log.child_stopped("squatter");
    rt.block_until_idle();
    let pid = sup.start_child(spec).unwrap();
    assert_eq!(child(&rt, "svc").id(), pid);
    rt.shutdown_graceful();
}

/// The same for a named child supervisor in a supervisor's own spec: the parent fails to
/// start (OTP's `{shutdown, {failed_to_start_child, Id, {already_started, Pid}}}`), after
/// stopping the children it had started.
#[test]
fn a_supervisor_whose_named_child_is_taken_fails_to_start() {
    let rt = runtime();
    let mut log = Log::new();
    let squatter = rt.spawn(Child::new("squatter", &log.sender()));
    rt.register("sub", &squatter).unwrap();
    let spec = log
        .spec("root")
        .child(log.worker("first"))
        .child(ChildSpec::supervisor("sub", log.spec("sub")).named("sub"))
        .child(log.worker("never"));
    rt.spawn(Supervisor::new(spec));
    let reason = log.sup_terminated("root");
    let text = failure(&reason).reason().to_owned();
    assert!(
        text.contains("`sub`") && text.contains(&squatter.id().to_string()),
        "{text}"
    );
    log.event("root", |k| {
        matches!(k, EventKind::ChildExited { id, reason: ExitReason::Shutdown, .. } if id == "first")
    });
    rt.block_until_idle();
    assert_eq!(rt.whereis::<Child>("sub").unwrap().id(), squatter.id());
    assert!(rt.whereis::<Child>("never").is_none(), "not started");
    rt.shutdown_graceful();
}

// --- Restart intensity ----------------------------------------------------------------------

/// OTP refuses a period that is not a positive integer: a zero period would allow unlimited
/// restarts.
#[test]
fn an_intensity_period_of_zero_is_refused_at_start() {
    let rt = runtime();
    let mut log = Log::new();
    let spec = log
        .spec("zero")
        .intensity(3, Duration::ZERO)
        .child(log.worker("a"));
    rt.spawn(Supervisor::new(spec));
    let reason = log.sup_terminated("zero");
    assert!(failure(&reason).reason().contains("period of zero"));
    rt.block_until_idle();
    assert!(rt.whereis::<Child>("a").is_none(), "no child started");
    rt.shutdown_graceful();
}

// --- Temporary children ---------------------------------------------------------------------

const TOKEN: &str = "a test instrument: a token whose reference count tells the test who \
     still holds a child's start arguments";

/// OTP keeps no start arguments for a temporary child (it is never restarted).
#[test]
fn a_temporary_childs_start_arguments_are_not_kept() {
    let rt = runtime();
    let mut log = Log::new();
    let sup = start(&rt, log.spec("sup"));
    let token = Arc::new(());
    let args = (log.sender(), SharedClient::new(Arc::clone(&token), TOKEN));
    let spec = ChildSpec::worker_with("tmp", args, |(tx, _token)| Child::new("tmp", &tx))
        .restart(Restart::Temporary)
        .named("tmp");
    sup.start_child(spec).unwrap();
    assert_eq!(Arc::strong_count(&token), 1, "the supervisor dropped them");
    // What is left of the spec says so, and cannot start again.
    let spent = sup.child_spec("tmp").unwrap();
    assert_eq!(spent.restart_type(), Restart::Temporary);
    let again = spent.clone();
    sup.terminate_child("tmp").unwrap();
    assert_eq!(running(&sup, "tmp"), None, "removed once stopped");
    assert!(matches!(
        sup.start_child(again),
        Err(SupervisorError::StartFailed { id, .. }) if id == "tmp"
    ));
    log.rest();
    rt.shutdown_graceful();
}

// --- get_childspec, which_child, typed addresses --------------------------------------------

#[test]
fn a_childs_spec_and_info_are_found_by_id_or_pid() {
    let rt = runtime();
    let log = Log::new();
    let sup = start(
        &rt,
        log.spec("sup")
            .child(log.worker("a").restart(Restart::Transient))
            .child(ChildSpec::supervisor("pool", pool(&log))),
    );
    let spec = sup.child_spec("a").unwrap();
    assert_eq!(
        (spec.id(), spec.name(), spec.restart_type()),
        ("a", Some("a"), Restart::Transient)
    );
    let a = pid_of(&sup, "a");
    assert_eq!(sup.child_spec(a).unwrap().id(), "a");
    assert!(matches!(
        sup.child_spec("nope"),
        Err(SupervisorError::NotFound(ChildRef::Id(id))) if id == "nope"
    ));

    let info = sup.which_child("a").unwrap();
    assert_eq!(info.pid, Some(a));
    // The address is typed by a check, not trusted.
    let addr = info.addr::<Child>().expect("a `Child`");
    assert_eq!(addr.request_with(|r| Do::Echo(1, r)).call().unwrap(), 2);
    assert!(info.addr::<Supervisor>().is_none());

    // A child supervisor's address carries its template's argument type.
    let pool = sup
        .which_child("pool")
        .unwrap()
        .addr::<Supervisor<Client>>()
        .expect("a `Supervisor<Client>`");
    let alice = pool.start_dynamic(("alice", log.sender())).unwrap();
    assert!(sup
        .which_children()
        .unwrap()
        .iter()
        .all(|c| c.addr::<Supervisor>().is_none()));
    // Under simple-one-for-one, children are named by pid.
    assert_eq!(pool.which_child(alice).unwrap().pid, Some(alice));
    assert_eq!(pool.child_spec(alice).unwrap().id(), "conn");
    assert!(matches!(
        pool.which_child("conn"),
        Err(SupervisorError::WrongStrategy { .. })
    ));
    rt.shutdown_graceful();
}

// --- Synchronous starts ---------------------------------------------------------------------

/// A process whose `started` hook fails when told to, by its argument or by a switch the
/// test flips.
#[derive(Clone)]
struct Picky {
    fail: bool,
    switch: Option<SharedClient<Arc<AtomicBool>>>,
}

// SAFETY: a `bool`, and a test instrument held as a `SharedClient` (a fault injector the test
// flips between starts; no other process's state).
unsafe impl Isolated for Picky {}

/// `Picky` is never sent anything.
struct Nothing;
// SAFETY: no data at all.
unsafe impl Isolated for Nothing {}
impl whirl_runtime::Message for Nothing {}

// SAFETY: the state is a `Picky` (above); the message is `Nothing`.
unsafe impl Process for Picky {
    type Message = Nothing;

    fn started(&mut self, _: &mut Ctx<Self>) -> Result<(), Failure> {
        let switched = self
            .switch
            .as_ref()
            .is_some_and(|s| s.load(Ordering::SeqCst));
        if self.fail || switched {
            return Err(Failure::new("cannot start [expected]"));
        }
        Ok(())
    }

    fn handle(&mut self, _: Nothing, _: &mut Ctx<Self>) -> Result<(), Failure> {
        Ok(())
    }
}

fn picky(fail: bool) -> ChildSpec {
    ChildSpec::worker("picky", Picky { fail, switch: None })
}

#[track_caller]
fn assert_start_failed<T: std::fmt::Debug>(answer: Result<T, SupervisorError>, child: &str) {
    match answer {
        Err(SupervisorError::StartFailed { id, reason }) => {
            assert_eq!(id, child);
            assert_eq!(failure(&reason).reason(), "cannot start [expected]");
        }
        other => panic!("{other:?}"),
    }
}

/// OTP's `start_child` waits for the child's `init` and returns its error.
#[test]
fn start_child_waits_for_the_started_hook_and_returns_its_failure() {
    let rt = runtime();
    let mut log = Log::new();
    let sup = start(&rt, log.spec("sup"));
    assert_start_failed(sup.start_child(picky(true)), "picky");
    assert_eq!(
        running(&sup, "picky"),
        None,
        "a child that did not start is forgotten"
    );
    assert_eq!(sup.count_children().unwrap().restarts, 0, "nor restarted");

    // Success is answered after the hook ran.
    let pid = sup.start_child(log.worker("ok")).unwrap();
    let seen = log.rest();
    assert!(seen.iter().any(|s| matches!(
        s,
        supervisor_support::Seen::Started { name: "ok", pid: p } if *p == pid
    )));
    rt.shutdown_graceful();
}

/// OTP's `restart_child` too: a child whose start fails stays stopped.
#[test]
fn restart_child_returns_the_started_hooks_failure() {
    let rt = runtime();
    let log = Log::new();
    let switch = Arc::new(AtomicBool::new(false));
    let spec = ChildSpec::worker(
        "picky",
        Picky {
            fail: false,
            switch: Some(SharedClient::new(
                Arc::clone(&switch),
                "a test instrument: a fault injector the test flips between starts",
            )),
        },
    );
    let sup = start(&rt, log.spec("sup").child(spec));
    sup.terminate_child("picky").unwrap();
    switch.store(true, Ordering::SeqCst);
    assert_start_failed(sup.restart_child("picky"), "picky");
    assert_eq!(running(&sup, "picky"), Some(false), "known, stopped");
    switch.store(false, Ordering::SeqCst);
    let pid = sup.restart_child("picky").unwrap();
    assert_eq!(pid_of(&sup, "picky"), pid);
    rt.shutdown_graceful();
}

/// And a simple-one-for-one child's start (OTP's `start_child(Sup, ExtraArgs)`), from async
/// code with the typed request too.
#[test]
fn start_dynamic_returns_the_started_hooks_failure() {
    let rt = runtime();
    let log = Log::new();
    let pickies = start(
        &rt,
        log.spec("pickies")
            .strategy(RestartStrategy::SimpleOneForOne)
            .template(ChildTemplate::new(picky)),
    );
    assert_start_failed(pickies.start_dynamic(true), "picky");
    let ok = pickies.start_dynamic(false).unwrap();
    let executor = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let answer = executor
        .block_on(
            pickies
                .request_with(|reply| StartDynamic(true, reply))
                .ask(),
        )
        .unwrap();
    assert_start_failed(answer, "picky");
    let pids: Vec<_> = pickies
        .which_children()
        .unwrap()
        .into_iter()
        .map(|c| c.pid)
        .collect();
    assert_eq!(pids, [Some(ok)]);
    rt.shutdown_graceful();
}

// --- Significant children and auto_shutdown -------------------------------------------------

#[test]
fn any_significant_child_ending_shuts_the_supervisor_down() {
    let rt = runtime();
    let mut log = Log::new();
    let spec = log
        .spec("sup")
        .intensity(10, Duration::from_secs(5))
        .clock(ManualClock::new())
        .auto_shutdown(AutoShutdown::AnySignificant)
        .child(log.worker("a"))
        .child(
            log.worker("s")
                .restart(Restart::Transient)
                .significant(true),
        );
    let sup = start(&rt, spec);
    assert!(sup.which_child("s").unwrap().significant);

    // A failure restarts it: only a termination that is not restarted counts.
    child(&rt, "s").post(Do::Fail("boom")).unwrap();
    log.restarted("sup", "s");
    rt.block_until_idle();
    assert_eq!(sup.count_children().unwrap().active, 2);

    child(&rt, "s").post(Do::Complete).unwrap();
    assert_eq!(log.sup_terminated("sup"), ExitReason::Shutdown);
    assert_eq!(log.child_stopped("a").1, ExitReason::Shutdown);
    rt.block_until_idle();
    assert!(sup.is_terminated());
    rt.shutdown_graceful();
}

#[test]
fn all_significant_children_ending_shut_the_supervisor_down() {
    let rt = runtime();
    let mut log = Log::new();
    let spec = log
        .spec("sup")
        .auto_shutdown(AutoShutdown::AllSignificant)
        .child(log.worker("a"))
        .child(
            log.worker("s1")
                .restart(Restart::Temporary)
                .significant(true),
        )
        .child(
            log.worker("s2")
                .restart(Restart::Temporary)
                .significant(true),
        )
        .child(
            log.worker("s3")
                .restart(Restart::Temporary)
                .significant(true),
        );
    let sup = start(&rt, spec);

    // Stopped by the supervisor on request: not an auto-shutdown (as in OTP).
    sup.terminate_child("s3").unwrap();
    child(&rt, "s1").post(Do::Complete).unwrap();
    log.child_stopped("s1");
    rt.block_until_idle();
    assert_eq!(sup.count_children().unwrap().active, 2, "s2 still runs");

    child(&rt, "s2").post(Do::Fail("boom")).unwrap();
    assert_eq!(log.sup_terminated("sup"), ExitReason::Shutdown);
    assert_eq!(log.child_stopped("a").1, ExitReason::Shutdown);
    rt.shutdown_graceful();
}

#[test]
fn significant_children_are_checked_like_the_rest_of_a_spec() {
    let rt = runtime();
    let mut log = Log::new();
    let permanent = log
        .spec("permanent")
        .auto_shutdown(AutoShutdown::AnySignificant)
        .child(log.worker("s").significant(true));
    rt.spawn(Supervisor::new(permanent));
    let reason = log.sup_terminated("permanent");
    assert!(failure(&reason)
        .reason()
        .contains("significant and permanent"));

    let sup = start(&rt, log.spec("never"));
    let spec = log
        .worker("t")
        .restart(Restart::Temporary)
        .significant(true);
    match sup.start_child(spec) {
        Err(SupervisorError::InvalidSpec(spec, problem)) => {
            assert_eq!(spec.id(), "t");
            assert!(problem.contains("auto-shutdown is `Never`"), "{problem}");
        }
        other => panic!("{other:?}"),
    }
    rt.shutdown_graceful();
}

// --- The `shutdown` exit reason -------------------------------------------------------------

/// A child stopped by its supervisor exits `Shutdown`, which is neither `Normal` nor a
/// failure; a transient child stopped that way is not restarted.
#[test]
fn children_stopped_by_their_supervisor_exit_shutdown() {
    let rt = runtime();
    let mut log = Log::new();
    let sup = start(
        &rt,
        log.spec("sup")
            .child(log.worker("t").restart(Restart::Transient)),
    );
    sup.terminate_child("t").unwrap();
    let (_, reason) = log.child_stopped("t");
    assert_eq!(reason, ExitReason::Shutdown);
    assert!(!reason.is_failure());
    assert_ne!(reason, ExitReason::Normal);
    assert_eq!(reason.to_string(), "shutdown");
    let exited = log.event("sup", |k| matches!(k, EventKind::ChildExited { .. }));
    assert!(matches!(
        exited,
        EventKind::ChildExited {
            reason: ExitReason::Shutdown,
            ..
        }
    ));
    rt.block_until_idle();
    assert_eq!(running(&sup, "t"), Some(false));
    assert_eq!(sup.count_children().unwrap().restarts, 0);
    rt.shutdown_graceful();
}
