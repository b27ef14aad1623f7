//! Invariant I3 for terminated receivers: messages left in the inbox of a process that
//! terminates reach the dead-letter sink with the reason and the message itself; later posts
//! come back to the sender as `PostError::Terminated(msg)`. Nothing is lost, even when posts
//! race with the termination.

mod common;

use std::collections::BTreeSet;
use std::sync::mpsc::{self, Sender};
use std::thread;
use std::time::Duration;
use whirl_runtime::request::Sender as _;

use common::{assert_isolated, to_test, Gate, ToTest};
use whirl_runtime::{
    Addr, Ctx, DeadLetter, ExitReason, Failure, FailureKind, Handles, Isolated, Message, PostError,
    Process, ProcessId, SharedClient,
};

#[derive(Debug)]
enum Msg {
    Work(u32),
    /// Blocks on the gate, then ends the process as told.
    Hold(SharedClient<Gate>, Then),
    /// Posts these to itself, then ends the process as told.
    SelfPost(Vec<u32>, Then),
    /// Posts these to itself, then links to the given (already failed) process.
    SelfPostThenLink(Vec<u32>, Addr<Holder>),
}

#[derive(Debug, PartialEq, Clone, Copy)]
enum Then {
    Fail(&'static str),
    Complete,
    Panic,
}

/// A `Work` item posted on its own (becomes `Msg::Work`).
#[derive(Debug, PartialEq)]
struct Item(u32);

const _: () = {
    // Never called: naming the instances makes the compiler check each field's type.
    let _ = assert_isolated::<u32>;
    let _ = assert_isolated::<SharedClient<Gate>>;
    let _ = assert_isolated::<&'static str>;
    let _ = assert_isolated::<Vec<u32>>;
    let _ = assert_isolated::<Addr<Holder>>;
    let _ = assert_isolated::<ToTest<u32>>;
    let _ = assert_isolated::<Option<u32>>;
};

// SAFETY: every field is `Isolated` (asserted above): numbers, `&'static str`s (in `Then`, a
// `Copy` enum of them), vectors of numbers and a process address, and a gate the test thread
// opens to hold the process until it has a backlog, held as a `SharedClient` (a test
// instrument, see `common::gate`).
unsafe impl Isolated for Msg {}
impl Message for Msg {}
// SAFETY: a number.
unsafe impl Isolated for Item {}
impl Message for Item {}

/// Compares what the messages carry; a `Hold` equals nothing (a gate is not a value).
impl PartialEq for Msg {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Msg::Work(a), Msg::Work(b)) => a == b,
            (Msg::SelfPost(a, x), Msg::SelfPost(b, y)) => a == b && x == y,
            (Msg::SelfPostThenLink(a, x), Msg::SelfPostThenLink(b, y)) => a == b && x == y,
            _ => false,
        }
    }
}

/// Reports every `Work` it handles; fails after `fail_after` of them if set.
struct Holder {
    handled: ToTest<u32>,
    fail_after: Option<u32>,
    count: u32,
}

impl Holder {
    fn new(handled: &Sender<u32>) -> Self {
        Holder {
            handled: to_test(handled),
            fail_after: None,
            count: 0,
        }
    }
}

fn finish(then: Then, ctx: &mut Ctx<Holder>) -> Result<(), Failure> {
    match then {
        Then::Fail(reason) => Err(Failure::new(reason)),
        Then::Complete => {
            ctx.complete();
            Ok(())
        }
        Then::Panic => panic!("[expected] holder panicked"),
    }
}

// SAFETY: every field is `Isolated` (asserted above): numbers, and `handled`, a channel to the
// test thread held as a `SharedClient` (a test instrument, see `common::to_test`). The
// messages are `Isolated` (above).
unsafe impl Process for Holder {
    type Message = Msg;

    fn handle(&mut self, msg: Msg, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        match msg {
            Msg::Work(n) => {
                let _ = self.handled.send(n);
                self.count += 1;
                if self.fail_after == Some(self.count) {
                    return Err(Failure::new("quota reached"));
                }
                Ok(())
            }
            Msg::Hold(gate, then) => {
                gate.wait();
                finish(then, ctx)
            }
            Msg::SelfPost(items, then) => {
                let me = ctx.myself();
                for n in items {
                    me.post(Item(n))
                        .expect("a process cannot be terminated inside its handler");
                }
                finish(then, ctx)
            }
            Msg::SelfPostThenLink(items, failed) => {
                let me = ctx.myself();
                for n in items {
                    me.post(Item(n)).unwrap();
                }
                ctx.link(&failed);
                Ok(())
            }
        }
    }
}

impl whirl_runtime::Handles<Msg> for Holder {
    fn into_message(msg: Msg) -> Msg {
        msg
    }
}

impl Handles<Item> for Holder {
    fn into_message(Item(n): Item) -> Msg {
        Msg::Work(n)
    }
}

/// The `Work` numbers inside dead letters, checking each was meant for `to` because of
/// `reason`.
#[track_caller]
fn work_items(letters: Vec<DeadLetter>, to: ProcessId, reason: &ExitReason) -> Vec<u32> {
    letters
        .into_iter()
        .map(|letter| {
            assert_eq!(letter.to(), to);
            assert_eq!(letter.reason(), reason);
            assert!(
                letter.type_name().ends_with("Msg"),
                "{}",
                letter.type_name()
            );
            assert!(letter.downcast_ref::<Msg>().is_some());
            match letter.downcast::<Msg>().expect("a Msg") {
                Msg::Work(n) => n,
                other => panic!("unexpected dead letter {other:?}"),
            }
        })
        .collect()
}

/// Fills the inbox behind a blocked handler, then lets the handler end the process.
fn leftovers_after(then: Then) -> (Vec<DeadLetter>, ProcessId, Addr<Holder>) {
    common::quiet_expected_panics();
    let (rt, dead) = common::runtime_with_dead_letters(2);
    let (handled, handled_rx) = mpsc::channel();
    let p = rt.spawn(Holder::new(&handled));
    let gate = Gate::new();
    p.post(Msg::Hold(common::gate(&gate), then)).unwrap();
    for n in 1..=5 {
        p.post(Item(n)).unwrap();
    }
    gate.open();
    rt.block_until_idle();
    assert!(p.is_terminated());
    assert!(
        handled_rx.try_recv().is_err(),
        "nothing after Hold was handled"
    );
    let counts = rt.counts();
    common::assert_balanced(&counts);
    assert_eq!(counts.dead_lettered, 5);
    rt.shutdown_graceful();
    (dead.take(), p.id(), p)
}

#[test]
fn leftovers_of_a_failed_process_are_dead_lettered_with_the_reason_in_fifo_order() {
    let (letters, id, p) = leftovers_after(Then::Fail("stop"));
    let reason = ExitReason::Failed(Failure::new("stop"));
    assert_eq!(work_items(letters, id, &reason), vec![1, 2, 3, 4, 5]);
    // Later posts come back with the message, in the sender's own type.
    assert_eq!(p.post(Item(6)), Err(PostError::Terminated(Item(6))));
    match p.post(Msg::Work(7)) {
        Err(PostError::Terminated(Msg::Work(7))) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn leftovers_of_a_completed_process_are_dead_lettered_as_normal() {
    let (letters, id, p) = leftovers_after(Then::Complete);
    assert_eq!(
        work_items(letters, id, &ExitReason::Normal),
        vec![1, 2, 3, 4, 5]
    );
    let err = p.post(Item(8)).unwrap_err();
    assert!(err.is_terminated());
    assert_eq!(*err.message(), Item(8));
    assert_eq!(err.into_message(), Item(8));
}

#[test]
fn leftovers_of_a_panicked_process_are_dead_lettered_with_the_panic() {
    let (letters, id, _p) = leftovers_after(Then::Panic);
    let reason = letters[0].reason().clone();
    match &reason {
        ExitReason::Failed(f) => {
            assert_eq!(f.kind(), &FailureKind::Panic);
            assert_eq!(f.reason(), "[expected] holder panicked");
        }
        other => panic!("a panic is a failure, not {other}"),
    }
    assert_eq!(work_items(letters, id, &reason), vec![1, 2, 3, 4, 5]);
}

#[test]
fn messages_a_process_posts_to_itself_before_failing_are_dead_lettered() {
    let (rt, dead) = common::runtime_with_dead_letters(1);
    let (handled, handled_rx) = mpsc::channel();
    let p = rt.spawn(Holder::new(&handled));
    p.post(Msg::SelfPost(vec![10, 20, 30], Then::Fail("bye")))
        .unwrap();
    rt.block_until_idle();
    assert!(handled_rx.try_recv().is_err());
    let reason = ExitReason::Failed(Failure::new("bye"));
    assert_eq!(work_items(dead.take(), p.id(), &reason), vec![10, 20, 30]);
    common::assert_balanced(&rt.counts());
    rt.shutdown_graceful();
}

#[test]
fn leftovers_of_a_process_killed_by_a_link_carry_the_linked_reason() {
    let (rt, dead) = common::runtime_with_dead_letters(2);
    let (handled, handled_rx) = mpsc::channel();
    let failed = rt.spawn(Holder::new(&handled));
    failed
        .post(Msg::SelfPost(vec![], Then::Fail("root")))
        .unwrap();
    rt.block_until_idle();
    assert!(failed.is_terminated());

    let victim = rt.spawn(Holder::new(&handled));
    victim
        .post(Msg::SelfPostThenLink(vec![1, 2, 3], failed.clone()))
        .unwrap();
    rt.block_until_idle();
    assert!(victim.is_terminated());
    assert!(handled_rx.try_recv().is_err());
    let letters = dead.take();
    let reason = letters[0].reason().clone();
    match &reason {
        ExitReason::Failed(f) => {
            assert_eq!(f.kind(), &FailureKind::Linked(failed.id()));
            assert_eq!(f.reason(), "root");
        }
        other => panic!("a linked failure is a failure, not {other}"),
    }
    assert_eq!(work_items(letters, victim.id(), &reason), vec![1, 2, 3]);
    common::assert_balanced(&rt.counts());
    rt.shutdown_graceful();
}

#[test]
fn posts_racing_with_termination_are_handled_dead_lettered_or_returned_never_lost() {
    const SENDERS: u32 = 4;
    const PER_SENDER: u32 = 20_000;
    for fail_after in [1, 500, 60_000, 100_000] {
        let (rt, dead) = common::runtime_with_dead_letters(2);
        let (handled, handled_rx) = mpsc::channel();
        let p = rt.spawn(Holder {
            fail_after: Some(fail_after),
            ..Holder::new(&handled)
        });
        let (accepted, returned): (Vec<u32>, Vec<u32>) = thread::scope(|s| {
            let joins: Vec<_> = (0..SENDERS)
                .map(|sender| {
                    let p = p.clone();
                    s.spawn(move || {
                        let mut accepted = Vec::new();
                        let mut returned = Vec::new();
                        for i in 0..PER_SENDER {
                            let n = sender * PER_SENDER + i;
                            match p.post(Item(n)) {
                                Ok(()) => accepted.push(n),
                                Err(PostError::Terminated(Item(m))) => returned.push(m),
                                Err(other) => panic!("no predicate here: {other}"),
                            }
                        }
                        (accepted, returned)
                    })
                })
                .collect();
            joins.into_iter().map(|j| j.join().unwrap()).fold(
                (Vec::new(), Vec::new()),
                |(mut a, mut r), (a2, r2)| {
                    a.extend(a2);
                    r.extend(r2);
                    (a, r)
                },
            )
        });
        rt.block_until_idle();
        let handled: Vec<u32> = handled_rx.try_iter().collect();
        let reason = ExitReason::Failed(Failure::new("quota reached"));
        let dead_items = if p.is_terminated() {
            work_items(dead.take(), p.id(), &reason)
        } else {
            assert_eq!(dead.len(), 0);
            Vec::new()
        };

        let accepted_set: BTreeSet<u32> = accepted.iter().copied().collect();
        let mut delivered: Vec<u32> = handled.iter().chain(&dead_items).copied().collect();
        delivered.sort_unstable();
        let delivered_set: BTreeSet<u32> = delivered.iter().copied().collect();
        assert_eq!(
            delivered.len(),
            delivered_set.len(),
            "a message arrived twice"
        );
        assert_eq!(
            delivered_set, accepted_set,
            "accepted = handled + dead-lettered"
        );
        assert_eq!(
            accepted.len() + returned.len(),
            (SENDERS * PER_SENDER) as usize
        );
        assert!(returned.iter().all(|n| !accepted_set.contains(n)));
        assert_eq!(handled.len() as u32, fail_after.min(SENDERS * PER_SENDER));

        let counts = rt.counts();
        common::assert_balanced(&counts);
        assert_eq!(counts.posted, accepted.len() as u64);
        assert_eq!(counts.handled, handled.len() as u64);
        assert_eq!(counts.dead_lettered, dead_items.len() as u64);
        rt.shutdown_graceful();
    }
}

#[test]
fn a_panicking_dead_letter_sink_does_not_kill_the_worker() {
    // The sink is user code running on a worker, like a handler: a panic in it must not take
    // the worker down (invariant I4's "workers survive").
    common::quiet_expected_panics();
    let rt = whirl_runtime::Runtime::builder()
        .threads(1)
        .dead_letters(|_| panic!("[expected] sink panicked"))
        .build()
        .expect("the runtime starts");
    let (handled, _handled_rx) = mpsc::channel();
    let p = rt.spawn(Holder::new(&handled));
    p.post(Msg::SelfPost(vec![1], Then::Fail("bye"))).unwrap();
    let survivor = rt.spawn(Holder::new(&handled));
    assert!(
        rt.block_until_idle_timeout(Duration::from_secs(10)),
        "the only worker died"
    );
    assert!(p.is_terminated());
    survivor.post(Item(2)).unwrap();
    assert!(rt.block_until_idle_timeout(Duration::from_secs(10)));
    rt.shutdown_graceful();
}
