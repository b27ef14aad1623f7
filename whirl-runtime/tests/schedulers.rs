//! Group schedulers on a live runtime: stride shares of handling time, principal priority
//! order and quotas, and a custom scheduler written here.
//!
//! Nothing is decided by a clock: handlers spin or block only to create work or to hold the
//! worker, and waits poll for something to happen within a generous deadline.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use whirl_runtime::request::Sender as _;

use whirl_runtime::scheduler::{PrincipalPriority, Ready, Scheduler, Stride};
use whirl_runtime::{
    Addr, Ctx, Failure, Handles, Isolated, Message, Principal, Process, Runtime, SharedClient,
};

use common::{assert_isolated, flag, to_test, wait_until, Gate, ToTest};

/// Keeps its worker busy: each message spins for `work`, then (unless stopped) posts the next
/// one to itself, so the process is always ready.
struct Spinner {
    work: Duration,
    stop: SharedClient<Arc<AtomicBool>>,
}

struct Tick;
// SAFETY: no data.
unsafe impl Isolated for Tick {}
impl Message for Tick {}

const _: () = {
    // Never called: naming the instances makes the compiler check each field's type.
    let _ = assert_isolated::<Duration>;
    let _ = assert_isolated::<SharedClient<Arc<AtomicBool>>>;
    let _ = assert_isolated::<ToTest<()>>;
    let _ = assert_isolated::<SharedClient<Gate>>;
    let _ = assert_isolated::<u8>;
    let _ = assert_isolated::<SharedClient<Arc<Mutex<Vec<u8>>>>>;
};

// SAFETY: every field is `Isolated` (asserted above): `work` is a duration, and `stop` a flag
// the test thread sets to end the spinning, held as a `SharedClient` (a test instrument, see
// `common::flag`). The message carries no data.
unsafe impl Process for Spinner {
    type Message = Tick;

    fn handle(&mut self, _: Tick, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        let start = Instant::now();
        while start.elapsed() < self.work {
            std::hint::spin_loop();
        }
        if !self.stop.load(SeqCst) {
            let _ = ctx.myself().post(Tick);
        }
        Ok(())
    }
}

impl Handles<Tick> for Spinner {
    fn into_message(msg: Tick) -> Tick {
        msg
    }
}

/// Holds the worker that runs it until the test opens the gate; says when it has started.
struct Blocker {
    entered: ToTest<()>,
}

struct Hold(SharedClient<Gate>);
// SAFETY: the only field is `Isolated` (asserted above): a gate the test thread opens to hold
// the group's worker, held as a `SharedClient` (a test instrument, see `common::gate`).
unsafe impl Isolated for Hold {}
impl Message for Hold {}

// SAFETY: the only field is `Isolated` (asserted above): `entered`, a channel to the test
// thread held as a `SharedClient` (a test instrument, see `common::to_test`). The message is a
// `Hold` (above).
unsafe impl Process for Blocker {
    type Message = Hold;

    fn handle(&mut self, Hold(gate): Hold, _: &mut Ctx<Self>) -> Result<(), Failure> {
        let _ = self.entered.send(());
        gate.wait();
        Ok(())
    }
}

impl Handles<Hold> for Blocker {
    fn into_message(msg: Hold) -> Hold {
        msg
    }
}

/// Notes its principal's priority in a shared log each time it handles a message.
struct Recorder {
    priority: u8,
    log: SharedClient<Arc<Mutex<Vec<u8>>>>,
}

/// The shared log as a [`Recorder`] holds it.
fn recording(log: &Arc<Mutex<Vec<u8>>>) -> SharedClient<Arc<Mutex<Vec<u8>>>> {
    SharedClient::new(
        Arc::clone(log),
        "test instrument: the order in which the scheduler ran the recorders, which the test \
         reads after the fact; recorders only append to it and never read it, so no process's \
         behaviour depends on what another wrote",
    )
}

struct Note;
// SAFETY: no data.
unsafe impl Isolated for Note {}
impl Message for Note {}

// SAFETY: every field is `Isolated` (asserted above): `priority` is a number, and `log` the
// order the scheduler ran the recorders in, held as a `SharedClient` (a test instrument, see
// `recording`). The message carries no data.
unsafe impl Process for Recorder {
    type Message = Note;

    fn handle(&mut self, _: Note, _: &mut Ctx<Self>) -> Result<(), Failure> {
        self.log.lock().unwrap().push(self.priority);
        Ok(())
    }
}

impl Handles<Note> for Recorder {
    fn into_message(msg: Note) -> Note {
        msg
    }
}

/// Occupies the only worker of `group`'s runtime with a [`Blocker`]; returns once it runs.
fn block_worker(rt: &Runtime, group: &whirl_runtime::Group) -> Gate {
    let (entered_tx, entered) = mpsc::channel();
    let blocker = rt.spawner().group(group).spawn(Blocker {
        entered: to_test(&entered_tx),
    });
    let gate = Gate::new();
    blocker.post(Hold(common::gate(&gate))).unwrap();
    common::recv(&entered);
    gate
}

#[test]
fn stride_shares_handling_time_three_to_one() {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let group = rt
        .group("stride")
        .threads(1)
        .budget(1)
        .scheduler(Stride::new().tickets(1, 3).tickets(2, 1))
        .build()
        .expect("build group");
    let stop = Arc::new(AtomicBool::new(false));
    let (gold, bronze) = (
        Principal::builder(1)
            .class(1)
            .build()
            .expect("a valid principal"),
        Principal::builder(2)
            .class(2)
            .build()
            .expect("a valid principal"),
    );
    let mut spinners: Vec<Addr<Spinner>> = Vec::new();
    for principal in [&gold, &bronze] {
        for _ in 0..4 {
            let state = Spinner {
                work: Duration::from_micros(200),
                stop: flag(&stop),
            };
            spinners.push(
                rt.spawner()
                    .group(&group)
                    .principal(principal.clone())
                    .spawn(state),
            );
        }
    }
    // Both classes are ready from the start and stay ready (saturation).
    for s in &spinners {
        s.post(Tick).unwrap();
    }
    wait_until("4000 messages handled in the stride group", || {
        gold.handled() + bronze.handled() >= 4000
    });
    stop.store(true, SeqCst);
    rt.block_until_idle();

    let (g, b) = (gold.handling_time(), bronze.handling_time());
    let share = g.as_secs_f64() / (g + b).as_secs_f64();
    assert!(
        (0.70..=0.80).contains(&share),
        "class 1 (3 tickets) got {:.1}% of the handling time, wanted 75% ± 5%: \
         class 1 {g:?} over {} messages, class 2 {b:?} over {} messages; {}",
        share * 100.0,
        gold.handled(),
        bronze.handled(),
        group.stats().scheduler
    );
    // The group's statistics tell the same story, per principal.
    let stats = group.stats();
    assert!(stats.scheduler.starts_with("stride: class 1 (3 tickets)"));
    let by_class = |class| {
        stats
            .principals
            .iter()
            .filter(|p| p.class == class)
            .map(|p| p.handled)
            .sum::<u64>()
    };
    assert_eq!(by_class(1), gold.handled());
    assert_eq!(by_class(2), bronze.handled());
}

#[test]
fn priority_scheduler_runs_higher_priority_first() {
    const EACH: usize = 10;
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let group = rt
        .group("priority")
        .threads(1)
        .scheduler(PrincipalPriority::new().quota(2, 100).quota(1, 100))
        .build()
        .expect("build group");
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut recorders = Vec::new();
    for id in 0..2 * EACH as u64 {
        // Interleaved: low, high, low, high...
        let priority = 1 + (id % 2) as u8;
        let state = Recorder {
            priority,
            log: recording(&log),
        };
        recorders.push(
            rt.spawner()
                .group(&group)
                .principal(
                    Principal::builder(id)
                        .priority(priority)
                        .build()
                        .expect("a valid principal"),
                )
                .spawn(state),
        );
    }
    rt.block_until_idle();

    let gate = block_worker(&rt, &group);
    // Everything becomes ready while the only worker is held.
    for r in &recorders {
        r.post(Note).unwrap();
    }
    gate.open();
    rt.block_until_idle();

    let order = log.lock().unwrap().clone();
    assert_eq!(order.len(), 2 * EACH, "every recorder ran once: {order:?}");
    let expected: Vec<u8> = [2; EACH].into_iter().chain([1; EACH]).collect();
    assert_eq!(order, expected, "high priority (2) first, then low (1)");
}

#[test]
fn priority_scheduler_does_not_starve_low_priority() {
    const LOW_MESSAGES: u64 = 20;
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let group = rt
        .group("priority")
        .threads(1)
        .budget(1)
        .scheduler(PrincipalPriority::new().quota(2, 3).quota(1, 1))
        .build()
        .expect("build group");
    let stop = Arc::new(AtomicBool::new(false));
    let high = Principal::builder(1)
        .priority(2)
        .build()
        .expect("a valid principal");
    let low = Principal::builder(2)
        .priority(1)
        .build()
        .expect("a valid principal");
    for _ in 0..4 {
        let state = Spinner {
            work: Duration::from_micros(100),
            stop: flag(&stop),
        };
        rt.spawner()
            .group(&group)
            .principal(high.clone())
            .spawn(state)
            .post(Tick)
            .unwrap();
    }
    wait_until("the high-priority flood to start", || high.handled() >= 100);

    let log = Arc::new(Mutex::new(Vec::new()));
    let state = Recorder {
        priority: 1,
        log: recording(&log),
    };
    let recorder = rt
        .spawner()
        .group(&group)
        .principal(low.clone())
        .spawn(state);
    for _ in 0..LOW_MESSAGES {
        recorder.post(Note).unwrap();
    }
    let high_before = high.handled();
    wait_until("the low-priority process to handle its messages", || {
        low.handled() >= LOW_MESSAGES
    });
    // High-priority work kept running meanwhile: low got its turns while high was saturated.
    assert!(
        high.handled() > high_before,
        "the high-priority flood stopped while low ran: {} then {}",
        high_before,
        high.handled()
    );
    stop.store(true, SeqCst);
    rt.block_until_idle();
    assert_eq!(log.lock().unwrap().len() as u64, LOW_MESSAGES);
    let describe = group.stats().scheduler;
    assert!(describe.starts_with("priority: round"), "{describe}");
}

/// A last-in-first-out stack of ready processes: a minimal custom scheduler.
#[derive(Default)]
struct Lifo {
    stack: Mutex<Vec<Ready>>,
    pushed: AtomicUsize,
}

impl Scheduler for Lifo {
    fn push(&self, ready: Ready) {
        self.pushed.fetch_add(1, SeqCst);
        self.stack.lock().unwrap().push(ready);
    }

    fn pop(&self, _worker: usize) -> Option<Ready> {
        self.stack.lock().unwrap().pop()
    }

    fn len(&self) -> usize {
        self.stack.lock().unwrap().len()
    }

    fn describe(&self) -> String {
        format!(
            "lifo: {} queued, {} pushed",
            self.len(),
            self.pushed.load(SeqCst)
        )
    }
}

/// Shares its pushes counter with the test (the group owns the scheduler itself).
struct CountingLifo {
    inner: Lifo,
    pushes: Arc<AtomicUsize>,
}

impl Scheduler for CountingLifo {
    fn push(&self, ready: Ready) {
        self.pushes.fetch_add(1, SeqCst);
        self.inner.push(ready);
    }

    fn pop(&self, worker: usize) -> Option<Ready> {
        self.inner.pop(worker)
    }

    fn len(&self) -> usize {
        self.inner.len()
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }
}

#[test]
fn a_custom_scheduler_runs_every_message() {
    const PROCESSES: usize = 8;
    const MESSAGES: usize = 25;
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let pushes = Arc::new(AtomicUsize::new(0));
    let scheduler = CountingLifo {
        inner: Lifo::default(),
        pushes: Arc::clone(&pushes),
    };
    let group = rt
        .group("lifo")
        .threads(2)
        .budget(4)
        .scheduler(scheduler)
        .build()
        .expect("build group");
    let log = Arc::new(Mutex::new(Vec::new()));
    let recorders: Vec<_> = (0..PROCESSES)
        .map(|_| {
            let state = Recorder {
                priority: 0,
                log: recording(&log),
            };
            rt.spawner().group(&group).spawn(state)
        })
        .collect();
    for _ in 0..MESSAGES {
        for r in &recorders {
            r.post(Note).unwrap();
        }
    }
    assert!(
        rt.block_until_idle_timeout(common::HANG_GUARD),
        "block_until_idle did not return with a custom scheduler: {:?}",
        group.stats()
    );
    assert_eq!(log.lock().unwrap().len(), PROCESSES * MESSAGES);
    let counts = group.counts();
    common::assert_balanced(&counts);
    assert_eq!(counts.handled, (PROCESSES * MESSAGES) as u64);
    assert!(
        pushes.load(SeqCst) >= PROCESSES,
        "the processes did not go through the custom scheduler"
    );
    let stats = group.stats();
    assert!(
        stats.scheduler.starts_with("lifo: 0 queued"),
        "{}",
        stats.scheduler
    );
}

/// A broken scheduler: it drops every process it is given instead of queueing it.
struct Forgetful;

impl Scheduler for Forgetful {
    fn push(&self, ready: Ready) {
        drop(ready);
    }

    fn pop(&self, _: usize) -> Option<Ready> {
        None
    }

    fn len(&self) -> usize {
        0
    }

    fn describe(&self) -> String {
        "forgetful".into()
    }
}

/// Tells the test when it terminates.
struct Mortal {
    terminated: ToTest<()>,
}

// SAFETY: the only field is `Isolated` (asserted above): a channel to the test thread held as
// a `SharedClient` (a test instrument, see `common::to_test`). The message carries no data
// (I8).
unsafe impl Process for Mortal {
    type Message = Tick;

    fn handle(&mut self, _: Tick, _: &mut Ctx<Self>) -> Result<(), Failure> {
        Ok(())
    }

    fn terminated(&mut self, _: &whirl_runtime::ExitReason) {
        let _ = self.terminated.send(());
    }
}

impl Handles<Tick> for Mortal {
    fn into_message(msg: Tick) -> Tick {
        msg
    }
}

#[test]
fn a_ready_process_a_scheduler_drops_is_terminated_not_lost() {
    let (rt, dead) = common::runtime_with_dead_letters(1);
    let group = rt
        .group("forgetful")
        .threads(1)
        .scheduler(Forgetful)
        .build()
        .expect("build group");
    let (tx, rx) = mpsc::channel();
    // Its start is dropped by the scheduler: the process is terminated on the spot, its hook
    // runs, and posts to it are refused from then on.
    let mortal = rt.spawner().group(&group).spawn(Mortal {
        terminated: to_test(&tx),
    });
    common::recv(&rx);
    assert!(mortal.is_terminated());
    assert!(
        mortal.post(Tick).is_err(),
        "a terminated process refuses posts"
    );
    assert_eq!(
        dead.len(),
        0,
        "nothing was queued, so nothing is dead-lettered"
    );
    rt.shutdown_graceful();
}
