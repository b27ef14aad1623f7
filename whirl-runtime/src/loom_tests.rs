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

use crate::idle::{Idle, SleepDecision};
use crate::mailbox::{AfterPush, AfterRelease, Mailbox};
use crate::park::Parker;

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
        // SAFETY: the caller holds the token (it got Schedule or Reschedule).
        while unsafe { mb.pop() }.is_some() {
            out.handled.fetch_add(1, SeqCst);
        }
        out.turns_running.fetch_sub(1, SeqCst);
        // SAFETY: as above.
        match unsafe { mb.release() } {
            AfterRelease::Idle => return,
            AfterRelease::Reschedule => continue,
        }
    }
}

fn idle_mailbox() -> Mailbox<u32> {
    let mb = Mailbox::new_scheduled();
    // SAFETY: a new mailbox's token belongs to its creator.
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
                        if mb.push(p * 10 + i) == AfterPush::Schedule {
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
                    match mb.push(i) {
                        AfterPush::Nothing => {}
                        AfterPush::Drain => unsafe {
                            // SAFETY: Drain means we took the token of a closed mailbox.
                            mb.drain_closed(|_| {
                                out.dead.fetch_add(1, SeqCst);
                            })
                        },
                        AfterPush::Schedule => unreachable!("the terminator closes first"),
                    }
                }
            })
        };
        // The creator holds the token: it terminates the process.
        // SAFETY: token held since creation.
        unsafe {
            mb.close();
            mb.drain_closed(|_| {
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
        // SAFETY: token held since creation.
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

/// The park/unpark protocol: a worker that finds no work goes to sleep while a notifier
/// publishes a task. Loom reports a deadlock if the worker could sleep through it.
#[test]
fn loom_no_lost_wakeup() {
    loom::model(|| {
        let idle = Arc::new(Idle::new());
        let tasks = Arc::new(AtomicUsize::new(0));
        let (parker, unparker) = Parker::new();
        idle.register(0, unparker);

        let worker = {
            let (idle, tasks) = (Arc::clone(&idle), Arc::clone(&tasks));
            spawn(move || {
                idle.start_searching();
                loop {
                    if tasks
                        .fetch_update(SeqCst, SeqCst, |n| n.checked_sub(1))
                        .is_ok()
                    {
                        idle.stop_searching_found_work();
                        return;
                    }
                    let decision = idle.prepare_to_sleep(0, || tasks.load(SeqCst) > 0);
                    if decision == SleepDecision::Park {
                        loop {
                            parker.park(None);
                            if !idle.is_sleeping(0) {
                                break;
                            }
                        }
                    }
                }
            })
        };
        tasks.fetch_add(1, SeqCst);
        idle.notify_one();
        worker.join().unwrap();
        assert_eq!(tasks.load(SeqCst), 0);
    });
}

/// Two sleepers, two tasks from two notifiers: both tasks get taken.
#[test]
fn loom_two_workers_two_tasks() {
    loom::model(|| {
        let idle = Arc::new(Idle::new());
        let tasks = Arc::new(AtomicUsize::new(0));
        let mut workers = Vec::new();
        for index in 0..2 {
            let (parker, unparker) = Parker::new();
            idle.register(index, unparker);
            let (idle, tasks) = (Arc::clone(&idle), Arc::clone(&tasks));
            workers.push(spawn(move || {
                idle.start_searching();
                loop {
                    if tasks
                        .fetch_update(SeqCst, SeqCst, |n| n.checked_sub(1))
                        .is_ok()
                    {
                        idle.stop_searching_found_work();
                        return;
                    }
                    if idle.prepare_to_sleep(index, || tasks.load(SeqCst) > 0)
                        == SleepDecision::Park
                    {
                        loop {
                            parker.park(None);
                            if !idle.is_sleeping(index) {
                                break;
                            }
                        }
                    }
                }
            }));
        }
        for _ in 0..2 {
            tasks.fetch_add(1, SeqCst);
            idle.notify_one();
        }
        for w in workers {
            w.join().unwrap();
        }
        assert_eq!(tasks.load(SeqCst), 0);
    });
}
