//! The run budget: a process handles at most `budget` messages per turn, then goes to the back
//! of the run queue, so busy processes share a worker, and a process that never runs out of
//! work (or a ping-ponging pair) cannot starve the others. And on the shared workers, a group
//! limited to fewer turns at once than there are workers, with work waiting, is served before
//! the LIFO slot while another worker stays free.

mod common;

use std::sync::mpsc::{self, Receiver, Sender};
use whirl_runtime::request::Sender as _;

use common::{assert_isolated, events, run, to_test, Gate, Plain, ToTest};
use whirl_runtime::{
    Addr, Ctx, Failure, Group, Handles, Isolated, Message, Process, Runtime, SharedClient,
};

enum BusyMsg {
    Work,
    /// Signals `entered`, then blocks on the gate: holds the group's only worker.
    Hold(SharedClient<Gate>, ToTest<()>),
    /// Posts `n` messages to each of these processes, in order, from inside the handler.
    Feed(Vec<(Addr<Busy>, usize)>),
    /// Posts each message to its process, in order, from inside the handler.
    Forward(Vec<(Addr<Busy>, BusyMsg)>),
}

struct Work;

// SAFETY: every field is `Isolated` (asserted below): process addresses, numbers and messages of
// this type, and test
// instruments held as `SharedClient`s (a gate the test thread opens and a channel to it, see
// `common::gate` and `common::to_test`).
unsafe impl Isolated for BusyMsg {}
impl Message for BusyMsg {}
// SAFETY: no data.
unsafe impl Isolated for Work {}
impl Message for Work {}

/// Logs its name for every `Work` it handles.
struct Busy {
    name: &'static str,
    log: ToTest<&'static str>,
}

const _: () = {
    // Never called: naming the instances makes the compiler check each field's type.
    let _ = assert_isolated::<SharedClient<Gate>>;
    let _ = assert_isolated::<ToTest<()>>;
    let _ = assert_isolated::<Vec<(Addr<Busy>, usize)>>;
    let _ = assert_isolated::<Vec<(Addr<Busy>, BusyMsg)>>;
    let _ = assert_isolated::<&'static str>;
    let _ = assert_isolated::<ToTest<&'static str>>;
    let _ = assert_isolated::<Option<Addr<Hot>>>;
    let _ = assert_isolated::<bool>;
};

// SAFETY: every field is `Isolated` (asserted above): a `&'static str` and a channel to the
// test thread held as a `SharedClient`. The messages are `Isolated` (above).
unsafe impl Process for Busy {
    type Message = BusyMsg;

    fn handle(&mut self, msg: BusyMsg, _ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        match msg {
            BusyMsg::Work => self.log.send(self.name).unwrap(),
            BusyMsg::Hold(gate, entered) => {
                entered.send(()).unwrap();
                gate.wait();
            }
            BusyMsg::Feed(targets) => {
                for (to, n) in targets {
                    for _ in 0..n {
                        to.post(Work).unwrap();
                    }
                }
            }
            BusyMsg::Forward(messages) => {
                for (to, msg) in messages {
                    to.post(msg).unwrap();
                }
            }
        }
        Ok(())
    }
}

impl whirl_runtime::Handles<BusyMsg> for Busy {
    fn into_message(msg: BusyMsg) -> BusyMsg {
        msg
    }
}

impl Handles<Work> for Busy {
    fn into_message(_: Work) -> BusyMsg {
        BusyMsg::Work
    }
}

/// Where the two busy processes' messages come from.
#[derive(Clone, Copy)]
enum From {
    /// A handler on the group's only worker: both processes wait in that worker's queues.
    Inside,
    /// Test code: both processes wait in the group's shared queue.
    Outside,
}

/// Queues `per_proc` messages for `a`, then for `b`, while the group's only worker is busy,
/// and returns the order in which they were handled.
fn handling_order(rt: &Runtime, group: &Group, per_proc: usize, from: From) -> Vec<&'static str> {
    let (log_tx, log) = mpsc::channel();
    let busy = |name| {
        rt.spawner().group(group).spawn(Busy {
            name,
            log: to_test(&log_tx),
        })
    };
    let (a, b) = (busy("a"), busy("b"));
    rt.block_until_idle(); // both have run their start turn and are idle
    let other = busy("other");
    match from {
        From::Inside => {
            other
                .post(BusyMsg::Feed(vec![(a, per_proc), (b, per_proc)]))
                .unwrap();
        }
        From::Outside => {
            let gate = hold_a_worker(&other);
            for _ in 0..per_proc {
                a.post(Work).unwrap();
            }
            for _ in 0..per_proc {
                b.post(Work).unwrap();
            }
            gate.open();
        }
    }
    let order = (0..2 * per_proc).map(|_| common::recv(&log)).collect();
    rt.block_until_idle();
    common::assert_balanced(&rt.counts());
    order
}

/// The order as runs of consecutive messages of one process.
fn runs(order: &[&'static str]) -> Vec<(&'static str, usize)> {
    let mut runs: Vec<(&'static str, usize)> = Vec::new();
    for name in order {
        match runs.last_mut() {
            Some((last, n)) if last == name => *n += 1,
            _ => runs.push((name, 1)),
        }
    }
    runs
}

/// Turns of exactly `turn` messages, alternating between the two processes (whichever went
/// first).
#[track_caller]
fn assert_turns(order: &[&'static str], turn: usize) {
    let runs = runs(order);
    let first = runs[0].0;
    let second = if first == "a" { "b" } else { "a" };
    let expected: Vec<(&str, usize)> = (0..runs.len())
        .map(|i| (if i % 2 == 0 { first } else { second }, turn))
        .collect();
    assert_eq!(runs, expected, "{order:?}");
}

/// [`handling_order`] in the default group of a runtime of one worker and a budget of one.
fn order_on_one_worker_with_budget_one(per_proc: usize, from: From) -> Vec<&'static str> {
    let rt = Runtime::builder()
        .threads(1)
        .budget(1)
        .build()
        .expect("the runtime starts");
    let order = handling_order(&rt, rt.default_group(), per_proc, from);
    rt.shutdown_graceful();
    order
}

/// `a`, `b`, `a`, `b`, ... `n` times each.
fn alternating(n: usize) -> Vec<&'static str> {
    (0..n).flat_map(|_| ["a", "b"]).collect()
}

#[test]
fn with_budget_one_two_busy_processes_interleave_on_one_worker() {
    assert_turns(&order_on_one_worker_with_budget_one(20, From::Inside), 1);
}

#[test]
fn with_budget_one_two_busy_processes_posted_from_outside_interleave() {
    assert_eq!(
        order_on_one_worker_with_budget_one(20, From::Outside),
        alternating(20)
    );
}

#[test]
fn the_budget_is_the_length_of_a_turn() {
    let rt = Runtime::builder()
        .threads(1)
        .budget(3)
        .build()
        .expect("the runtime starts");
    let g = rt.default_group();
    assert_turns(&handling_order(&rt, g, 12, From::Inside), 3);

    // A budget larger than the backlog: each process empties its inbox in one turn.
    g.set_budget(100);
    assert_eq!(g.budget(), 100);
    assert_turns(&handling_order(&rt, g, 12, From::Inside), 12);

    // Changed at run time, down to the minimum of 1.
    g.set_budget(0);
    assert_eq!(g.budget(), 1);
    assert_turns(&handling_order(&rt, g, 5, From::Inside), 1);
    rt.shutdown_graceful();
}

#[test]
fn a_group_budget_applies_to_its_processes() {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let g = rt
        .group("turns")
        .threads(1)
        .budget(2)
        .lifo_slot(false)
        .build()
        .expect("build group");
    assert_eq!(g.budget(), 2);
    let order = handling_order(&rt, &g, 6, From::Inside);
    // Without a LIFO slot the order is plain FIFO: `a` was woken first.
    assert_eq!(runs(&order), [("a", 2), ("b", 2)].repeat(3));
    rt.shutdown_graceful();
}

// --- The LIFO slot overtakes nobody ---------------------------------------------------------------

#[test]
fn processes_a_handler_makes_ready_run_in_that_order() {
    // The first takes the worker's LIFO slot; the second finds it taken and queues behind
    // (it used to take the slot and push the first behind).
    assert_eq!(
        order_on_one_worker_with_budget_one(6, From::Inside),
        alternating(6)
    );
}

#[test]
fn a_process_made_ready_with_its_slot_free_still_queues_behind_its_group() {
    // On one worker: `other` makes `relay` ready (the slot) and then `b` (queued: the slot is
    // taken). `relay`'s turn makes `c` ready with the slot free, but `b` waits on this worker
    // in the same group: `c` goes behind it, as a worker under load must not let new work
    // overtake what waits (the 1 KiB file's p99 at 1,000 connections was 3x longer).
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let (log_tx, log) = mpsc::channel();
    let busy = |name| {
        rt.spawner().spawn(Busy {
            name,
            log: to_test(&log_tx),
        })
    };
    let (relay, b, c, other) = (busy("relay"), busy("b"), busy("c"), busy("other"));
    rt.block_until_idle();
    other
        .post(BusyMsg::Forward(vec![
            (relay, BusyMsg::Feed(vec![(c, 1)])),
            (b, BusyMsg::Work),
        ]))
        .unwrap();
    let order = [common::recv(&log), common::recv(&log)];
    assert_eq!(order, ["b", "c"]);
    rt.block_until_idle();
    common::assert_balanced(&rt.counts());
    rt.shutdown_graceful();
}

// --- No starvation ---------------------------------------------------------------------------

enum HotMsg {
    Ball,
    Stop,
    Peer(Addr<Hot>),
}

// SAFETY: no data, or a process address.
unsafe impl Isolated for HotMsg {}
impl Message for HotMsg {}

/// Passes a ball to its peer (or to itself) forever, until stopped.
struct Hot {
    peer: Option<Addr<Hot>>,
    stopped: bool,
    stopped_tx: ToTest<()>,
}

// SAFETY: every field is `Isolated` (asserted above): an optional process address, a flag and a
// channel to the test thread held as a `SharedClient`. The messages are `Isolated` (above).
unsafe impl Process for Hot {
    type Message = HotMsg;

    fn handle(&mut self, msg: HotMsg, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        match msg {
            HotMsg::Ball if self.stopped => self.stopped_tx.send(()).unwrap(),
            HotMsg::Ball => {
                let to = self.peer.clone().unwrap_or_else(|| ctx.myself());
                to.post(HotMsg::Ball).unwrap();
            }
            HotMsg::Stop => self.stopped = true,
            HotMsg::Peer(peer) => self.peer = Some(peer),
        }
        Ok(())
    }
}

impl whirl_runtime::Handles<HotMsg> for Hot {
    fn into_message(msg: HotMsg) -> HotMsg {
        msg
    }
}

fn hot(stopped_tx: &Sender<()>) -> Hot {
    Hot {
        peer: None,
        stopped: false,
        stopped_tx: to_test(stopped_tx),
    }
}

fn stop(hot: &Addr<Hot>, stopped: &Receiver<()>) {
    hot.post(HotMsg::Stop).unwrap();
    common::recv(stopped);
}

#[test]
fn a_process_that_never_runs_out_of_work_does_not_starve_others() {
    for budget in [1, 64] {
        let rt = Runtime::builder()
            .threads(1)
            .budget(budget)
            .build()
            .expect("the runtime starts");
        let (tx, _ev) = events();
        let (stopped_tx, stopped) = mpsc::channel();
        let spinner = rt.spawn(hot(&stopped_tx));
        spinner.post(HotMsg::Ball).unwrap();
        let other = rt.spawn(Plain::new("other", &tx));
        for i in 0..50 {
            assert_eq!(run(&other, move |_, _| i), i);
        }
        // Work a handler posts on this worker gets through too.
        let (inside_tx, inside) = mpsc::channel();
        run(&other, move |_, ctx| {
            let job = common::NodeMsg::Run(common::job(move |_, _| {
                inside_tx.send(()).unwrap();
                Ok(())
            }));
            ctx.myself().post(job).unwrap();
        });
        common::recv(&inside);
        stop(&spinner, &stopped);
        rt.shutdown_graceful();
    }
}

#[test]
fn a_ping_ponging_pair_does_not_starve_others() {
    // Each post wakes the peer into this worker's LIFO slot while nothing else waits on the
    // worker; the slot's streak limit and the periodic look at the shared queue must still let
    // in what is posted from outside.
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let (tx, _ev) = events();
    let (stopped_tx, stopped) = mpsc::channel();
    let ping = rt.spawn(hot(&stopped_tx));
    let pong = rt.spawn(hot(&stopped_tx));
    ping.post(HotMsg::Peer(pong.clone())).unwrap();
    pong.post(HotMsg::Peer(ping.clone())).unwrap();
    ping.post(HotMsg::Ball).unwrap();
    let other = rt.spawn(Plain::new("other", &tx));
    for i in 0..50 {
        assert_eq!(run(&other, move |_, _| i), i);
    }
    // Stop the rally: `ping` keeps the ball when it next gets it.
    stop(&ping, &stopped);
    rt.shutdown_graceful();
}

// --- Limited groups first ----------------------------------------------------------------------

/// Holds a worker with a turn of `holder` until the returned gate opens.
fn hold_a_worker(holder: &Addr<Busy>) -> Gate {
    let gate = Gate::new();
    let (entered_tx, entered) = mpsc::channel();
    holder
        .post(BusyMsg::Hold(common::gate(&gate), to_test(&entered_tx)))
        .unwrap();
    common::recv(&entered);
    gate
}

/// How `slow`'s process becomes ready in [`slot_or_limited_group`].
#[derive(Clone, Copy)]
enum SlowReady {
    /// One worker held; on the other, a handler makes `fast`'s process ready, which takes the
    /// LIFO slot, then `slow`'s, which goes to the worker's queue (the slot is taken).
    Posted,
    /// Both workers held; `slow`'s process is sent a `Feed` for `fast`'s, then a `Work`, and
    /// the second worker is let go: `slow`'s first turn (one message per turn) makes `fast`'s
    /// ready in the LIFO slot, and ends with `slow`'s work waiting.
    Waiting,
}

/// A process of `slow` (limited to one turn at once) and one of `fast` (no limit) made ready
/// on one worker as `how` says, while the other worker is held by a turn (of a group limited
/// to one turn at once if `other_held_by_a_limited_group`). Returns the order in which the
/// two then ran.
fn slot_or_limited_group(how: SlowReady, other_held_by_a_limited_group: bool) -> [&'static str; 2] {
    let rt = Runtime::builder()
        .threads(2)
        .build()
        .expect("the runtime starts");
    let fast = rt.group("fast").build().expect("build group");
    let slow = rt
        .group("slow")
        .concurrency(1)
        .budget(1)
        .build()
        .expect("build group");
    let hold = match other_held_by_a_limited_group {
        true => rt.group("hold").concurrency(1),
        false => rt.group("hold"),
    }
    .build()
    .expect("build group");
    let (log_tx, log) = mpsc::channel();
    let busy = |group: &Group, name| {
        rt.spawner().group(group).spawn(Busy {
            name,
            log: to_test(&log_tx),
        })
    };
    let (slow_one, fast_one) = (busy(&slow, "slow"), busy(&fast, "fast"));
    let (first, second) = (busy(&hold, "first"), busy(&fast, "second"));
    rt.block_until_idle();
    let first = hold_a_worker(&first);
    match how {
        SlowReady::Posted => {
            second
                .post(BusyMsg::Feed(vec![(fast_one, 1), (slow_one, 1)]))
                .unwrap();
        }
        SlowReady::Waiting => {
            let second = hold_a_worker(&second);
            slow_one.post(BusyMsg::Feed(vec![(fast_one, 1)])).unwrap();
            slow_one.post(Work).unwrap();
            second.open();
        }
    }
    let order = [common::recv(&log), common::recv(&log)];
    first.open();
    rt.block_until_idle();
    common::assert_balanced(&rt.counts());
    rt.shutdown_graceful();
    order
}

#[test]
fn a_limited_group_made_ready_with_a_place_free_runs_before_the_lifo_slot() {
    // A slow stage's place does not stay empty behind the short turns of the slot's chains.
    assert_eq!(
        slot_or_limited_group(SlowReady::Posted, false),
        ["slow", "fast"]
    );
}

#[test]
fn a_limited_group_whose_turn_ends_with_work_waiting_runs_before_the_lifo_slot() {
    assert_eq!(
        slot_or_limited_group(SlowReady::Waiting, false),
        ["slow", "fast"]
    );
}

#[test]
fn a_limited_group_goes_first_only_while_another_worker_stays_free() {
    // The other worker runs a limited group's turn: serving `slow` first would leave no
    // worker to the groups without a limit, so the slot goes first.
    assert_eq!(
        slot_or_limited_group(SlowReady::Posted, true),
        ["fast", "slow"]
    );
    assert_eq!(
        slot_or_limited_group(SlowReady::Waiting, true),
        ["fast", "slow"]
    );
}
