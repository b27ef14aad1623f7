//! Model-checked tests of the runtime's lock-free protocols, run with
//! `RUSTFLAGS="--cfg loom" cargo test -p whirl-runtime --lib --release loom`.
//!
//! Loom explores every interleaving (and every weak-memory outcome it models) of a few
//! threads, so the scenarios are small: two or three messages, two or three threads. Under
//! loom a block holds two messages, so the pushes also cross block boundaries.

use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use loom::sync::Arc;
use loom::thread;

/// Loom runs model threads on small generator stacks; the tracked atomics need more.
fn spawn(f: impl FnOnce() + Send + 'static) -> thread::JoinHandle<()> {
    thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(f)
        .expect("loom thread")
}

use crate::group::Parker;
use crate::group::{Idle, SleepDecision};
use crate::process::{AfterPush, AfterRelease, Mailbox, Suspend};

/// What happened to each message: handled by the token holder, or dead-lettered.
#[derive(Default)]
struct Outcomes {
    handled: AtomicUsize,
    dead: AtomicUsize,
    turns_running: AtomicUsize,
}

/// Runs turns of a process the caller holds the token of, the way a worker would: pop
/// everything, release, and go again if the release says so. Asserts exclusivity.
fn run_turns(mb: &Mailbox<u32>, out: &Outcomes) {
    loop {
        assert_eq!(
            out.turns_running.fetch_add(1, SeqCst),
            0,
            "two turns at once"
        );
        // SAFETY: the caller holds the token (it got Schedule or Reschedule). (I9)
        while unsafe { mb.pop() }.is_some() {
            out.handled.fetch_add(1, SeqCst);
        }
        out.turns_running.fetch_sub(1, SeqCst);
        // SAFETY: as above. (I9)
        match unsafe { mb.release() } {
            AfterRelease::Idle => return,
            AfterRelease::Reschedule => continue,
        }
    }
}

fn idle_mailbox() -> Mailbox<u32> {
    let mb = Mailbox::new_scheduled();
    // SAFETY: a new mailbox's token belongs to its creator. (I9)
    assert_eq!(unsafe { mb.release() }, AfterRelease::Idle);
    mb
}

/// Post vs. run: two producers race with the token holder releasing; every message is
/// handled exactly once and never on two threads at once.
#[test]
fn loom_post_vs_run_never_strands_a_message() {
    const PRODUCERS: u32 = 2;
    const PER_PRODUCER: u32 = 2;
    // Spin-waits (a consumer meeting a reserved-but-unwritten slot, a producer meeting a
    // block being linked) yield to loom, which needs more branches than the default.
    let mut model = loom::model::Builder::new();
    model.max_branches = 100_000;

    model.check(|| {
        let mb = Arc::new(idle_mailbox());
        let out = Arc::new(Outcomes::default());
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|p| {
                let (mb, out) = (Arc::clone(&mb), Arc::clone(&out));
                spawn(move || {
                    for i in 0..PER_PRODUCER {
                        if mb.push(p * 10 + i, 0) == AfterPush::Schedule {
                            run_turns(&mb, &out);
                        }
                    }
                })
            })
            .collect();
        for p in producers {
            p.join().unwrap();
        }
        assert_eq!(
            out.handled.load(SeqCst),
            (PRODUCERS * PER_PRODUCER) as usize
        );
    });
}

/// Post vs. terminate: a message either comes back to its sender (closed seen before the
/// push) or reaches the dead letters (drained by the terminator or by the late producer).
#[test]
fn loom_post_vs_terminate_accounts_for_every_message() {
    loom::model(|| {
        let mb = Arc::new(Mailbox::<u32>::new_scheduled());
        let out = Arc::new(Outcomes::default());
        let returned = Arc::new(AtomicUsize::new(0));

        let producer = {
            let (mb, out, returned) = (Arc::clone(&mb), Arc::clone(&out), Arc::clone(&returned));
            spawn(move || {
                for i in 0..2 {
                    if mb.is_closed() {
                        returned.fetch_add(1, SeqCst);
                        continue;
                    }
                    match mb.push(i, 0) {
                        AfterPush::Nothing => {}
                        // SAFETY: Drain means we took the token of a closed mailbox (I9).
                        AfterPush::Drain => unsafe {
                            mb.drain_closed(|_, _| {
                                out.dead.fetch_add(1, SeqCst);
                            })
                        },
                        AfterPush::Schedule => unreachable!("the terminator closes first"),
                        AfterPush::Moved => unreachable!("the mailbox is closed, not moved"),
                    }
                }
            })
        };
        // The creator holds the token: it terminates the process.
        // SAFETY: token held since creation. (I9)
        unsafe {
            mb.close();
            mb.drain_closed(|_, _| {
                out.dead.fetch_add(1, SeqCst);
            });
        }
        producer.join().unwrap();
        assert_eq!(out.dead.load(SeqCst) + returned.load(SeqCst), 2);
    });
}

/// Kill vs. release: a kill request that races with the token holder going idle is never
/// lost: someone ends up holding the token with the kill visible.
#[test]
fn loom_kill_vs_release_is_seen() {
    loom::model(|| {
        let mb = Arc::new(Mailbox::<u32>::new_scheduled());
        let seen = Arc::new(AtomicUsize::new(0));
        let killer = {
            let (mb, seen) = (Arc::clone(&mb), Arc::clone(&seen));
            spawn(move || {
                if mb.request_kill() == AfterPush::Schedule {
                    assert!(mb.kill_requested());
                    seen.fetch_add(1, SeqCst);
                }
            })
        };
        // SAFETY: token held since creation. (I9)
        if unsafe { mb.release() } == AfterRelease::Reschedule {
            assert!(mb.kill_requested());
            seen.fetch_add(1, SeqCst);
        } else if mb.kill_requested() {
            // The kill landed before our release cleared the token; whoever holds it now
            // acts on it. If the killer's fetch_or saw our token, the re-check in release
            // must have taken it back.
        }
        killer.join().unwrap();
        assert!(mb.kill_requested());
        assert_eq!(seen.load(SeqCst), 1, "exactly one party acts on the kill");
    });
}

/// An async handler's future returns `Pending` while its waker fires and a kill request
/// arrives, in every order: exactly one party ends up holding the token to run the process
/// again (the poller, resumed; the waker; or the killer), never two, never none; and a process
/// that runs again sees the kill.
#[test]
fn loom_suspend_vs_wake_vs_kill_resumes_exactly_once() {
    loom::model(|| {
        let mb = Arc::new(Mailbox::<u32>::new_scheduled());
        let owners = Arc::new(AtomicUsize::new(0));
        // The holder is about to poll the future.
        mb.begin_poll();
        let waker = {
            let (mb, owners) = (Arc::clone(&mb), Arc::clone(&owners));
            spawn(move || {
                if mb.wake() {
                    owners.fetch_add(1, SeqCst);
                }
            })
        };
        let killer = {
            let (mb, owners) = (Arc::clone(&mb), Arc::clone(&owners));
            spawn(move || {
                if mb.request_kill() == AfterPush::Schedule {
                    owners.fetch_add(1, SeqCst);
                }
            })
        };
        // The future returned `Pending`.
        if mb.suspend() == Suspend::Resumed {
            owners.fetch_add(1, SeqCst);
        }
        waker.join().unwrap();
        killer.join().unwrap();
        assert_eq!(
            owners.load(SeqCst),
            1,
            "exactly one party resumes the process"
        );
        assert!(mb.kill_requested());
    });
}

/// A waker that fires while nobody is suspended (the future already completed, the process
/// went idle) takes nothing: a post afterwards schedules the process as usual.
#[test]
fn loom_stale_wake_takes_no_token() {
    loom::model(|| {
        let mb = Arc::new(idle_mailbox());
        let waker = {
            let mb = Arc::clone(&mb);
            spawn(move || assert!(!mb.wake()))
        };
        let scheduled = mb.push(1, 0) == AfterPush::Schedule;
        waker.join().unwrap();
        assert!(scheduled, "the post takes the idle token");
    });
}

/// A worker in miniature, following the real protocol of `worker.rs`: search (take a task
/// from the shared count), else prepare to sleep, re-check, and park until woken; it returns
/// after taking one task.
fn take_one_task(idle: &Idle, tasks: &AtomicUsize, parker: &Parker, index: usize) {
    idle.start_searching();
    loop {
        if tasks
            .fetch_update(SeqCst, SeqCst, |n| n.checked_sub(1))
            .is_ok()
        {
            idle.stop_searching_found_work();
            return;
        }
        if idle.prepare_to_sleep(index, || tasks.load(SeqCst) > 0) == SleepDecision::Park {
            loop {
                parker.park(None);
                if !idle.is_sleeping(index) {
                    break;
                }
            }
        }
    }
}

/// Starts `workers` miniature workers, publishes one task per worker from the model's main
/// thread, and checks every task is taken. Loom reports a deadlock if a worker could sleep
/// through a task meant for it.
fn publish_tasks_to_sleeping_workers(workers: usize) {
    loom::model(move || {
        let idle = Arc::new(Idle::new());
        let tasks = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..workers)
            .map(|index| {
                let (parker, unparker) = Parker::new();
                idle.register(index, unparker);
                let (idle, tasks) = (Arc::clone(&idle), Arc::clone(&tasks));
                spawn(move || take_one_task(&idle, &tasks, &parker, index))
            })
            .collect();
        for _ in 0..workers {
            tasks.fetch_add(1, SeqCst);
            idle.notify_one();
        }
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(tasks.load(SeqCst), 0);
    });
}

/// The park/unpark protocol: a worker that finds no work goes to sleep while a notifier
/// publishes a task.
#[test]
fn loom_no_lost_wakeup() {
    publish_tasks_to_sleeping_workers(1);
}

/// Two sleepers, two tasks: both get taken.
#[test]
fn loom_two_workers_two_tasks() {
    publish_tasks_to_sleeping_workers(2);
}

/// `Pool::try_retire` in miniature: count a worker out while the pool is above its target.
fn try_retire(live: &AtomicUsize, target: &AtomicUsize) -> bool {
    live.fetch_update(SeqCst, SeqCst, |n| (n > target.load(SeqCst)).then(|| n - 1))
        .is_ok()
}

/// A miniature worker that also retires when the pool is too big, as `WorkerThread::search`
/// does: take a task, or retire, or sleep with both conditions re-checked.
fn take_a_task_or_retire(
    idle: &Idle,
    tasks: &AtomicUsize,
    (live, target): (&AtomicUsize, &AtomicUsize),
    parker: &Parker,
    index: usize,
) {
    idle.start_searching();
    loop {
        if tasks
            .fetch_update(SeqCst, SeqCst, |n| n.checked_sub(1))
            .is_ok()
        {
            idle.stop_searching_found_work();
            return;
        }
        if try_retire(live, target) {
            idle.stop_searching_retired();
            return;
        }
        let has_work = || tasks.load(SeqCst) > 0 || live.load(SeqCst) > target.load(SeqCst);
        if idle.prepare_to_sleep(index, has_work) == SleepDecision::Park {
            loop {
                parker.park(None);
                if !idle.is_sleeping(index) {
                    break;
                }
            }
        }
    }
}

/// Shrinking a pool of two idle workers to one while a task is published: one worker
/// retires, the other takes the task; neither sleeps forever (loom reports that as a
/// deadlock), and the task is not stranded.
#[test]
fn loom_shrink_while_publishing() {
    loom::model(|| {
        let idle = Arc::new(Idle::new());
        let tasks = Arc::new(AtomicUsize::new(0));
        let live = Arc::new(AtomicUsize::new(2));
        let target = Arc::new(AtomicUsize::new(2));
        let handles: Vec<_> = (0..2)
            .map(|index| {
                let (parker, unparker) = Parker::new();
                idle.register(index, unparker);
                let (idle, tasks) = (Arc::clone(&idle), Arc::clone(&tasks));
                let (live, target) = (Arc::clone(&live), Arc::clone(&target));
                spawn(move || {
                    take_a_task_or_retire(&idle, &tasks, (&live, &target), &parker, index)
                })
            })
            .collect();
        // `GroupShared::resize`: lower the target, wake the sleepers.
        target.store(1, SeqCst);
        idle.notify_all();
        tasks.fetch_add(1, SeqCst);
        idle.notify_one();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(tasks.load(SeqCst), 0, "the task was taken");
        assert_eq!(live.load(SeqCst), 1, "exactly one worker retired");
    });
}

/// A process moving to another group (`process/relocate.rs`) while a producer posts two
/// messages, the second through the forwarding path if it finds the mailbox closed: both
/// arrive at the new cell exactly once and in order. What keeps the order is that the
/// forwarding path takes the old mailbox's token and passes on what is queued there before it
/// sends anything straight to the new cell (without that step this model fails with
/// `[1, 0]`); a message that races with the close is passed on by the mover's draining loop or
/// by the producer itself (`AfterPush::Drain` / `AfterPush::Moved`).
#[test]
fn loom_move_keeps_a_senders_order() {
    use loom::sync::Mutex;

    fn settle(mb: &Mailbox<u32>, next: &Mutex<Vec<u32>>) {
        while !mb.try_take() {
            thread::yield_now();
        }
        // SAFETY: we took the token of a closed mailbox (the only holders once it is moved
        // are those passing messages on). (I9)
        unsafe { mb.drain_closed(|m, _| next.lock().unwrap().push(m)) };
    }

    loom::model(|| {
        let mb = Arc::new(Mailbox::<u32>::new_scheduled());
        let next = Arc::new(Mutex::new(Vec::new()));
        let producer = {
            let (mb, next) = (Arc::clone(&mb), Arc::clone(&next));
            spawn(move || {
                for v in 0..2 {
                    if mb.is_closed() {
                        // `post_closed`: pass on what is queued, then send straight on.
                        settle(&mb, &next);
                        next.lock().unwrap().push(v);
                        continue;
                    }
                    match mb.push(v, 0) {
                        AfterPush::Nothing => {}
                        AfterPush::Moved => settle(&mb, &next),
                        // SAFETY: Drain means we took the token of a closed mailbox. (I9)
                        AfterPush::Drain => unsafe {
                            mb.drain_closed(|m, _| next.lock().unwrap().push(m))
                        },
                        AfterPush::Schedule => unreachable!("the mover holds the token"),
                    }
                }
            })
        };
        // The mover holds the token (since creation): it closes the mailbox as moved, passes
        // the queue on, and releases, passing on what slipped in.
        // SAFETY: token held since creation. (I9)
        unsafe {
            mb.close_moved();
            while let Some((m, _)) = mb.pop_with_meta() {
                next.lock().unwrap().push(m);
            }
            mb.drain_closed(|m, _| next.lock().unwrap().push(m));
        }
        producer.join().unwrap();
        assert_eq!(*next.lock().unwrap(), vec![0, 1]);
    });
}
