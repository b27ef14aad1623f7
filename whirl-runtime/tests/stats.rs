//! Group and runtime statistics on a live runtime: counters, queue latency, handling time,
//! idle time, lock latency.
//!
//! Latency checks are lower bounds that follow from waits the test itself creates (a gate
//! held, a handler that sleeps, a lock held), so a slow machine only makes them easier to
//! meet. Statistics are published by workers from time to time, so checks poll for them with
//! a generous deadline.

mod common;

use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use whirl_runtime::request::Sender as _;

use whirl_runtime::{
    Addr, Ctx, Failure, Group, Handles, Isolated, Message, Principal, Process, Runtime,
    SharedClient,
};

use whirl_runtime::control::GroupStats;

use common::{assert_isolated, to_test, Gate, ToTest};

/// How long a wait for something to happen may take before the test fails.
const DEADLINE: Duration = Duration::from_secs(20);

/// Polls `group`'s statistics every 5 ms until `done` holds for them; fails with `what` (and
/// the last snapshot) after [`DEADLINE`]. Returns the snapshot that satisfied `done`.
#[track_caller]
fn wait_for_stats(group: &Group, what: &str, done: impl Fn(&GroupStats) -> bool) -> GroupStats {
    let start = Instant::now();
    loop {
        let stats = group.stats();
        if done(&stats) {
            return stats;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "timed out after {DEADLINE:?} waiting for {what}: {stats:#?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Does what each message says.
struct Worker;

enum Job {
    Nothing,
    Sleep(Duration),
    /// Tells the test it started, then waits for the gate.
    Hold(ToTest<()>, SharedClient<Gate>),
    /// Says it is about to take the lock, takes it through `Ctx::lock_timed`, then says it
    /// got it.
    Lock(SharedClient<Arc<Mutex<()>>>, ToTest<()>, ToTest<()>),
}

const _: () = {
    // Never called: naming the instances makes the compiler check each field's type.
    let _ = assert_isolated::<Duration>;
    let _ = assert_isolated::<ToTest<()>>;
    let _ = assert_isolated::<SharedClient<Gate>>;
    let _ = assert_isolated::<SharedClient<Arc<Mutex<()>>>>;
};

// SAFETY: every field is `Isolated` (asserted above): durations, and test instruments held as
// `SharedClient`s with the reason: channels to the test thread, a gate it opens, and the lock
// whose latency the test measures.
unsafe impl Isolated for Job {}
impl Message for Job {}

// SAFETY: no state at all; the messages are `Job`s (see above).
unsafe impl Process for Worker {
    type Message = Job;

    fn handle(&mut self, job: Job, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        match job {
            Job::Nothing => {}
            Job::Sleep(d) => std::thread::sleep(d),
            Job::Hold(entered, gate) => {
                let _ = entered.send(());
                gate.wait();
            }
            Job::Lock(lock, about, got) => {
                let _ = about.send(());
                let guard = ctx.lock_timed(|| lock.lock().unwrap_or_else(|p| p.into_inner()));
                drop(guard);
                let _ = got.send(());
            }
        }
        Ok(())
    }
}

impl Handles<Job> for Worker {
    fn into_message(msg: Job) -> Job {
        msg
    }
}

#[test]
fn counts_threads_and_scheduler_are_reported() {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let fixed = rt.group("fixed").threads(2).build().expect("build group");
    let ranged = rt
        .group("ranged")
        .threads(1..=3)
        .build()
        .expect("build group");
    let workers: Vec<_> = (0..4)
        .map(|_| rt.spawner().group(&fixed).spawn(Worker))
        .collect();
    for _ in 0..25 {
        for w in &workers {
            w.post(Job::Nothing).unwrap();
        }
    }
    rt.block_until_idle();

    let stats = fixed.stats();
    assert_eq!(stats.name, "fixed");
    assert_eq!(stats.counts, fixed.counts());
    assert_eq!(stats.counts.handled, 100);
    assert_eq!(stats.counts.spawned, 4);
    common::assert_balanced(&stats.counts);
    assert_eq!(stats.queue_length, 0);
    assert_eq!(stats.threads, 2);
    assert_eq!(stats.thread_range, (2, 2));
    assert_eq!(stats.scheduler, "work-stealing");
    assert_eq!(stats.budget, whirl_runtime::DEFAULT_BUDGET);
    assert!(stats.controllers.is_empty(), "{:?}", stats.controllers);
    assert!(
        !stats.admission_active,
        "no predicate, no admission control"
    );

    let stats = ranged.stats();
    assert_eq!(stats.thread_range, (1, 3));
    assert_eq!(
        stats.threads, 1,
        "a ranged group with nothing to do stays at its minimum"
    );
    assert_eq!(stats.scheduler, "work-stealing");
    // A range without a controller gets the adaptive one.
    assert_eq!(stats.controllers.len(), 1);
    assert_eq!(stats.controllers[0].name, "adaptive");
}

/// Holds the only worker with `holder` for `held` while `waiter` gets `messages` messages,
/// then releases it and waits until the runtime is idle.
fn hold_then_release(
    rt: &Runtime,
    holder: &Addr<Worker>,
    waiter: &Addr<Worker>,
    messages: usize,
    held: Duration,
) {
    let (entered_tx, entered) = mpsc::channel();
    let gate = Gate::new();
    holder
        .post(Job::Hold(to_test(&entered_tx), common::gate(&gate)))
        .unwrap();
    common::recv(&entered);
    // The only worker is held: these wait in the queue at least `held`.
    for _ in 0..messages {
        waiter.post(Job::Nothing).unwrap();
    }
    std::thread::sleep(held);
    gate.open();
    rt.block_until_idle();
}

/// Queue latency has 1 ms resolution from a coarse clock that may lag by about as much.
const QUEUE_LATENCY_SLACK: Duration = Duration::from_millis(3);

#[test]
fn queue_latency_is_measured_on_sampled_turns() {
    const HELD: Duration = Duration::from_millis(30);
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let group = rt
        .group("latency")
        .threads(1)
        .budget(1)
        .build()
        .expect("build group");
    let holder = rt.spawner().group(&group).spawn(Worker);
    let waiter = rt.spawner().group(&group).spawn(Worker);
    rt.block_until_idle();
    // Only some turns are sampled (one in `SAMPLE_EVERY`), so hold and release rounds of
    // one-message turns until samples show up; every held message waited at least `HELD`.
    let start = Instant::now();
    // (Workers publish what they recorded when they go idle, so a round's samples may show
    // only during the next.)
    let stats = loop {
        hold_then_release(&rt, &holder, &waiter, 50, HELD);
        let stats = group.stats();
        if stats.queue_latency.samples > 0 {
            break stats;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "no queue latency sampled within {DEADLINE:?} of held rounds: {stats:#?}"
        );
    };
    assert!(
        stats.queue_latency.max >= HELD - QUEUE_LATENCY_SLACK,
        "messages held for {HELD:?} reported a queue latency of at most {:?}",
        stats.queue_latency
    );
}

#[test]
fn queue_latency_is_measured_on_every_turn_of_a_principal() {
    const HELD: Duration = Duration::from_millis(30);
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let group = rt
        .group("latency")
        .threads(1)
        .budget(1)
        .build()
        .expect("build group");
    // Both serve principals: every one of their turns is timed and, as documented, has its
    // messages' queue latencies recorded, however few turns there are.
    let holder = rt
        .spawner()
        .group(&group)
        .principal(Principal::builder(1).build().expect("a valid principal"))
        .spawn(Worker);
    let waiter = rt
        .spawner()
        .group(&group)
        .principal(Principal::builder(2).build().expect("a valid principal"))
        .spawn(Worker);
    rt.block_until_idle();
    hold_then_release(&rt, &holder, &waiter, 3, HELD);
    let stats = wait_for_stats(&group, "queue latency samples", |s| {
        s.queue_latency.samples >= 3
    });
    assert!(
        stats.queue_latency.max >= HELD - QUEUE_LATENCY_SLACK,
        "messages held for {HELD:?} reported a queue latency of at most {:?}",
        stats.queue_latency
    );
}

#[test]
fn handling_time_and_principal_counts() {
    const N: u64 = 10;
    const SLEEP: Duration = Duration::from_millis(2);
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let group = rt
        .group("handling")
        .threads(1)
        .build()
        .expect("build group");
    let session = Principal::builder(42)
        .priority(3)
        .class(7)
        .build()
        .expect("a valid principal");
    let w = rt
        .spawner()
        .group(&group)
        .principal(session.clone())
        .spawn(Worker);
    for _ in 0..N {
        w.post(Job::Sleep(SLEEP)).unwrap();
    }
    rt.block_until_idle();
    assert_eq!(session.handled(), N);
    assert!(session.handling_time() >= SLEEP * N as u32);

    let stats = wait_for_stats(&group, "the principal's counts", |s| {
        s.principals.iter().map(|p| p.handled).sum::<u64>() >= N
    });
    assert!(stats.handling_time.samples > 0, "{:?}", stats.handling_time);
    assert!(
        stats.handling_time.p50 >= SLEEP,
        "handlers slept {SLEEP:?} each; median handling time {:?}",
        stats.handling_time.p50
    );
    assert_eq!(stats.principals.len(), 1, "{:?}", stats.principals);
    let p = &stats.principals[0];
    assert_eq!((p.id, p.priority, p.class), (42, 3, 7));
    assert_eq!(p.handled, N);
    assert!(p.handling_time >= SLEEP * N as u32, "{p:?}");
}

#[test]
fn idle_time_grows_while_there_is_nothing_to_do() {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let group = rt.group("idle").threads(1).build().expect("build group");
    let w = rt.spawner().group(&group).spawn(Worker);
    w.post(Job::Nothing).unwrap();
    rt.block_until_idle();
    let first = wait_for_stats(&group, "some idle time", |s| !s.idle_time.is_zero());
    // Idle time keeps accumulating while the group waits.
    wait_for_stats(&group, "idle time to grow", |s| {
        s.idle_time > first.idle_time
    });
}

#[test]
fn lock_waits_reported_by_handlers_are_measured() {
    const HELD: Duration = Duration::from_millis(40);
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let group = rt.group("locks").threads(1).build().expect("build group");
    let w = rt.spawner().group(&group).spawn(Worker);
    let lock = Arc::new(Mutex::new(()));
    let (about_tx, about) = mpsc::channel();
    let (got_tx, got) = mpsc::channel();
    {
        let _held = lock.lock().unwrap();
        let contended = SharedClient::new(
            Arc::clone(&lock),
            "test instrument: a lock the test thread holds, the contention whose latency \
             `Ctx::lock_timed` measures (the `shares_state` case it exists for)",
        );
        w.post(Job::Lock(contended, to_test(&about_tx), to_test(&got_tx)))
            .unwrap();
        // The handler is about to wait for the lock the test holds: keep it waiting.
        common::recv(&about);
        std::thread::sleep(HELD);
        assert!(
            got.try_recv().is_err(),
            "the handler took a lock the test holds"
        );
    }
    common::recv(&got);
    let stats = wait_for_stats(&group, "a lock wait", |s| s.lock_latency.samples >= 1);
    assert_eq!(stats.lock_latency.samples, 1, "{:?}", stats.lock_latency);
    // The handler began waiting just after it said so, and the lock was released `HELD`
    // after that; half of it leaves room for the handler being descheduled in between.
    assert!(
        stats.lock_latency.max >= HELD / 2,
        "the lock was held about {HELD:?} after the handler began waiting; reported {:?}",
        stats.lock_latency
    );
}

#[test]
fn runtime_stats_list_every_group_and_sum_counts() {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let a = rt.group("a").threads(1).build().expect("build group");
    let b = rt.group("b").threads(1).build().expect("build group");
    let posted = Arc::new(AtomicU64::new(0));
    for (group, n) in [(rt.default_group(), 3), (&a, 5), (&b, 7)] {
        let w = rt.spawner().group(group).spawn(Worker);
        for _ in 0..n {
            w.post(Job::Nothing).unwrap();
            posted.fetch_add(1, SeqCst);
        }
    }
    rt.block_until_idle();

    let stats = rt.stats();
    let names: Vec<&str> = stats.groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["default", "a", "b"]);
    let handled: Vec<u64> = stats.groups.iter().map(|g| g.counts.handled).collect();
    assert_eq!(handled, [3, 5, 7]);
    assert_eq!(stats.counts.handled, 15);
    assert_eq!(stats.counts.posted, posted.load(SeqCst));
    assert_eq!(stats.counts.spawned, 3);
    assert_eq!(stats.counts, rt.counts());
    assert_eq!(stats.live_processes, 3);
    common::assert_balanced(&stats.counts);
}

/// A quiet group gets latency figures for every turn, not one in 64: a new user saw `0
/// samples` after a thousand messages. Each message here arrives alone, a few milliseconds
/// after the last, so each is its own turn in its own millisecond.
#[test]
fn a_quiet_group_samples_every_turn() {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let quiet = rt.group("quiet").threads(1).build().expect("build group");
    let worker = rt.spawner().group(&quiet).spawn(Worker);
    const MESSAGES: u64 = 40;
    for _ in 0..MESSAGES {
        worker.post(Job::Nothing).unwrap();
        std::thread::sleep(Duration::from_millis(3));
    }
    rt.block_until_idle();
    let stats = wait_for_stats(&quiet, "a sample per message", |s| {
        s.queue_latency.samples == MESSAGES && s.handling_time.samples == MESSAGES
    });
    assert_eq!(stats.counts.handled, MESSAGES);
}

/// A process's start is a turn that handles no message; it must not use up the millisecond's
/// sample. Here each process starts, and its one long message comes within the same
/// millisecond or just after: every one of those messages is measured. (Before, the message's
/// turn went unsampled whenever it fell in its start's millisecond, and a group whose work
/// was one long message reported no handling time at all.)
#[test]
fn a_message_right_after_a_start_is_measured() {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let group = rt.group("starts").threads(1).build().expect("build group");
    const PROCESSES: u64 = 20;
    for _ in 0..PROCESSES {
        let worker = rt.spawner().group(&group).spawn(Worker);
        rt.block_until_idle();
        // Long enough for the shared clock to move on before the next process starts.
        worker
            .post(Job::Sleep(Duration::from_millis(20)))
            .expect("no predicate");
        rt.block_until_idle();
    }
    let stats = wait_for_stats(&group, "a sample per message", |s| {
        s.handling_time.samples == PROCESSES
    });
    assert_eq!(stats.counts.handled, PROCESSES);
}
