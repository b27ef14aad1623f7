//! Invariant 4: a panic or an `Err` in a handler terminates only that process, records the
//! reason, runs its termination hook exactly once and notifies its monitors; workers survive.
//! Also the other ways to terminate: `ctx.fail()`, `ctx.complete()`, `started()` failing.

mod common;

use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::mpsc;
use std::sync::Arc;
use whirl_runtime::request::Sender as _;

use common::{
    assert_isolated, counter, events, failure, make_fail, monitor, post_job, run, to_test, Event,
    Plain, System, ToTest,
};
use whirl_runtime::{
    Ctx, ExitReason, Failure, FailureKind, PostError, Process, ProcessId, Runtime, SharedClient,
};

/// One worker: if a panic killed it, nothing would run afterwards.
fn one_worker_runtime() -> (Runtime, common::DeadLetters) {
    common::quiet_expected_panics();
    common::runtime_with_dead_letters(1)
}

#[test]
fn a_panic_in_a_handler_is_contained_and_recorded() {
    let (rt, _dead) = one_worker_runtime();
    let (tx, mut ev) = events();
    let bad = rt.spawn(Plain::new("bad", &tx));
    let bystander = rt.spawn(Plain::new("bystander", &tx));
    let sup = rt.spawn(System::new("sup", &tx));
    monitor(&sup, &bad);

    post_job(&bad, |_, _| panic!("boom [expected] {}", 42)).unwrap();

    let reason = ev.terminated("bad");
    let f = failure(&reason);
    assert_eq!(f.kind(), &FailureKind::Panic);
    assert_eq!(f.reason(), "boom [expected] 42");
    let down = ev.down("sup");
    assert_eq!(down.id, bad.id());
    assert_eq!(down.reason, reason);

    // The only worker survived and runs everyone else.
    assert_eq!(run(&bystander, |n, _| n.name), "bystander");
    assert!(bad.is_terminated());
    assert!(matches!(
        post_job(&bad, |_, _| Ok(())),
        Err(PostError::Terminated(_))
    ));

    rt.block_until_idle();
    common::assert_balanced(&rt.counts());
    rt.shutdown_graceful();
    // The hook ran once for `bad` (above), and once for each of the others at shutdown.
    let rest = ev.rest();
    let hooks_of = |name| {
        rest.iter()
            .filter(|e| matches!(e, Event::Terminated { name: n, .. } if *n == name))
            .count()
    };
    assert_eq!(hooks_of("bad"), 0, "terminated hook ran twice: {rest:?}");
    assert_eq!(hooks_of("bystander"), 1);
    assert_eq!(hooks_of("sup"), 1);
}

#[test]
fn a_non_string_panic_payload_is_still_a_panic() {
    let (rt, _dead) = one_worker_runtime();
    let (tx, mut ev) = events();
    let bad = rt.spawn(Plain::new("bad", &tx));
    post_job(&bad, |_, _| std::panic::panic_any(7_u32)).unwrap();
    let reason = ev.terminated("bad");
    assert_eq!(failure(&reason).kind(), &FailureKind::Panic);
    rt.shutdown_graceful();
}

#[test]
fn many_panics_on_one_worker_leave_it_running() {
    let (rt, _dead) = one_worker_runtime();
    let (tx, mut ev) = events();
    let names: Vec<&'static str> = (0..100)
        .map(|i| &*Box::leak(format!("p{i}").into_boxed_str()))
        .collect();
    let procs: Vec<_> = names.iter().map(|n| rt.spawn(Plain::new(n, &tx))).collect();
    for p in &procs {
        post_job(p, |n, _| panic!("[expected] {}", n.name)).unwrap();
    }
    for name in &names {
        let reason = ev.terminated(name);
        assert_eq!(failure(&reason).kind(), &FailureKind::Panic);
        assert_eq!(failure(&reason).reason(), format!("[expected] {name}"));
    }
    let survivor = rt.spawn(Plain::new("survivor", &tx));
    assert_eq!(run(&survivor, |_, _| 5), 5);
    rt.block_until_idle();
    let counts = rt.counts();
    common::assert_balanced(&counts);
    assert_eq!(counts.terminated, 100);
    rt.shutdown_graceful();
}

#[test]
fn a_handler_returning_err_fails_the_process_with_that_reason() {
    let (rt, dead) = one_worker_runtime();
    let (tx, mut ev) = events();
    let p = rt.spawn(Plain::new("p", &tx));
    make_fail(&p, "out of cheese");
    let reason = ev.terminated("p");
    assert_eq!(reason, ExitReason::Failed(Failure::new("out of cheese")));
    assert_eq!(failure(&reason).kind(), &FailureKind::Error);
    assert!(reason.is_failure());
    rt.block_until_idle();
    assert_eq!(dead.len(), 0);
    rt.shutdown_graceful();
}

#[test]
fn question_mark_on_a_std_error_fails_the_process_with_its_text() {
    let (rt, _dead) = one_worker_runtime();
    let (tx, mut ev) = events();
    let p = rt.spawn(Plain::new("p", &tx));
    post_job(&p, |_, _| {
        let _n: u32 = "not a number".parse()?;
        Ok(())
    })
    .unwrap();
    let expected = "not a number".parse::<u32>().unwrap_err().to_string();
    let reason = ev.terminated("p");
    assert_eq!(failure(&reason).kind(), &FailureKind::Error);
    assert_eq!(failure(&reason).reason(), expected);
    rt.shutdown_graceful();
}

#[test]
fn ctx_fail_terminates_after_the_handler_returns() {
    let (rt, dead) = one_worker_runtime();
    let (tx, mut ev) = events();
    let p = rt.spawn(Plain::new("p", &tx));
    let (after_tx, after_rx) = mpsc::channel();
    post_job(&p, move |_, ctx| {
        let me = ctx.myself();
        ctx.fail("giving up");
        // Still running: the rest of the handler completes, and the process is not yet
        // terminated, so it can still queue a message to itself (it will be dead-lettered).
        assert!(!me.is_terminated());
        me.post(common::NodeMsg::Run(common::job(|_, _| Ok(()))))
            .expect("not terminated until the handler returns");
        after_tx.send(()).unwrap();
        Ok(())
    })
    .unwrap();
    common::recv(&after_rx);
    let reason = ev.terminated("p");
    assert_eq!(reason, ExitReason::Failed(Failure::new("giving up")));
    rt.block_until_idle();
    assert_eq!(
        dead.len(),
        1,
        "the message queued after fail() is dead-lettered"
    );
    common::assert_balanced(&rt.counts());
    rt.shutdown_graceful();
}

#[test]
fn the_first_termination_request_in_a_handler_wins() {
    let (rt, _dead) = one_worker_runtime();
    let (tx, mut ev) = events();
    let a = rt.spawn(Plain::new("a", &tx));
    post_job(&a, |_, ctx| {
        ctx.complete();
        ctx.fail("too late");
        Ok(())
    })
    .unwrap();
    assert_eq!(ev.terminated("a"), ExitReason::Normal);
    let b = rt.spawn(Plain::new("b", &tx));
    post_job(&b, |_, ctx| {
        ctx.fail("first");
        ctx.complete();
        Ok(())
    })
    .unwrap();
    assert_eq!(
        ev.terminated("b"),
        ExitReason::Failed(Failure::new("first"))
    );
    rt.shutdown_graceful();
}

#[test]
fn ctx_complete_is_a_normal_exit() {
    let (rt, _dead) = one_worker_runtime();
    let (tx, mut ev) = events();
    let p = rt.spawn(Plain::new("p", &tx));
    common::make_complete(&p);
    assert_eq!(ev.terminated("p"), ExitReason::Normal);
    assert!(!ExitReason::Normal.is_failure());
    rt.block_until_idle();
    assert!(p.is_terminated());
    assert!(matches!(
        post_job(&p, |_, _| Ok(())),
        Err(PostError::Terminated(_))
    ));
    rt.shutdown_graceful();
}

// --- Lifecycle hooks ---------------------------------------------------------------------

#[derive(Clone, Copy)]
enum Mode {
    Fine,
    Err,
    Panic,
}

/// A process whose `started` and `terminated` hooks misbehave on demand.
struct Lifecycle {
    start: Mode,
    hook: Mode,
    handled: SharedClient<Arc<AtomicU64>>,
    hooks: ToTest<ExitReason>,
}

/// A number for a `Lifecycle`.
#[derive(Debug, PartialEq)]
struct Num(u32);
// SAFETY: a number.
unsafe impl whirl_runtime::Isolated for Num {}
impl whirl_runtime::Message for Num {}

// Never called: naming the instances makes the compiler check each field's type.
const _: () = {
    let _ = assert_isolated::<SharedClient<Arc<AtomicU64>>>;
    let _ = assert_isolated::<ToTest<ExitReason>>;
};

// SAFETY: every field is `Isolated` (asserted above): `start` and `hook` are plain data (a
// `Copy` enum without references), and `handled` and `hooks` are test instruments held as
// `SharedClient`s with the reason (a counter the test thread reads and a channel to it). The
// message is a number.
unsafe impl Process for Lifecycle {
    type Message = Num;

    fn started(&mut self, _ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        match self.start {
            Mode::Fine => Ok(()),
            Mode::Err => Err(Failure::new("cannot start")),
            Mode::Panic => panic!("[expected] start panicked"),
        }
    }

    fn handle(&mut self, _msg: Num, _ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        self.handled.fetch_add(1, SeqCst);
        Ok(())
    }

    fn terminated(&mut self, reason: &ExitReason) {
        self.hooks.send(reason.clone()).unwrap();
        if let Mode::Panic = self.hook {
            panic!("[expected] hook panicked");
        }
    }
}

impl whirl_runtime::Handles<Num> for Lifecycle {
    fn into_message(msg: Num) -> Num {
        msg
    }
}

fn lifecycle(start: Mode, hook: Mode) -> (Lifecycle, Arc<AtomicU64>, mpsc::Receiver<ExitReason>) {
    let handled = Arc::new(AtomicU64::new(0));
    let (hooks, rx) = mpsc::channel();
    (
        Lifecycle {
            start,
            hook,
            handled: counter(&handled),
            hooks: to_test(&hooks),
        },
        handled,
        rx,
    )
}

#[test]
fn started_returning_err_fails_the_process_before_any_message() {
    let (rt, dead) = one_worker_runtime();
    let (state, handled, hooks) = lifecycle(Mode::Err, Mode::Fine);
    let p = rt.spawn(state);
    // Posted before or after the start hook ran: never handled either way.
    let accepted = (0..10).filter(|i| p.post(Num(*i)).is_ok()).count();
    let reason = common::recv(&hooks);
    assert_eq!(reason, ExitReason::Failed(Failure::new("cannot start")));
    rt.block_until_idle();
    assert_eq!(handled.load(SeqCst), 0, "handle ran after started() failed");
    assert_eq!(dead.len(), accepted, "accepted messages are dead-lettered");
    assert_eq!(p.post(Num(99)), Err(PostError::Terminated(Num(99))));
    rt.shutdown_graceful();
    assert!(hooks.try_recv().is_err(), "terminated hook ran twice");
}

#[test]
fn started_panicking_fails_the_process_with_a_panic() {
    let (rt, _dead) = one_worker_runtime();
    let (tx, mut ev) = events();
    let (state, handled, hooks) = lifecycle(Mode::Panic, Mode::Fine);
    let p = rt.spawn(state);
    let sup = rt.spawn(System::new("sup", &tx));
    let reason = common::recv(&hooks);
    assert_eq!(failure(&reason).kind(), &FailureKind::Panic);
    assert_eq!(failure(&reason).reason(), "[expected] start panicked");
    // Monitoring it now still reports how it ended.
    let target = p.clone();
    run(&sup, move |_, ctx| ctx.monitor(&target));
    let down = ev.down("sup");
    assert_eq!((down.id, down.reason), (p.id(), reason));
    assert_eq!(handled.load(SeqCst), 0);
    rt.shutdown_graceful();
}

#[test]
fn a_panicking_terminated_hook_is_contained_and_monitors_still_hear() {
    let (rt, _dead) = one_worker_runtime();
    let (tx, mut ev) = events();
    let (state, handled, hooks) = lifecycle(Mode::Fine, Mode::Panic);
    let p = rt.spawn(state);
    let sup = rt.spawn(System::new("sup", &tx));
    let target = p.clone();
    run(&sup, move |_, ctx| ctx.monitor(&target));
    p.post(Num(1)).unwrap();
    rt.block_until_idle();
    assert_eq!(handled.load(SeqCst), 1);
    // Terminate it through a linked failure: a plain node linked to it fails.
    let trigger = rt.spawn(Plain::new("trigger", &tx));
    let target = p.clone();
    run(&trigger, move |_, ctx| ctx.link(&target));
    make_fail(&trigger, "go");
    let reason = common::recv(&hooks);
    assert_eq!(
        failure(&reason).kind(),
        &FailureKind::Linked(trigger.id()),
        "{reason:?}"
    );
    let down = ev.down("sup");
    assert_eq!((down.id, down.reason), (p.id(), reason));
    // The worker survived the hook's panic.
    assert_eq!(run(&sup, |_, ctx| ctx.id()), sup.id());
    rt.shutdown_graceful();
    assert!(hooks.try_recv().is_err(), "terminated hook ran twice");
}

#[test]
fn the_terminated_hook_runs_exactly_once_when_terminations_race() {
    // Pairs of linked processes both fail at about the same time, so each is asked to
    // terminate twice (its own failure and its peer's); then shutdown asks everyone again.
    common::quiet_expected_panics();
    let rt = Runtime::builder()
        .threads(4)
        .build()
        .expect("the runtime starts");
    let (tx, ev) = events();
    let mut names = Vec::new();
    let mut pairs = Vec::new();
    for i in 0..50 {
        let a: &'static str = Box::leak(format!("a{i}").into_boxed_str());
        let b: &'static str = Box::leak(format!("b{i}").into_boxed_str());
        let pa = rt.spawn(Plain::new(a, &tx));
        let pb = rt.spawn(Plain::new(b, &tx));
        common::link(&pa, &pb);
        names.extend([a, b]);
        pairs.push((pa, pb));
    }
    let bystanders: Vec<_> = (0..20)
        .map(|_| rt.spawn(Plain::new("bystander", &tx)))
        .collect();
    for (i, (a, b)) in pairs.iter().enumerate() {
        if i % 2 == 0 {
            make_fail(a, "a failed");
            post_job(b, |_, _| panic!("[expected] b panicked")).unwrap();
        } else {
            post_job(b, |_, _| panic!("[expected] b panicked")).unwrap();
            make_fail(a, "a failed");
        }
    }
    rt.block_until_idle();
    for (a, b) in &pairs {
        assert!(a.is_terminated() && b.is_terminated());
    }
    rt.shutdown_graceful();
    drop(bystanders);
    drop(tx);
    let mut ev = ev;
    let all = ev.rest();
    for name in names {
        let hooks: Vec<_> = all
            .iter()
            .filter(|e| matches!(e, Event::Terminated { name: n, .. } if *n == name))
            .collect();
        assert_eq!(hooks.len(), 1, "{name}: {hooks:?}");
        let Event::Terminated { reason, .. } = hooks[0] else {
            unreachable!()
        };
        assert!(reason.is_failure(), "{name} exited normally");
    }
    let bystander_hooks = all
        .iter()
        .filter(|e| {
            matches!(e, Event::Terminated { name: "bystander", reason } if *reason == ExitReason::Normal)
        })
        .count();
    assert_eq!(bystander_hooks, 20);
}

#[test]
fn failure_display_says_what_happened() {
    let f = Failure::new("disk full");
    assert_eq!(f.to_string(), "disk full");
    assert_eq!(ExitReason::Failed(f).to_string(), "failed: disk full");
    assert_eq!(ExitReason::Normal.to_string(), "normal");
    // Ids display as `<n>`.
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let (tx, _ev) = events();
    let p = rt.spawn(Plain::new("p", &tx));
    let id: ProcessId = p.id();
    assert_eq!(id.to_string(), format!("<{}>", id.as_u64()));
    rt.shutdown_graceful();
}

#[test]
fn addr_exit_terminates_before_the_next_message_with_the_given_reason() {
    use whirl_runtime::{ExitReason, Failure, Runtime};
    let (rt, dead) = common::runtime_with_dead_letters(1);
    let (tx, mut events) = common::events();
    let node = rt.spawn(common::Plain::new("target", &tx));
    let gate = common::Gate::new();
    let held = gate.clone();
    let (entered_tx, entered) = std::sync::mpsc::channel();
    // Hold the node in a handler, queue work behind it, then ask it to exit.
    common::post_job(&node, move |_, _| {
        let _ = entered_tx.send(());
        held.wait();
        Ok(())
    })
    .unwrap();
    common::recv(&entered);
    for _ in 0..3 {
        common::post_job(&node, |n, _| {
            n.log.push(1);
            Ok(())
        })
        .unwrap();
    }
    node.exit(ExitReason::Failed(Failure::new("told to go")));
    node.exit(ExitReason::Normal); // the first reason wins
    gate.open();
    let reason = events.terminated("target");
    assert_eq!(common::failure(&reason).reason(), "told to go");
    rt.block_until_idle();
    assert_eq!(dead.take().len(), 3, "the queued work was not handled");
    let _: &Runtime = &rt;
    rt.shutdown_graceful();
}
