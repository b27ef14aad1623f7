//! Invariant 3 made checkable: at every quiescent point,
//! `posted = handled + rejected + dead_lettered + queued` (with `queued = 0`), per group and
//! runtime-wide, under concurrent posting from several threads, with predicates rejecting
//! messages and processes terminating mid-stream.

mod common;

use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::thread;
use whirl_runtime::request::Sender as _;

use common::{assert_isolated, counter, Gate};
use whirl_runtime::admission::{Offer, QueueLength};
use whirl_runtime::control::MessageCounts;
use whirl_runtime::{
    Addr, Ctx, Failure, Group, Handles, Isolated, Message, PostError, Process, Runtime,
    SharedClient,
};

/// What senders saw, wherever they were (test threads or handlers).
#[derive(Default)]
struct Tally {
    ok: AtomicU64,
    rejected: AtomicU64,
    terminated: AtomicU64,
}

impl Tally {
    fn record<M>(&self, result: Result<(), PostError<M>>) {
        let counter = match result {
            Ok(()) => &self.ok,
            Err(PostError::Rejected(_)) => &self.rejected,
            Err(PostError::Terminated(_)) => &self.terminated,
            Err(_) => unreachable!("a local post fails only as rejected or terminated"),
        };
        counter.fetch_add(1, SeqCst);
    }

    fn ok(&self) -> u64 {
        self.ok.load(SeqCst)
    }

    fn rejected(&self) -> u64 {
        self.rejected.load(SeqCst)
    }
}

struct Light(u64);
struct Heavy(u64);

enum StageMsg {
    Light(u64),
    Heavy,
    Hold(SharedClient<Gate>),
}

// SAFETY: numbers.
unsafe impl Isolated for Light {}
impl Message for Light {}
// SAFETY: as above.
unsafe impl Isolated for Heavy {}
impl Message for Heavy {}
const _: () = {
    // Never called: naming the instances makes the compiler check each field's type.
    let _ = assert_isolated::<u64>;
    let _ = assert_isolated::<SharedClient<Gate>>;
    let _ = assert_isolated::<SharedClient<Arc<AtomicU64>>>;
    let _ = assert_isolated::<Option<u64>>;
    let _ = assert_isolated::<Option<Addr<Stage>>>;
    let _ = assert_isolated::<SharedClient<Arc<Tally>>>;
};

// SAFETY: every field is `Isolated` (asserted above): a number, nothing, or a gate the test
// thread opens to hold a worker, held as a `SharedClient` (a test instrument, see
// `common::gate`).
unsafe impl Isolated for StageMsg {}
impl Message for StageMsg {}

/// Counts what it handles, optionally forwards light work to the next stage, and fails after
/// `fail_after` messages if set.
struct Stage {
    handled: SharedClient<Arc<AtomicU64>>,
    fail_after: Option<u64>,
    seen: u64,
    next: Option<Addr<Stage>>,
    tally: SharedClient<Arc<Tally>>,
}

impl Stage {
    fn new(handled: &Arc<AtomicU64>, tally: &Arc<Tally>) -> Self {
        Stage {
            handled: counter(handled),
            fail_after: None,
            seen: 0,
            next: None,
            tally: SharedClient::new(
                Arc::clone(tally),
                "test instrument: the tally of post outcomes, shared by the stages and the \
                 test's sender threads; it only counts, for the test to read at a quiescent \
                 point, and no stage's behaviour depends on it",
            ),
        }
    }
}

// SAFETY: every field is `Isolated` (asserted above): numbers, an optional process address, and
// two test instruments held as `SharedClient`s with the reason (`handled`, see
// `common::counter`, and `tally`, see `Stage::new`). The messages are `Isolated` (above).
unsafe impl Process for Stage {
    type Message = StageMsg;

    fn handle(&mut self, msg: StageMsg, _ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        self.handled.fetch_add(1, SeqCst);
        self.seen += 1;
        match msg {
            StageMsg::Light(n) => {
                if let Some(next) = &self.next {
                    self.tally.record(next.post(Light(n + 1)));
                }
            }
            StageMsg::Heavy => {}
            StageMsg::Hold(gate) => gate.wait(),
        }
        if self.fail_after == Some(self.seen) {
            return Err(Failure::new("worn out"));
        }
        Ok(())
    }
}

impl whirl_runtime::Handles<StageMsg> for Stage {
    fn into_message(msg: StageMsg) -> StageMsg {
        msg
    }
}

impl Handles<Light> for Stage {
    fn into_message(Light(n): Light) -> StageMsg {
        StageMsg::Light(n)
    }
}

impl Handles<Heavy> for Stage {
    fn into_message(_: Heavy) -> StageMsg {
        StageMsg::Heavy
    }
}

fn sum(groups: &[&Group]) -> MessageCounts {
    groups.iter().map(|g| g.counts()).sum()
}

#[test]
fn the_identity_holds_under_concurrent_posting_with_a_rejecting_predicate() {
    const SENDERS: u64 = 4;
    const PER_SENDER: u64 = 20_000;
    let rt = Runtime::builder()
        .threads(2)
        .build()
        .expect("the runtime starts");
    // A group that sheds every `Heavy` message: the predicate sees the posted type.
    let light_only = rt
        .group("light-only")
        .threads(2)
        .predicate(|offer: &Offer<'_>| !offer.message_type().is::<Heavy>())
        .build()
        .expect("build group");
    let tally = Arc::new(Tally::default());
    let handled = Arc::new(AtomicU64::new(0));
    let targets: Vec<Addr<Stage>> = (0..4)
        .map(|i| {
            let stage = Stage::new(&handled, &tally);
            if i % 2 == 0 {
                rt.spawn(stage)
            } else {
                rt.spawner().group(&light_only).spawn(stage)
            }
        })
        .collect();

    let heavy_rejected = AtomicU64::new(0);
    thread::scope(|s| {
        for sender in 0..SENDERS {
            let targets = &targets;
            let tally = &tally;
            let heavy_rejected = &heavy_rejected;
            s.spawn(move || {
                for i in 0..PER_SENDER {
                    let target = &targets[((sender + i) % 4) as usize];
                    if i % 3 == 0 {
                        match target.post(Heavy(i)) {
                            Err(PostError::Rejected(Heavy(n))) => {
                                assert_eq!(n, i, "the rejected message comes back");
                                heavy_rejected.fetch_add(1, SeqCst);
                                tally.record::<()>(Err(PostError::Rejected(())));
                            }
                            other => tally.record(other),
                        }
                    } else {
                        tally.record(target.post(Light(i)));
                    }
                }
            });
        }
    });
    rt.block_until_idle();

    let counts = rt.counts();
    common::assert_balanced(&counts);
    assert_eq!(tally.terminated.load(SeqCst), 0);
    assert_eq!(counts.posted, SENDERS * PER_SENDER);
    assert_eq!(counts.posted, tally.ok() + tally.rejected());
    assert_eq!(counts.handled, handled.load(SeqCst));
    assert_eq!(counts.handled, tally.ok());
    assert_eq!(counts.rejected, heavy_rejected.load(SeqCst));
    assert_eq!(counts.dead_lettered, 0);
    // Half the targets are in the shedding group; a third of the messages are heavy.
    let heavy_to_light_only = (0..SENDERS)
        .flat_map(|s| (0..PER_SENDER).map(move |i| (s, i)))
        .filter(|(s, i)| i % 3 == 0 && (s + i) % 4 % 2 == 1)
        .count() as u64;
    assert_eq!(counts.rejected, heavy_to_light_only);

    // Per group, and the groups add up to the runtime.
    for g in [rt.default_group(), &light_only] {
        common::assert_balanced(&g.counts());
    }
    assert_eq!(light_only.counts().rejected, counts.rejected);
    assert_eq!(rt.default_group().counts().rejected, 0);
    assert_eq!(sum(&[rt.default_group(), &light_only]), counts);
    rt.shutdown_graceful();
}

#[test]
fn queue_length_admits_exactly_up_to_its_threshold_then_rejects() {
    const MAX: u64 = 10;
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let bounded = rt
        .group("bounded")
        .threads(1)
        .predicate(QueueLength::max(MAX))
        .build()
        .expect("build group");
    let tally = Arc::new(Tally::default());
    let handled = Arc::new(AtomicU64::new(0));
    let p = rt
        .spawner()
        .group(&bounded)
        .spawn(Stage::new(&handled, &tally));
    rt.block_until_idle();

    // The first message blocks the process; it counts as queued until its handler returns.
    let gate = Gate::new();
    assert!(p.post(StageMsg::Hold(common::gate(&gate))).is_ok());
    let mut admitted = 1;
    let mut rejected = 0;
    for i in 0..100 {
        match p.post(Light(i)) {
            Ok(()) => {
                assert_eq!(
                    rejected, 0,
                    "admitted after a rejection with nothing handled"
                );
                admitted += 1;
            }
            Err(PostError::Rejected(Light(n))) => {
                assert_eq!(n, i);
                rejected += 1;
            }
            Err(other) => panic!("the process is alive: {other}"),
        }
    }
    assert_eq!(admitted, MAX, "admits while fewer than MAX are queued");
    assert_eq!(rejected, 100 + 1 - MAX);
    let c = bounded.counts();
    assert_eq!(c.queued(), MAX);
    assert_eq!(c.rejected, rejected);

    gate.open();
    rt.block_until_idle();
    let c = bounded.counts();
    common::assert_balanced(&c);
    assert_eq!(c.handled, MAX);
    // With the queue drained, the group admits again.
    assert!(p.post(Light(0)).is_ok());
    rt.block_until_idle();
    common::assert_balanced(&rt.counts());
    rt.shutdown_graceful();
}

#[test]
fn the_identity_holds_at_every_quiescent_point_with_terminations_mid_stream() {
    const SENDERS: u64 = 3;
    const PER_SENDER: u64 = 5_000;
    let dead = common::DeadLetters::default();
    let rt = Runtime::builder()
        .threads(2)
        .dead_letters(dead.sink())
        .build()
        .expect("the runtime starts");
    let stage2 = rt
        .group("stage2")
        .threads(2)
        .budget(4)
        .predicate(QueueLength::max(500))
        .build()
        .expect("build group");
    let picky = rt
        .group("picky")
        .threads(1)
        .predicate(|offer: &Offer<'_>| !offer.message_type().is::<Heavy>())
        .build()
        .expect("build group");
    let tally = Arc::new(Tally::default());
    let handled = Arc::new(AtomicU64::new(0));
    let mut all: Vec<Addr<Stage>> = Vec::new();

    for round in 0..5_u64 {
        // Second stages that wear out at different points; one in a group that sheds heavy
        // work, the others behind a queue-length threshold.
        let seconds: Vec<Addr<Stage>> = (0..4)
            .map(|i| {
                let stage = Stage {
                    fail_after: Some(1_000 * (i + 1) + round),
                    ..Stage::new(&handled, &tally)
                };
                if i == 3 {
                    rt.spawner().group(&picky).spawn(stage)
                } else {
                    rt.spawner().group(&stage2).spawn(stage)
                }
            })
            .collect();
        // First stages forward light work to a second stage; some wear out quickly.
        let firsts: Vec<Addr<Stage>> = (0..6)
            .map(|i| {
                rt.spawn(Stage {
                    fail_after: (i % 3 == 0).then_some(700 + 100 * i),
                    next: Some(seconds[(i % 4) as usize].clone()),
                    ..Stage::new(&handled, &tally)
                })
            })
            .collect();
        thread::scope(|s| {
            for sender in 0..SENDERS {
                let firsts = &firsts;
                let seconds = &seconds;
                let tally = &tally;
                s.spawn(move || {
                    for i in 0..PER_SENDER {
                        let k = (sender * 7 + i) as usize;
                        if i % 5 == 0 {
                            tally.record(seconds[k % seconds.len()].post(Heavy(i)));
                        } else {
                            tally.record(firsts[k % firsts.len()].post(Light(i)));
                        }
                    }
                });
            }
        });
        rt.block_until_idle();

        let counts = rt.counts();
        common::assert_balanced(&counts);
        assert_eq!(
            counts.posted,
            tally.ok() + tally.rejected(),
            "round {round}"
        );
        assert_eq!(counts.handled, handled.load(SeqCst), "round {round}");
        assert_eq!(counts.rejected, tally.rejected(), "round {round}");
        assert_eq!(counts.dead_lettered, dead.len() as u64, "round {round}");
        for g in [rt.default_group(), &stage2, &picky] {
            common::assert_balanced(&g.counts());
        }
        assert_eq!(sum(&[rt.default_group(), &stage2, &picky]), counts);
        all.extend(firsts);
        all.extend(seconds);
        let terminated = all.iter().filter(|a| a.is_terminated()).count() as u64;
        assert_eq!(counts.terminated, terminated, "round {round}");
        assert_eq!(counts.spawned, all.len() as u64);
        assert_eq!(counts.live_processes(), all.len() as u64 - terminated);
        assert_eq!(rt.live_processes() as u64, counts.live_processes());
    }
    assert!(
        tally.terminated.load(SeqCst) > 0,
        "the scenario did terminate processes mid-stream"
    );
    assert!(tally.rejected() > 0, "the scenario did reject messages");
    rt.shutdown_graceful();
}
