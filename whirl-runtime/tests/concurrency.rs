//! Concurrency controllers on a live runtime: pools that grow under blocking load and shrink
//! when idle, admission control that waits for the pool, a panicking controller, and the
//! batching controller moving the run budget.
//!
//! Handlers sleep or wait on gates only to create load; every check waits for something to
//! happen within a generous deadline, never for a clock to say how fast it happened.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;
use whirl_runtime::request::Sender as _;

use whirl_runtime::admission::QueueLength;
use whirl_runtime::control::{
    AdaptiveConcurrency, Adjustment, ConcurrencyController, ControllerState, GroupSample,
    SedaBatching, SedaThreadPool,
};
use whirl_runtime::{
    Addr, Ctx, Failure, Group, Handles, Isolated, Message, PostError, Process, ReplyTo, Runtime,
    SharedClient,
};

use common::{assert_isolated, flag, wait_until, Gate};

/// A process whose handler blocks its worker: it sleeps, or waits on a gate.
struct Blocking;

enum Block {
    Sleep(Duration),
    Wait(SharedClient<Gate>),
}

const _: () = {
    // Never called: naming the instances makes the compiler check each field's type.
    let _ = assert_isolated::<Duration>;
    let _ = assert_isolated::<SharedClient<Gate>>;
    let _ = assert_isolated::<SharedClient<Arc<AtomicBool>>>;
};

// SAFETY: every field is `Isolated` (asserted above): a duration, or a gate the test thread
// opens to hold a worker, held as a `SharedClient` (a test instrument, see `common::gate`).
unsafe impl Isolated for Block {}
impl Message for Block {}

// SAFETY: no state; the message is a `Block` (above).
unsafe impl Process for Blocking {
    type Message = Block;

    fn handle(&mut self, msg: Block, _: &mut Ctx<Self>) -> Result<(), Failure> {
        match msg {
            Block::Sleep(d) => std::thread::sleep(d),
            Block::Wait(gate) => gate.wait(),
        }
        Ok(())
    }
}

impl Handles<Block> for Blocking {
    fn into_message(msg: Block) -> Block {
        msg
    }
}

/// Answers pings: the liveness probe in another group.
struct Echo;

struct Ping(ReplyTo<u64>, u64);

// SAFETY: a number and a reply handle for a number.
unsafe impl Isolated for Ping {}
impl Message for Ping {}

// SAFETY: no state; the message is a `Ping` (above).
unsafe impl Process for Echo {
    type Message = Ping;

    fn handle(&mut self, Ping(reply, n): Ping, _: &mut Ctx<Self>) -> Result<(), Failure> {
        let _ = reply.send(n);
        Ok(())
    }
}

impl Handles<Ping> for Echo {
    fn into_message(msg: Ping) -> Ping {
        msg
    }
}

/// Keeps itself busy: each message posts the next one unless stopped.
struct Busy {
    stop: SharedClient<Arc<AtomicBool>>,
}

struct Again;
// SAFETY: no data.
unsafe impl Isolated for Again {}
impl Message for Again {}

// SAFETY: the only field is `Isolated` (asserted above): `stop`, a flag the test thread sets to
// end the load, held as a `SharedClient` (a test instrument, see `common::flag`). The message
// carries no data.
unsafe impl Process for Busy {
    type Message = Again;

    fn handle(&mut self, _: Again, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        if !self.stop.load(SeqCst) {
            let _ = ctx.myself().post(Again);
        }
        Ok(())
    }
}

impl Handles<Again> for Busy {
    fn into_message(msg: Again) -> Again {
        msg
    }
}

/// A ping answered within the hang guard: the fast group is alive.
#[track_caller]
fn ping(echo: &Addr<Echo>, n: u64) {
    let answer = echo
        .request_with(|reply| Ping(reply, n))
        .timeout(common::HANG_GUARD)
        .call();
    assert_eq!(
        answer.ok(),
        Some(n),
        "the fast group did not answer while another group was saturated"
    );
}

const MESSAGES_EACH: u64 = 20;

/// Floods `blocking` with sleeping handlers while pinging `fast`; waits until the blocking
/// group reaches its maximum of 4 threads, then until it drains and shrinks below 4.
fn grows_under_blocking_load_and_shrinks(rt: &Runtime, blocking: &Group) {
    let fast = rt.group("fast").threads(1).build().expect("build group");
    let echo = rt.spawner().group(&fast).spawn(Echo);
    assert_eq!(
        blocking.threads(),
        1,
        "a ranged group starts at its minimum"
    );

    let sleepers: Vec<_> = (0..8)
        .map(|_| rt.spawner().group(blocking).spawn(Blocking))
        .collect();
    // 160 messages: more than the adaptive controller's default backlog threshold (100), for
    // long enough that the pool can grow while the workers are all asleep in handlers.
    for _ in 0..MESSAGES_EACH {
        for s in &sleepers {
            s.post(Block::Sleep(Duration::from_millis(50))).unwrap();
        }
    }
    let mut pings = 0;
    wait_until("the blocking group to grow to 4 threads", || {
        pings += 1;
        ping(&echo, pings);
        blocking.threads() == 4
    });
    // The fast group's single worker answered every ping (`ping` checks each answer).
    assert!(pings >= 1);
    assert!(
        blocking.counts().queued() > 0,
        "the blocking group grew only after its work was done: {:?}",
        blocking.stats()
    );

    wait_until("the blocking work to drain", || {
        ping(&echo, 0);
        blocking.counts().queued() == 0
    });
    wait_until("the idle blocking group to shrink", || {
        blocking.threads() < 4
    });
    let stats = blocking.stats();
    assert_eq!(stats.counts.handled, 8 * MESSAGES_EACH, "{stats:?}");
    assert_eq!(stats.thread_range, (1, 4));
}

#[test]
fn a_blocking_group_grows_and_does_not_stall_others() {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let blocking = rt
        .group("blocking")
        .threads(1..=4)
        .controller(AdaptiveConcurrency::default().period(Duration::from_millis(20)))
        .build()
        .expect("build group");
    grows_under_blocking_load_and_shrinks(&rt, &blocking);
    // The adaptive controller keeps shrinking an idle group, one thread per period.
    wait_until("the idle blocking group to shrink back to 1 thread", || {
        blocking.threads() == 1
    });
    let controllers = blocking.stats().controllers;
    assert_eq!(controllers.len(), 1, "{controllers:?}");
    assert_eq!(controllers[0].name, "adaptive");
}

#[test]
fn a_shared_groups_concurrency_limit_grows_and_shrinks() {
    // Four shared workers; the blocking group may use one to four of them at once.
    let rt = Runtime::builder()
        .threads(4)
        .build()
        .expect("the runtime starts");
    let blocking = rt
        .group("blocking")
        .concurrency(1..=4)
        .controller(AdaptiveConcurrency::default().period(Duration::from_millis(20)))
        .build()
        .expect("build group");
    assert!(!blocking.is_dedicated());
    grows_under_blocking_load_and_shrinks(&rt, &blocking);
    wait_until("the idle group's limit to shrink back to 1", || {
        blocking.threads() == 1
    });
}

#[test]
fn seda_pool_grows_with_a_backlog() {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let pool = SedaThreadPool::new()
        .period(Duration::from_millis(20))
        .queue_threshold(5)
        .idle_timeout(Duration::from_millis(100))
        // Throughput over 20 ms periods of 50 ms handlers is noise; this test is about the
        // queue threshold and idle removal.
        .thrashing_detection(false);
    let blocking = rt
        .group("blocking")
        .threads(1..=4)
        .controller(pool)
        .build()
        .expect("build group");
    grows_under_blocking_load_and_shrinks(&rt, &blocking);
    wait_until("the idle blocking group to shrink back to 1 thread", || {
        blocking.threads() == 1
    });
    assert_eq!(blocking.stats().controllers[0].name, "seda-thread-pool");
}

#[test]
fn admission_waits_for_the_pool_to_reach_its_maximum() {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");

    // A pool that can still grow (its controller is too slow to act during this phase):
    // the predicate, which would reject everything, stands down.
    let growable = rt
        .group("growable")
        .threads(1..=2)
        .controller(AdaptiveConcurrency::default().period(Duration::from_secs(3600)))
        .predicate(QueueLength::max(0))
        .build()
        .expect("build group");
    assert!(!growable.stats().admission_active);
    let p = rt.spawner().group(&growable).spawn(Blocking);
    for _ in 0..3 {
        p.post(Block::Sleep(Duration::ZERO))
            .expect("admitted while the pool can grow");
    }
    rt.block_until_idle();
    assert_eq!(growable.counts().rejected, 0);
    assert_eq!(growable.counts().handled, 3);

    // A fixed pool: the same predicate decides at once.
    let fixed = rt
        .group("fixed")
        .threads(1)
        .predicate(QueueLength::max(0))
        .build()
        .expect("build group");
    assert!(fixed.stats().admission_active);
    let q = rt.spawner().group(&fixed).spawn(Blocking);
    match q.post(Block::Sleep(Duration::ZERO)) {
        Err(PostError::Rejected(_)) => {}
        other => panic!(
            "a fixed pool's predicate should reject: {:?}",
            other.is_ok()
        ),
    }
    assert_eq!(fixed.counts().rejected, 1);

    // A pool whose controller grows it to the maximum: then the predicate decides.
    let growing = rt
        .group("growing")
        .threads(1..=2)
        .controller(
            AdaptiveConcurrency::default()
                .period(Duration::from_millis(20))
                .queue_length_threshold(0),
        )
        .predicate(QueueLength::max(0))
        .build()
        .expect("build group");
    assert!(!growing.stats().admission_active);
    let gate = Gate::new();
    let held: Vec<_> = (0..3)
        .map(|_| rt.spawner().group(&growing).spawn(Blocking))
        .collect();
    for h in &held {
        h.post(Block::Wait(common::gate(&gate)))
            .expect("admitted while the pool can grow");
    }
    wait_until("the blocked pool to grow to its maximum", || {
        growing.threads() == 2
    });
    wait_until("admission control to take over at the maximum", || {
        growing.stats().admission_active
    });
    match held[0].post(Block::Sleep(Duration::ZERO)) {
        Err(PostError::Rejected(_)) => {}
        other => panic!(
            "at the maximum the predicate should reject: {:?} {:?}",
            other.is_ok(),
            growing.stats()
        ),
    }
    gate.open();
    rt.block_until_idle();
    // Idle again, the pool shrinks and admission control stands down.
    wait_until(
        "admission control to stand down as the pool shrinks",
        || !growing.stats().admission_active,
    );
    assert_eq!(growing.counts().handled, 3);
    assert_eq!(growing.counts().rejected, 1);
}

/// A thread controller that panics in `adjust` once armed.
struct Panicky {
    armed: Arc<AtomicBool>,
    calls: Arc<AtomicUsize>,
}

impl ConcurrencyController for Panicky {
    fn period(&self) -> Duration {
        Duration::from_millis(10)
    }

    fn adjust(&mut self, _: &GroupSample) -> Adjustment {
        self.calls.fetch_add(1, SeqCst);
        if self.armed.load(SeqCst) {
            panic!("[expected] this controller panics");
        }
        Adjustment::NONE
    }

    fn describe(&self) -> ControllerState {
        ControllerState::new("panicky", String::new())
    }
}

#[test]
fn a_panicking_controller_is_removed() {
    common::quiet_expected_panics();
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let armed = Arc::new(AtomicBool::new(false));
    let calls = Arc::new(AtomicUsize::new(0));
    let group = rt
        .group("panicky")
        .threads(1..=2)
        .controller(Panicky {
            armed: Arc::clone(&armed),
            calls: Arc::clone(&calls),
        })
        .controller(SedaBatching::new().period(Duration::from_secs(3600)))
        .build()
        .expect("build group");
    let names =
        |g: &Group| -> Vec<&'static str> { g.stats().controllers.iter().map(|c| c.name).collect() };
    wait_until("the controller to be consulted", || calls.load(SeqCst) >= 1);
    assert_eq!(names(&group), ["panicky", "seda-batching"]);

    armed.store(true, SeqCst);
    wait_until("the panicking controller to be removed", || {
        names(&group) == ["seda-batching"]
    });
    let calls_at_removal = calls.load(SeqCst);

    // The group keeps working, and the controller is not consulted again.
    let p = rt.spawner().group(&group).spawn(Blocking);
    for _ in 0..10 {
        p.post(Block::Sleep(Duration::ZERO)).unwrap();
    }
    rt.block_until_idle();
    assert_eq!(group.counts().handled, 10);
    let echo = rt.spawner().group(&group).spawn(Echo);
    ping(&echo, 7);
    assert_eq!(calls.load(SeqCst), calls_at_removal);
    assert_eq!(names(&group), ["seda-batching"]);
}

#[test]
fn batching_controller_changes_the_budget() {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let group = rt
        .group("batched")
        .threads(1)
        .controller(SedaBatching::new().period(Duration::from_millis(20)))
        .build()
        .expect("build group");
    let initial = group.budget();
    assert_eq!(initial, whirl_runtime::DEFAULT_BUDGET);
    let stop = Arc::new(AtomicBool::new(false));
    for _ in 0..2 {
        let busy = rt.spawner().group(&group).spawn(Busy { stop: flag(&stop) });
        busy.post(Again).unwrap();
    }
    wait_until("the batching controller to change the budget", || {
        group.budget() != initial
    });
    let stats = group.stats();
    assert_eq!(stats.controllers[0].name, "seda-batching");
    assert!(
        stats.controllers[0].detail.starts_with("budget "),
        "{:?}",
        stats.controllers
    );
    assert!(group.counts().handled > 0);
    stop.store(true, SeqCst);
    rt.block_until_idle();
}
