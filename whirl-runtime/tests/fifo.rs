//! Invariant 1, the FIFO half: a process handles the messages of each sender in the order they
//! were posted, whoever the other senders are and however the process moves between workers.
//! Also the paper's happened-before ordering: a message caused by another arrives after it.

mod common;

use std::collections::HashMap;
use std::thread;
use whirl_runtime::request::Sender as _;

use whirl_runtime::{Addr, Ctx, Failure, Handles, Isolated, Message, Process, ReplyTo, Runtime};

/// Records, per sender, the next sequence number it expects, and the first gap it saw.
#[derive(Default)]
struct Recorder {
    next: HashMap<u64, u64>,
    violation: Option<String>,
    /// Every message in arrival order, when asked to keep them.
    keep: bool,
    arrivals: Vec<(u64, u64)>,
}

struct Seq {
    sender: u64,
    n: u64,
}

struct Report {
    next: HashMap<u64, u64>,
    violation: Option<String>,
    arrivals: Vec<(u64, u64)>,
}

/// Asks a recorder for its [`Report`].
struct GetReport(ReplyTo<Report>);

enum RecorderMsg {
    Seq(Seq),
    Report(ReplyTo<Report>),
}

// SAFETY: numbers, strings and maps of numbers: owned data.
unsafe impl Isolated for Seq {}
impl Message for Seq {}
// SAFETY: as above.
unsafe impl Isolated for Report {}
// SAFETY: a reply handle for an isolated `Report`.
unsafe impl Isolated for GetReport {}
impl Message for GetReport {}
// SAFETY: the two messages above.
unsafe impl Isolated for RecorderMsg {}
impl Message for RecorderMsg {}

// SAFETY: the state is maps, vectors and numbers, all owned; the messages are isolated.
unsafe impl Process for Recorder {
    type Message = RecorderMsg;

    fn handle(&mut self, msg: RecorderMsg, _ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        match msg {
            RecorderMsg::Seq(Seq { sender, n }) => {
                let expected = self.next.entry(sender).or_insert(0);
                if n != *expected && self.violation.is_none() {
                    self.violation =
                        Some(format!("sender {sender}: expected #{expected}, got #{n}"));
                }
                *expected = n + 1;
                if self.keep {
                    self.arrivals.push((sender, n));
                }
            }
            RecorderMsg::Report(reply) => {
                let _ = reply.send(Report {
                    next: self.next.clone(),
                    violation: self.violation.clone(),
                    arrivals: std::mem::take(&mut self.arrivals),
                });
            }
        }
        Ok(())
    }
}

impl whirl_runtime::Handles<RecorderMsg> for Recorder {
    fn into_message(msg: RecorderMsg) -> RecorderMsg {
        msg
    }
}

impl Handles<Seq> for Recorder {
    fn into_message(msg: Seq) -> RecorderMsg {
        RecorderMsg::Seq(msg)
    }
}

impl Handles<GetReport> for Recorder {
    fn into_message(GetReport(reply): GetReport) -> RecorderMsg {
        RecorderMsg::Report(reply)
    }
}

fn report(addr: &Addr<Recorder>) -> Report {
    addr.request_with(GetReport)
        .call()
        .expect("recorder answers")
}

/// `senders` threads each post `per_sender` numbered messages to every recorder.
fn post_from_threads(recorders: &[Addr<Recorder>], senders: u64, per_sender: u64) {
    thread::scope(|s| {
        for sender in 0..senders {
            let recorders = recorders.to_vec();
            s.spawn(move || {
                for n in 0..per_sender {
                    for r in &recorders {
                        r.post(Seq { sender, n }).expect("recorder is alive");
                    }
                }
            });
        }
    });
}

fn check(report: &Report, senders: u64, per_sender: u64) {
    assert_eq!(report.violation, None);
    assert_eq!(report.next.len() as u64, senders, "every sender was heard");
    for (sender, next) in &report.next {
        assert_eq!(*next, per_sender, "sender {sender} lost messages");
    }
}

#[test]
fn fifo_per_sender_with_concurrent_sender_threads() {
    let rt = Runtime::builder()
        .threads(2)
        .build()
        .expect("the runtime starts");
    let recorder = rt.spawn(Recorder::default());
    post_from_threads(std::slice::from_ref(&recorder), 4, 50_000);
    check(&report(&recorder), 4, 50_000);
    rt.block_until_idle();
    common::assert_balanced(&rt.counts());
    rt.shutdown_graceful();
}

#[test]
fn fifo_holds_when_the_process_yields_after_every_message() {
    // Budget 1: the process goes back to a run queue after each message and may be picked up
    // by another worker (or stolen) each time.
    let rt = Runtime::builder()
        .threads(3)
        .budget(1)
        .build()
        .expect("the runtime starts");
    let recorders: Vec<_> = (0..4).map(|_| rt.spawn(Recorder::default())).collect();
    post_from_threads(&recorders, 3, 10_000);
    for r in &recorders {
        check(&report(r), 3, 10_000);
    }
    rt.shutdown_graceful();
}

#[test]
fn fifo_holds_without_the_lifo_slot_in_a_custom_group() {
    let rt = Runtime::builder()
        .threads(1)
        .build()
        .expect("the runtime starts");
    let group = rt
        .group("fifo")
        .threads(2)
        .budget(7)
        .lifo_slot(false)
        .build()
        .expect("build group");
    let recorders: Vec<_> = (0..3)
        .map(|_| rt.spawner().group(&group).spawn(Recorder::default()))
        .collect();
    post_from_threads(&recorders, 4, 10_000);
    for r in &recorders {
        check(&report(r), 4, 10_000);
    }
    rt.shutdown_graceful();
}

/// Posts numbered messages to a recorder from inside its own handler, `batch` per message.
struct Producer {
    me: u64,
    next: u64,
    to: Addr<Recorder>,
}

struct Produce {
    batch: u64,
}
// SAFETY: a number.
unsafe impl Isolated for Produce {}
impl Message for Produce {}

// SAFETY: numbers and a process address; the message is a number.
unsafe impl Process for Producer {
    type Message = Produce;

    fn handle(&mut self, Produce { batch }: Produce, _ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        for _ in 0..batch {
            self.to
                .post(Seq {
                    sender: self.me,
                    n: self.next,
                })
                .expect("recorder is alive");
            self.next += 1;
        }
        Ok(())
    }
}

impl whirl_runtime::Handles<Produce> for Producer {
    fn into_message(msg: Produce) -> Produce {
        msg
    }
}

#[test]
fn fifo_per_sender_when_senders_are_processes() {
    let rt = Runtime::builder()
        .threads(2)
        .build()
        .expect("the runtime starts");
    let recorder = rt.spawn(Recorder::default());
    let producers: Vec<_> = (0..8)
        .map(|me| {
            rt.spawn(Producer {
                me,
                next: 0,
                to: recorder.clone(),
            })
        })
        .collect();
    for _ in 0..200 {
        for p in &producers {
            p.post(Produce { batch: 50 }).unwrap();
        }
    }
    rt.block_until_idle();
    check(&report(&recorder), 8, 200 * 50);
    rt.shutdown_graceful();
}

/// On `Kick(round)`: posts `(A, round)` to the recorder, then asks the relay to post
/// `(RELAYED, round)` there. The second is caused by the first, so must arrive after it.
struct Origin {
    recorder: Addr<Recorder>,
    relay: Addr<Relay>,
}

struct Kick(u64);

const ORIGIN: u64 = 1;
const RELAYED: u64 = 2;

// SAFETY: a number.
unsafe impl Isolated for Kick {}
impl Message for Kick {}

// SAFETY: process addresses; the message is a number.
unsafe impl Process for Origin {
    type Message = Kick;

    fn handle(&mut self, Kick(round): Kick, _ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        self.recorder
            .post(Seq {
                sender: ORIGIN,
                n: round,
            })
            .unwrap();
        self.relay.post(Forward(round)).unwrap();
        Ok(())
    }
}

impl whirl_runtime::Handles<Kick> for Origin {
    fn into_message(msg: Kick) -> Kick {
        msg
    }
}

struct Relay {
    recorder: Addr<Recorder>,
}

struct Forward(u64);

// SAFETY: a number.
unsafe impl Isolated for Forward {}
impl Message for Forward {}

// SAFETY: a process address; the message is a number.
unsafe impl Process for Relay {
    type Message = Forward;

    fn handle(&mut self, Forward(round): Forward, _ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        self.recorder
            .post(Seq {
                sender: RELAYED,
                n: round,
            })
            .unwrap();
        Ok(())
    }
}

impl whirl_runtime::Handles<Forward> for Relay {
    fn into_message(msg: Forward) -> Forward {
        msg
    }
}

#[test]
fn causally_related_messages_arrive_in_causal_order() {
    let rt = Runtime::builder()
        .threads(2)
        .build()
        .expect("the runtime starts");
    // The relay and the recorder live in another group so that they run on other threads.
    let other = rt.group("other").threads(2).build().expect("build group");
    let recorder = rt.spawner().group(&other).spawn(Recorder {
        keep: true,
        ..Recorder::default()
    });
    let relay = rt.spawner().group(&other).spawn(Relay {
        recorder: recorder.clone(),
    });
    let origin = rt.spawn(Origin {
        recorder: recorder.clone(),
        relay,
    });
    const ROUNDS: u64 = 20_000;
    for round in 0..ROUNDS {
        origin.post(Kick(round)).unwrap();
    }
    rt.block_until_idle();
    let report = report(&recorder);
    assert_eq!(report.violation, None);
    assert_eq!(report.arrivals.len() as u64, 2 * ROUNDS);
    let mut seen_origin = vec![false; ROUNDS as usize];
    for (sender, round) in report.arrivals {
        match sender {
            ORIGIN => seen_origin[round as usize] = true,
            RELAYED => assert!(
                seen_origin[round as usize],
                "round {round}: the relayed message overtook the one that caused it"
            ),
            _ => unreachable!(),
        }
    }
    rt.shutdown_graceful();
}
