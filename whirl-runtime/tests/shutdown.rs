//! Shutdown with full inboxes: `shutdown_graceful` stops outside posts, drains every inbox
//! (handlers may still post to each other) and runs every `terminated` hook;
//! `shutdown_timeout` terminates what does not drain and dead-letters the rest; dropping a
//! runtime with pending work does not hang and loses nothing.

mod common;

use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::Duration;
use whirl_runtime::request::Sender as _;

use common::{
    assert_isolated, counter, events, to_test, within_guard, DeadLetters, Event, Gate, Plain,
    ToTest,
};
use whirl_runtime::{
    Addr, Ctx, ExitReason, Failure, Handles, Isolated, Message, PostError, Process, Runtime,
    SharedClient,
};

/// Counts what it handles and reports its `terminated` hook.
struct Counter {
    name: usize,
    handled: SharedClient<Arc<AtomicU64>>,
    hooks: ToTest<(usize, ExitReason)>,
}

enum CounterMsg {
    Hit,
    Hold(SharedClient<Gate>),
    /// Counts down, passing the rest to `peer`.
    Relay(u64, Addr<Counter>),
}

struct Hit;

const _: () = {
    // Never called: naming the instances makes the compiler check each field's type.
    let _ = assert_isolated::<usize>;
    let _ = assert_isolated::<SharedClient<Arc<AtomicU64>>>;
    let _ = assert_isolated::<ToTest<(usize, ExitReason)>>;
    let _ = assert_isolated::<ToTest<ExitReason>>;
    let _ = assert_isolated::<SharedClient<Gate>>;
    let _ = assert_isolated::<(u64, Addr<Counter>)>;
};

// SAFETY: every field is `Isolated` (asserted above): numbers, process addresses, and a gate the
// test thread opens, held as a `SharedClient` (a test instrument, see `common::gate`).
unsafe impl Isolated for CounterMsg {}
impl Message for CounterMsg {}
// SAFETY: no data.
unsafe impl Isolated for Hit {}
impl Message for Hit {}

// SAFETY: every field is `Isolated` (asserted above): `name` is a number, and `handled` and
// `hooks` are test instruments held as `SharedClient`s with the reason (a counter the test
// thread reads and a channel to it). The messages are `Isolated` (see above).
unsafe impl Process for Counter {
    type Message = CounterMsg;

    fn handle(&mut self, msg: CounterMsg, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        self.handled.fetch_add(1, SeqCst);
        match msg {
            CounterMsg::Hit => {}
            CounterMsg::Hold(gate) => gate.wait(),
            CounterMsg::Relay(0, _) => {}
            CounterMsg::Relay(n, peer) => {
                peer.post(CounterMsg::Relay(n - 1, ctx.myself()))
                    .expect("handlers may post while the runtime drains");
            }
        }
        Ok(())
    }

    fn terminated(&mut self, reason: &ExitReason) {
        let _ = self.hooks.send((self.name, reason.clone()));
    }
}

impl whirl_runtime::Handles<CounterMsg> for Counter {
    fn into_message(msg: CounterMsg) -> CounterMsg {
        msg
    }
}

impl Handles<Hit> for Counter {
    fn into_message(_: Hit) -> CounterMsg {
        CounterMsg::Hit
    }
}

struct Fixture {
    rt: Runtime,
    dead: DeadLetters,
    handled: Arc<AtomicU64>,
    hooks: mpsc::Receiver<(usize, ExitReason)>,
    procs: Vec<Addr<Counter>>,
}

fn fixture(threads: usize, procs: usize) -> Fixture {
    let (rt, dead) = common::runtime_with_dead_letters(threads);
    let handled = Arc::new(AtomicU64::new(0));
    let (hooks_tx, hooks) = mpsc::channel();
    let procs = (0..procs)
        .map(|name| {
            rt.spawn(Counter {
                name,
                handled: counter(&handled),
                hooks: to_test(&hooks_tx),
            })
        })
        .collect();
    Fixture {
        rt,
        dead,
        handled,
        hooks,
        procs,
    }
}

/// Every process's hook ran exactly once, with a normal exit.
#[track_caller]
fn assert_hooks_ran_once(hooks: &mpsc::Receiver<(usize, ExitReason)>, procs: usize) {
    let mut seen = vec![0; procs];
    for (name, reason) in hooks.try_iter() {
        assert_eq!(reason, ExitReason::Normal, "process {name}");
        seen[name] += 1;
    }
    assert_eq!(seen, vec![1; procs], "hook runs per process");
}

/// Blocks until a post from outside the runtime is refused: shutdown has begun.
fn wait_for_shutdown_to_begin(probe: &Addr<Counter>) {
    loop {
        match probe.post(Hit) {
            Ok(()) => thread::yield_now(),
            Err(PostError::Terminated(Hit)) => return,
            Err(other) => panic!("only a refusal by shutdown is expected: {other:?}"),
        }
    }
}

#[test]
fn graceful_shutdown_drains_full_inboxes_and_runs_every_hook() {
    const PROCS: usize = 10;
    const PER_PROC: u64 = 2_000;
    let f = fixture(2, PROCS + 1);
    let (probe, workers) = f.procs.split_last().unwrap();
    // Every worker process starts with a blocked handler, so the inboxes are full when
    // shutdown begins; the gate opens only once shutdown has started.
    let gate = Gate::new();
    for p in workers {
        p.post(CounterMsg::Hold(common::gate(&gate))).unwrap();
        for _ in 0..PER_PROC {
            p.post(Hit).unwrap();
        }
    }
    let probe2 = probe.clone();
    let opener = thread::spawn(move || {
        wait_for_shutdown_to_begin(&probe2);
        gate.open();
    });
    let rt = f.rt;
    within_guard("shutdown_graceful", move || rt.shutdown_graceful());
    opener.join().unwrap();

    let probe_hits = f.handled.load(SeqCst) - PROCS as u64 * (PER_PROC + 1);
    assert_eq!(
        f.dead.len(),
        0,
        "graceful shutdown drains, it does not dead-letter"
    );
    assert_eq!(
        f.handled.load(SeqCst),
        PROCS as u64 * (PER_PROC + 1) + probe_hits
    );
    assert_hooks_ran_once(&f.hooks, PROCS + 1);
    for p in &f.procs {
        assert!(p.is_terminated());
        assert!(matches!(p.post(Hit), Err(PostError::Terminated(Hit))));
    }
}

#[test]
fn handlers_may_keep_posting_to_each_other_while_the_runtime_drains() {
    const HOPS: u64 = 20_000;
    let f = fixture(2, 2);
    f.procs[0]
        .post(CounterMsg::Relay(HOPS, f.procs[1].clone()))
        .unwrap();
    let rt = f.rt;
    within_guard("shutdown_graceful", move || rt.shutdown_graceful());
    assert_eq!(f.handled.load(SeqCst), HOPS + 1, "every hop was handled");
    assert_eq!(f.dead.len(), 0);
    assert_hooks_ran_once(&f.hooks, 2);
}

/// Keeps `backlog` messages in its inbox forever: each one handled posts one more.
struct Spinner {
    handled: SharedClient<Arc<AtomicU64>>,
    hook_ran: ToTest<ExitReason>,
}

struct Spin;
// SAFETY: no data.
unsafe impl Isolated for Spin {}
impl Message for Spin {}

// SAFETY: every field is `Isolated` (asserted above): test instruments held as `SharedClient`s,
// as for `Counter` (a counter the test thread reads and a channel to it). The message carries
// no data.
unsafe impl Process for Spinner {
    type Message = Spin;

    fn handle(&mut self, _: Spin, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        self.handled.fetch_add(1, SeqCst);
        ctx.myself()
            .post(Spin)
            .expect("a process is never terminated inside its handler");
        Ok(())
    }

    fn terminated(&mut self, reason: &ExitReason) {
        self.hook_ran.send(reason.clone()).unwrap();
    }
}

impl whirl_runtime::Handles<Spin> for Spinner {
    fn into_message(msg: Spin) -> Spin {
        msg
    }
}

#[test]
fn shutdown_timeout_terminates_a_process_that_never_drains_and_dead_letters_the_rest() {
    const BACKLOG: u64 = 1_000;
    const PER_PROC: u64 = 500;
    let f = fixture(2, 3);
    let spun = Arc::new(AtomicU64::new(0));
    let (hook_tx, hook_rx) = mpsc::channel();
    let spinner = f.rt.spawn(Spinner {
        handled: counter(&spun),
        hook_ran: to_test(&hook_tx),
    });
    for _ in 0..BACKLOG {
        spinner.post(Spin).unwrap();
    }
    for p in &f.procs {
        for _ in 0..PER_PROC {
            p.post(Hit).unwrap();
        }
    }
    let rt = f.rt;
    let report = within_guard("shutdown_timeout", move || {
        rt.shutdown_timeout(Duration::from_millis(100))
    });
    assert!(!report.drained, "the spinner never drains");
    assert!(report.abandoned.is_empty(), "{report}");

    assert_eq!(common::recv(&hook_rx), ExitReason::Normal);
    assert!(hook_rx.try_recv().is_err(), "hook ran once");
    assert!(spinner.is_terminated());
    // Each handled message posted exactly one more, so the backlog was still there.
    let letters = f.dead.take();
    assert_eq!(letters.len() as u64, BACKLOG);
    for letter in &letters {
        assert_eq!(letter.to(), spinner.id());
        assert_eq!(letter.reason(), &ExitReason::Normal);
        assert!(letter.downcast_ref::<Spin>().is_some());
    }
    assert!(spun.load(SeqCst) > 0);
    // The well-behaved processes drained during the grace period.
    assert_eq!(f.handled.load(SeqCst), 3 * PER_PROC);
    assert_hooks_ran_once(&f.hooks, 3);
}

#[test]
fn shutdown_timeout_reports_a_full_drain() {
    let f = fixture(2, 4);
    for p in &f.procs {
        for _ in 0..1_000 {
            p.post(Hit).unwrap();
        }
    }
    let rt = f.rt;
    let report = within_guard("shutdown_timeout", move || {
        rt.shutdown_timeout(common::HANG_GUARD)
    });
    assert!(report.is_clean(), "{report}");
    assert_eq!(report.terminated, 4);
    assert_eq!(f.handled.load(SeqCst), 4_000);
    assert_eq!(f.dead.len(), 0);
    assert_hooks_ran_once(&f.hooks, 4);
}

#[test]
fn dropping_a_runtime_with_pending_work_does_not_hang_and_loses_nothing() {
    const PER_PROC: u64 = 20_000;
    let f = fixture(2, 4);
    let spun = Arc::new(AtomicU64::new(0));
    let (hook_tx, hook_rx) = mpsc::channel();
    let spinner = f.rt.spawn(Spinner {
        handled: counter(&spun),
        hook_ran: to_test(&hook_tx),
    });
    for _ in 0..100 {
        spinner.post(Spin).unwrap();
    }
    for p in &f.procs {
        for _ in 0..PER_PROC {
            p.post(Hit).unwrap();
        }
    }
    let rt = f.rt;
    within_guard("dropping the runtime", move || drop(rt));

    assert_eq!(common::recv(&hook_rx), ExitReason::Normal);
    assert_hooks_ran_once(&f.hooks, 4);
    // Whatever was not handled went to the dead letters.
    let letters = f.dead.take();
    let spin_letters = letters.iter().filter(|l| l.to() == spinner.id()).count();
    assert_eq!(spin_letters, 100);
    assert_eq!(
        f.handled.load(SeqCst) + (letters.len() - spin_letters) as u64,
        4 * PER_PROC
    );
    assert!(f.procs.iter().all(Addr::is_terminated));
    assert!(spinner.is_terminated());
}

/// Both workers stuck in handlers, a backlog queued behind them: the forced shutdown of issue
/// 13 that used to lose every queued message.
struct Stuck {
    dead: DeadLetters,
    handled: Arc<AtomicU64>,
    hooks: mpsc::Receiver<(usize, ExitReason)>,
    procs: Vec<Addr<Counter>>,
    gate: Gate,
    holders: Vec<Addr<Counter>>,
}

const QUEUED_PER_PROCESS: u64 = 1_000;
const BEHIND_EACH_HOLDER: u64 = 10;
const FIRST_HOLDER: usize = 1_000;

fn stuck_workers(procs: usize) -> (Runtime, Stuck) {
    let (rt, dead) = common::runtime_with_dead_letters(2);
    let handled = Arc::new(AtomicU64::new(0));
    let (hooks_tx, hooks) = mpsc::channel();
    let spawn = |name| {
        rt.spawn(Counter {
            name,
            handled: counter(&handled),
            hooks: to_test(&hooks_tx),
        })
    };
    let procs: Vec<_> = (0..procs).map(spawn).collect();
    let holders: Vec<_> = (FIRST_HOLDER..FIRST_HOLDER + 2).map(spawn).collect();
    let gate = Gate::new();
    for holder in &holders {
        holder.post(CounterMsg::Hold(common::gate(&gate))).unwrap();
    }
    // Both workers are inside a `Hold` before anything else is posted.
    common::wait_until("both workers held", || handled.load(SeqCst) == 2);
    for holder in &holders {
        for _ in 0..BEHIND_EACH_HOLDER {
            holder.post(Hit).unwrap();
        }
    }
    for p in &procs {
        for _ in 0..QUEUED_PER_PROCESS {
            p.post(Hit).unwrap();
        }
    }
    let stuck = Stuck {
        dead,
        handled,
        hooks,
        procs,
        gate,
        holders,
    };
    (rt, stuck)
}

/// What must hold once a shutdown with stuck workers has returned (checking its report, if
/// the caller got one), and again once the stuck handlers have returned.
fn check_stuck_shutdown(s: Stuck, report: Option<whirl_runtime::ShutdownReport>) {
    let procs = s.procs.len() as u64;
    if let Some(report) = &report {
        // The two holders are reported, with what they are handling.
        let ids: Vec<_> = report.abandoned.iter().map(|p| p.id).collect();
        assert_eq!(
            ids,
            s.holders.iter().map(Addr::id).collect::<Vec<_>>(),
            "{report}"
        );
        for abandoned in &report.abandoned {
            assert_eq!(
                abandoned.message_type,
                Some(std::any::type_name::<CounterMsg>())
            );
            assert_eq!(abandoned.group, "default");
        }
        assert!(!report.drained);
        assert_eq!(report.dead_lettered, procs * QUEUED_PER_PROCESS);
        assert_eq!(report.terminated, procs);
    }
    // Every other process ran its hook, once, before the call returned, and nothing queued
    // for it was lost: none of it could be handled, so all of it is a dead letter.
    assert_hooks_ran_once(&s.hooks, s.procs.len());
    assert_eq!(s.dead.len() as u64, procs * QUEUED_PER_PROCESS);
    assert_eq!(s.handled.load(SeqCst), 2);
    assert!(s.procs.iter().all(Addr::is_terminated));
    assert!(s.holders.iter().all(|h| !h.is_terminated()));

    // When the stuck handlers return, their processes terminate at once: hooks run, the
    // messages behind them are dead-lettered, not handled.
    s.gate.open();
    let mut hooks = vec![common::recv(&s.hooks), common::recv(&s.hooks)];
    hooks.sort_by_key(|(name, _)| *name);
    assert_eq!(
        hooks,
        vec![
            (FIRST_HOLDER, ExitReason::Normal),
            (FIRST_HOLDER + 1, ExitReason::Normal)
        ]
    );
    common::wait_until("the holders' backlog is dead-lettered", || {
        s.dead.len() as u64 == procs * QUEUED_PER_PROCESS + 2 * BEHIND_EACH_HOLDER
    });
    assert_eq!(s.handled.load(SeqCst), 2);
    assert!(s.holders.iter().all(Addr::is_terminated));
}

#[test]
fn a_forced_shutdown_with_every_worker_stuck_loses_nothing_and_reports_the_stuck() {
    let (rt, stuck) = stuck_workers(100);
    let report = within_guard("shutdown_timeout", move || {
        rt.shutdown_timeout(Duration::from_millis(50))
    });
    check_stuck_shutdown(stuck, Some(report));
}

#[test]
fn dropping_a_runtime_whose_workers_are_stuck_loses_nothing() {
    let (rt, stuck) = stuck_workers(20);
    within_guard("dropping the runtime", move || drop(rt));
    check_stuck_shutdown(stuck, None);
}

#[test]
fn an_idle_runtime_drops_promptly_and_later_posts_come_back() {
    let f = fixture(2, 2);
    let rt = f.rt;
    within_guard("dropping the runtime", move || drop(rt));
    assert_hooks_ran_once(&f.hooks, 2);
    for p in &f.procs {
        match p.post(Hit) {
            Err(PostError::Terminated(Hit)) => {}
            other => panic!("{:?}", other.map_err(|e| e.is_terminated())),
        }
    }
}

#[test]
fn a_process_nobody_holds_an_address_to_still_runs_its_hook_at_shutdown() {
    // A process is alive until it terminates, whether or not anyone keeps its address (it may
    // be driven by timers or by messages from processes it registered with). Here it keeps
    // no reference to itself either; shutdown must still terminate it and run its hook.
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let (tx, mut ev) = events();
    drop(rt.spawn(Plain::new("orphan", &tx)));
    rt.block_until_idle();
    assert_eq!(rt.live_processes(), 1);
    assert!(ev.rest().is_empty(), "not terminated yet");
    within_guard("shutdown_graceful", move || rt.shutdown_graceful());
    assert_eq!(
        ev.rest(),
        vec![Event::Terminated {
            name: "orphan",
            reason: ExitReason::Normal
        }]
    );
}

#[test]
fn spawning_into_a_group_whose_runtime_has_shut_down_terminates_the_process_at_once() {
    // A group handle can outlive its runtime; a process spawned into it can never run, so it
    // is terminated on the spot (hook and all) rather than left half-alive.
    let old = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let stale = old.default_group().clone();
    old.shutdown_graceful();
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let (tx, mut ev) = events();
    let p = rt.spawner().group(&stale).spawn(Plain::new("late", &tx));
    assert!(ev.terminated("late").is_failure());
    assert!(p.is_terminated());
    assert!(matches!(
        common::post_job(&p, |_, _| Ok(())),
        Err(PostError::Terminated(_))
    ));
    rt.shutdown_graceful();
    assert!(ev.rest().is_empty(), "the hook ran once");
}
