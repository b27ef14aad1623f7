//! Helpers shared by the `supervisor_*` tests: a scriptable child process, and a recorder for
//! the supervisor's events and the children's lifecycles.
//!
//! Nothing waits on a clock to decide an outcome: the restart-intensity period runs on a
//! `ManualClock`, and every wait is for an event, with the hang guard only turning a hang
//! into a failure.
//!
//! Child specs are data, so a [`Child`] carries its test instruments (the channel it reports
//! on, a countdown of failing starts, the gates it blocks on) as `SharedClient`s: shared on
//! purpose, with the reason, and never state another process of the system under test reads.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;

use crate::common::{Gate, HANG_GUARD};
use whirl_runtime::supervision::{
    ChildSpec, EventKind, Supervisor, SupervisorEvent, SupervisorSpec,
};
use whirl_runtime::{
    Addr, Ctx, ExitReason, Failure, Handles, Isolated, Message, Process, ProcessId, ReplyTo,
    Runtime, SharedClient,
};

/// The test's observation channel, as children and event sinks hold it.
pub type Observer = SharedClient<Sender<Seen>>;

const OBSERVER: &str = "a test instrument: the channel children and supervisors report to \
     the test thread on; it only carries owned reports out of the runtime";

/// Everything a test observes, in the order it happened on each thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seen {
    /// A supervisor event.
    Sup(SupervisorEvent),
    /// A child's `started` hook ran (successfully).
    Started { name: &'static str, pid: ProcessId },
    /// A child is blocked in a handler (on a [`Gate`]).
    Blocked { name: &'static str },
    /// A child's `terminated` hook ran.
    Stopped {
        name: &'static str,
        pid: ProcessId,
        reason: ExitReason,
    },
}

/// The receiving end of everything seen, with a backlog so waits can pick out one event.
pub struct Log {
    tx: Sender<Seen>,
    rx: Receiver<Seen>,
    backlog: Vec<Seen>,
}

impl Log {
    pub fn new() -> Self {
        crate::common::quiet_expected_panics();
        let (tx, rx) = mpsc::channel();
        Log {
            tx,
            rx,
            backlog: Vec::new(),
        }
    }

    /// The channel to this log, for a [`Child`] or an event sink.
    pub fn sender(&self) -> Observer {
        SharedClient::new(self.tx.clone(), OBSERVER)
    }

    /// A spec whose events come to this log (the sink is an observer: it may share state).
    pub fn spec(&self, name: &str) -> SupervisorSpec {
        let tx = self.tx.clone();
        SupervisorSpec::new(name).on_event(move |e| {
            let _ = tx.send(Seen::Sup(e.clone()));
        })
    }

    /// A worker spec for a [`Child`] called `name`, restarted from its initial state.
    pub fn worker(&self, name: &'static str) -> ChildSpec {
        ChildSpec::worker(name, Child::new(name, &self.sender())).named(name)
    }

    /// A worker whose first `failures` starts fail in the `started` hook. The countdown
    /// outlives each incarnation, so it is shared by them all, as a `SharedClient`; the start
    /// function adds it to a fresh `Child` at every start.
    pub fn failing_start(&self, name: &'static str, failures: usize) -> ChildSpec {
        let countdown = SharedClient::new(
            Arc::new(AtomicUsize::new(failures)),
            "a test instrument: a fault injector counting down the starts that must fail, \
             across the incarnations of one child",
        );
        ChildSpec::worker_with(
            name,
            (name, self.sender(), countdown),
            |(name, tx, countdown)| {
                let mut child = Child::new(name, &tx);
                child.fail_start = Some(countdown);
                child
            },
        )
        .named(name)
    }

    /// Waits for the first thing seen that `pred` accepts, keeping the others.
    #[track_caller]
    pub fn wait(&mut self, what: &str, pred: impl Fn(&Seen) -> bool) -> Seen {
        if let Some(i) = self.backlog.iter().position(&pred) {
            return self.backlog.remove(i);
        }
        loop {
            match self.rx.recv_timeout(HANG_GUARD) {
                Ok(seen) if pred(&seen) => return seen,
                Ok(seen) => self.backlog.push(seen),
                Err(_) => panic!("never saw {what}; saw {:#?}", self.backlog),
            }
        }
    }

    /// Waits until something `pred` accepts has been seen, leaving it (and everything before
    /// it) to be taken by [`Log::rest`].
    #[track_caller]
    pub fn wait_keep(&mut self, what: &str, pred: impl Fn(&Seen) -> bool) {
        while !self.backlog.iter().any(&pred) {
            match self.rx.recv_timeout(HANG_GUARD) {
                Ok(seen) => self.backlog.push(seen),
                Err(_) => panic!("never saw {what}; saw {:#?}", self.backlog),
            }
        }
    }

    /// Waits for supervisor `sup`'s event matching `pred`.
    #[track_caller]
    pub fn event(&mut self, sup: &str, pred: impl Fn(&EventKind) -> bool) -> EventKind {
        let what = format!("an event of `{sup}`");
        match self.wait(
            &what,
            |s| matches!(s, Seen::Sup(e) if &*e.supervisor == sup && pred(&e.kind)),
        ) {
            Seen::Sup(e) => e.kind,
            _ => unreachable!(),
        }
    }

    /// Waits for `id` to be restarted by `sup`; returns the new pid.
    #[track_caller]
    pub fn restarted(&mut self, sup: &str, id: &str) -> ProcessId {
        match self.event(
            sup,
            |k| matches!(k, EventKind::ChildRestarted { id: i, .. } if i == id),
        ) {
            EventKind::ChildRestarted { pid, .. } => pid,
            _ => unreachable!(),
        }
    }

    /// Waits for `sup` to terminate; returns why.
    #[track_caller]
    pub fn sup_terminated(&mut self, sup: &str) -> ExitReason {
        match self.event(sup, |k| matches!(k, EventKind::Terminated { .. })) {
            EventKind::Terminated { reason } => reason,
            _ => unreachable!(),
        }
    }

    /// Waits for child `name`'s `terminated` hook; returns its pid and reason.
    #[track_caller]
    pub fn child_stopped(&mut self, name: &'static str) -> (ProcessId, ExitReason) {
        match self.wait(
            name,
            |s| matches!(s, Seen::Stopped { name: n, .. } if *n == name),
        ) {
            Seen::Stopped { pid, reason, .. } => (pid, reason),
            _ => unreachable!(),
        }
    }

    /// Everything seen and not yet taken (call at a quiescent point).
    pub fn rest(&mut self) -> Vec<Seen> {
        let mut all = std::mem::take(&mut self.backlog);
        all.extend(self.rx.try_iter());
        all
    }

    /// Child terminations among `rest()`, by name, in order.
    pub fn stop_order(&mut self) -> Vec<&'static str> {
        self.rest()
            .into_iter()
            .filter_map(|s| match s {
                Seen::Stopped { name, .. } => Some(name),
                _ => None,
            })
            .collect()
    }
}

/// A scriptable child.
#[derive(Clone)]
pub struct Child {
    name: &'static str,
    tx: Observer,
    pid: Option<ProcessId>,
    fail_start: Option<SharedClient<Arc<AtomicUsize>>>,
}

// SAFETY: every field is `Isolated` (asserted below): a `&'static str`, a `ProcessId`, and test
// instruments held as `SharedClient`s, shared on purpose with the reason (see `OBSERVER` and
// `Log::failing_start`).
unsafe impl Isolated for Child {}

/// What a test can make a [`Child`] do.
pub enum Do {
    /// Return `Err` from the handler.
    Fail(&'static str),
    /// Panic in the handler.
    Panic,
    /// `ctx.complete()`.
    Complete,
    /// Answer with its pid.
    WhoAmI(ReplyTo<ProcessId>),
    /// A message that needs no answer.
    Note(u64),
    /// Answer `n + 1`.
    Echo(u64, ReplyTo<u64>),
    /// Answer with the name of the group it runs in.
    Group(ReplyTo<String>),
    /// Block the worker until the gate opens (see [`block`]).
    Block(SharedClient<Gate>),
}

// SAFETY: every field is `Isolated` (asserted below): `&'static str`s, numbers, one-shot reply
// handles of owned answers, and a gate as a `SharedClient` (a test instrument, see `block`).
unsafe impl Isolated for Do {}
impl Message for Do {}

const _: () = {
    fn assert_isolated<T: ?Sized + Isolated>() {}
    // Never called: naming the instances makes the compiler check each field's type.
    let _ = assert_isolated::<&'static str>;
    let _ = assert_isolated::<Observer>;
    let _ = assert_isolated::<Option<ProcessId>>;
    let _ = assert_isolated::<Option<SharedClient<Arc<AtomicUsize>>>>;
    let _ = assert_isolated::<ReplyTo<ProcessId>>;
    let _ = assert_isolated::<u64>;
    let _ = assert_isolated::<ReplyTo<u64>>;
    let _ = assert_isolated::<ReplyTo<String>>;
    let _ = assert_isolated::<SharedClient<Gate>>;
};

/// A message that blocks a child's worker until the test opens `gate`.
pub fn block(gate: &Gate) -> Do {
    Do::Block(SharedClient::new(
        gate.clone(),
        "a test instrument: a gate the test thread opens, to hold a handler mid-run",
    ))
}

impl Child {
    pub fn new(name: &'static str, tx: &Observer) -> Self {
        Child {
            name,
            tx: tx.clone(),
            pid: None,
            fail_start: None,
        }
    }
}

// SAFETY: the state is a `Child` and the messages are `Do`s, both `Isolated` (see above).
unsafe impl Process for Child {
    type Message = Do;

    fn started(&mut self, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        self.pid = Some(ctx.id());
        if let Some(left) = &self.fail_start {
            let before =
                left.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
            if before.is_ok() {
                return Err(Failure::new("cannot start [expected]"));
            }
        }
        let _ = self.tx.send(Seen::Started {
            name: self.name,
            pid: ctx.id(),
        });
        Ok(())
    }

    fn handle(&mut self, msg: Do, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        match msg {
            Do::Fail(reason) => return Err(Failure::new(reason)),
            Do::Panic => panic!("child panics [expected]"),
            Do::Complete => ctx.complete(),
            Do::WhoAmI(reply) => {
                let _ = reply.send(ctx.id());
            }
            Do::Note(_) => {}
            Do::Group(reply) => {
                let _ = reply.send(ctx.group().name().to_owned());
            }
            Do::Echo(n, reply) => {
                let _ = reply.send(n + 1);
            }
            Do::Block(gate) => {
                let _ = self.tx.send(Seen::Blocked { name: self.name });
                gate.wait();
            }
        }
        Ok(())
    }

    fn terminated(&mut self, reason: &ExitReason) {
        if let Some(pid) = self.pid {
            let _ = self.tx.send(Seen::Stopped {
                name: self.name,
                pid,
                reason: reason.clone(),
            });
        }
    }
}

impl Handles<Do> for Child {
    fn into_message(msg: Do) -> Do {
        msg
    }
}

/// A two-thread runtime.
pub fn runtime() -> Runtime {
    Runtime::builder()
        .threads(2)
        .build()
        .expect("the runtime starts")
}

/// Starts a root supervisor and waits until its children's start hooks have run.
pub fn start<A: 'static>(rt: &Runtime, spec: SupervisorSpec<A>) -> Addr<Supervisor<A>> {
    let sup = rt.spawn(Supervisor::new(spec));
    rt.block_until_idle();
    sup
}

/// The pid of child `id` of `sup`, failing the test if it is not running.
#[track_caller]
pub fn pid_of<A: 'static>(sup: &Addr<Supervisor<A>>, id: &str) -> ProcessId {
    sup.which_children()
        .expect("supervisor unavailable")
        .into_iter()
        .find(|c| c.id == id)
        .and_then(|c| c.pid)
        .unwrap_or_else(|| panic!("child `{id}` is not running"))
}

/// Whether child `id` of `sup` is known and running.
pub fn running<A: 'static>(sup: &Addr<Supervisor<A>>, id: &str) -> Option<bool> {
    sup.which_children()
        .expect("supervisor unavailable")
        .into_iter()
        .find(|c| c.id == id)
        .map(|c| c.pid.is_some())
}

/// The typed address of a running child, through a name registered with the runtime.
#[track_caller]
pub fn child(rt: &Runtime, name: &str) -> Addr<Child> {
    rt.whereis::<Child>(name)
        .unwrap_or_else(|| panic!("no live process named `{name}`"))
}
