//! Invariant 1, the exclusivity half: a process is never run on two threads at once, so its
//! handlers and hooks are never re-entered, however many workers and senders there are.
//!
//! The flag is shared with the test on purpose (test-only): a process sets it on entry and
//! clears it on exit, and any overlap shows up as a violation.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::thread;
use whirl_runtime::request::Sender as _;

use common::assert_isolated;
use whirl_runtime::{
    Addr, Ctx, ExitReason, Failure, Handles, Isolated, Message, Process, ReplyTo, Runtime,
    SharedClient,
};

#[derive(Clone, Default)]
struct Probe {
    inside: Arc<AtomicBool>,
    violations: Arc<AtomicU64>,
}

impl Probe {
    fn enter(&self) {
        if self.inside.swap(true, SeqCst) {
            self.violations.fetch_add(1, SeqCst);
        }
    }

    fn exit(&self) {
        self.inside.store(false, SeqCst);
    }

    /// The probe as a process holds it.
    fn shared(&self) -> SharedClient<Probe> {
        SharedClient::new(
            self.clone(),
            "test instrument: flags shared with the test thread on purpose, which observe from \
             outside whether the runtime ever runs this process on two threads at once; the \
             process's behaviour never depends on them",
        )
    }
}

struct Guarded {
    probe: SharedClient<Probe>,
    count: u64,
    /// Hand some messages on to this process, from inside the handler.
    forward: Option<Addr<Guarded>>,
}

enum GuardedMsg {
    Hit(u64),
    Count(ReplyTo<u64>),
}

/// A numbered message for a `Guarded`.
struct Hit(u64);
/// Asks a `Guarded` how many messages it handled.
struct Count(ReplyTo<u64>);

// SAFETY: numbers and reply handles for numbers.
unsafe impl Isolated for GuardedMsg {}
impl Message for GuardedMsg {}
// SAFETY: a number.
unsafe impl Isolated for Hit {}
impl Message for Hit {}
// SAFETY: a reply handle for a number.
unsafe impl Isolated for Count {}
impl Message for Count {}

const _: () = {
    // Never called: naming the instances makes the compiler check each field's type.
    let _ = assert_isolated::<SharedClient<Probe>>;
    let _ = assert_isolated::<u64>;
    let _ = assert_isolated::<Option<Addr<Guarded>>>;
    let _ = assert_isolated::<ReplyTo<u64>>;
};

// SAFETY: every field is `Isolated` (asserted above): `count` is a number, `forward` a process
// address, and `probe` the test's instrument held as a `SharedClient` with the reason (see
// `Probe::shared` and the module docs). The messages are `Isolated` (above).
unsafe impl Process for Guarded {
    type Message = GuardedMsg;

    fn started(&mut self, _ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        self.probe.enter();
        self.probe.exit();
        Ok(())
    }

    fn handle(&mut self, msg: GuardedMsg, _ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        self.probe.enter();
        match msg {
            GuardedMsg::Hit(n) => {
                self.count += 1;
                if let Some(next) = &self.forward {
                    if n % 3 == 0 {
                        next.post(Hit(n + 1)).expect("peer is alive");
                    }
                }
                // A little work, so that a second thread would have time to barge in.
                std::hint::black_box((0..n % 8).sum::<u64>());
            }
            GuardedMsg::Count(reply) => {
                let _ = reply.send(self.count);
            }
        }
        self.probe.exit();
        Ok(())
    }

    fn terminated(&mut self, _reason: &ExitReason) {
        self.probe.enter();
        self.probe.exit();
    }
}

impl whirl_runtime::Handles<GuardedMsg> for Guarded {
    fn into_message(msg: GuardedMsg) -> GuardedMsg {
        msg
    }
}

impl Handles<Hit> for Guarded {
    fn into_message(Hit(n): Hit) -> GuardedMsg {
        GuardedMsg::Hit(n)
    }
}

impl Handles<Count> for Guarded {
    fn into_message(Count(reply): Count) -> GuardedMsg {
        GuardedMsg::Count(reply)
    }
}

fn count(addr: &Addr<Guarded>) -> u64 {
    addr.request_with(Count).call().expect("process answers")
}

#[test]
fn a_million_messages_from_several_threads_never_reenter_the_process() {
    const SENDERS: u64 = 4;
    const PER_SENDER: u64 = 250_000;
    let rt = Runtime::builder()
        .threads(4)
        .build()
        .expect("the runtime starts");
    let probe = Probe::default();
    let p = rt.spawn(Guarded {
        probe: probe.shared(),
        count: 0,
        forward: None,
    });
    thread::scope(|s| {
        for _ in 0..SENDERS {
            let p = p.clone();
            s.spawn(move || {
                for n in 0..PER_SENDER {
                    p.post(Hit(n)).expect("process is alive");
                }
            });
        }
    });
    assert_eq!(count(&p), SENDERS * PER_SENDER);
    rt.block_until_idle();
    assert_eq!(
        probe.violations.load(SeqCst),
        0,
        "the process was re-entered"
    );
    let counts = rt.counts();
    common::assert_balanced(&counts);
    assert_eq!(counts.handled, SENDERS * PER_SENDER + 1);
    rt.shutdown_graceful();
    assert_eq!(
        probe.violations.load(SeqCst),
        0,
        "a hook overlapped a handler"
    );
}

#[test]
fn processes_that_yield_after_every_message_are_never_reentered() {
    // Budget 1 maximises the number of times each process changes hands between workers;
    // the processes also post to each other from their handlers, so wake-ups come from
    // workers (LIFO slot, local queues, stealing) as well as from outside (the injector).
    const PROCS: usize = 6;
    const PER_SENDER: u64 = 20_000;
    let rt = Runtime::builder()
        .threads(4)
        .budget(1)
        .build()
        .expect("the runtime starts");
    let probes: Vec<Probe> = (0..=PROCS).map(|_| Probe::default()).collect();
    let sink = rt.spawn(Guarded {
        probe: probes[PROCS].shared(),
        count: 0,
        forward: None,
    });
    let procs: Vec<Addr<Guarded>> = probes[..PROCS]
        .iter()
        .map(|probe| {
            rt.spawn(Guarded {
                probe: probe.shared(),
                count: 0,
                forward: Some(sink.clone()),
            })
        })
        .collect();
    thread::scope(|s| {
        for _ in 0..3 {
            let procs = procs.clone();
            s.spawn(move || {
                for n in 0..PER_SENDER {
                    for p in &procs {
                        p.post(Hit(n)).expect("process is alive");
                    }
                }
            });
        }
    });
    rt.block_until_idle();
    for p in &procs {
        assert_eq!(count(p), 3 * PER_SENDER);
    }
    let forwarded = (0..PER_SENDER).filter(|n| n % 3 == 0).count() as u64;
    assert_eq!(count(&sink), forwarded * 3 * PROCS as u64);
    for probe in &probes {
        assert_eq!(probe.violations.load(SeqCst), 0, "a process was re-entered");
    }
    rt.shutdown_graceful();
}
