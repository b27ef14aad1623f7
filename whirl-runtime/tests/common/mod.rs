//! Helpers shared by the integration tests.
//!
//! Nothing here waits on a clock to decide an outcome: timeouts only turn a hang into a test
//! failure ([`HANG_GUARD`]).
#![allow(dead_code)]

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, Once};
use std::time::Duration;
use whirl_runtime::request::Sender as _;

use whirl_runtime::{
    Addr, Ctx, DeadLetter, Down, ExitReason, Failure, Isolated, PostError, Process, ProcessId,
    ReplyTo, Runtime, SharedClient,
};

use whirl_runtime::control::MessageCounts;

/// How long any wait may take before the test is declared hung. Generous on purpose: it is a
/// guard, never part of what a test checks.
pub const HANG_GUARD: Duration = Duration::from_secs(30);

/// Polls `done` every 5 ms until it holds, failing the test with `what` after the
/// [`HANG_GUARD`]: for things that must happen eventually (a pool growing), never for how
/// fast they happen.
#[track_caller]
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !done() {
        assert!(
            start.elapsed() < HANG_GUARD,
            "timed out after {HANG_GUARD:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Receives one value, failing the test instead of hanging.
#[track_caller]
pub fn recv<T>(rx: &Receiver<T>) -> T {
    match rx.recv_timeout(HANG_GUARD) {
        Ok(v) => v,
        Err(e) => panic!("nothing received within the hang guard: {e}"),
    }
}

/// Runs `f` on a helper thread and returns its result, failing the test if it does not
/// finish within [`HANG_GUARD`] (for operations whose point is that they do not hang).
#[track_caller]
pub fn within_guard<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(HANG_GUARD) {
        Ok(v) => v,
        Err(_) => panic!("{what} did not finish within the hang guard"),
    }
}

/// Asserts the accounting identity at a quiescent point: nothing queued, and every posted
/// message handled, rejected or dead-lettered.
#[track_caller]
pub fn assert_balanced(c: &MessageCounts) {
    assert_eq!(
        c.queued(),
        0,
        "messages still queued at a quiescent point: {c:?}"
    );
    assert_eq!(
        c.posted,
        c.handled + c.rejected + c.dead_lettered,
        "posted != handled + rejected + dead_lettered: {c:?}"
    );
    assert_eq!(
        c.pending_lifecycle_runs, 0,
        "start hooks or kills still pending: {c:?}"
    );
}

/// A one-shot gate: handlers wait on it until the test opens it.
#[derive(Clone, Default)]
pub struct Gate {
    inner: Arc<(Mutex<bool>, Condvar)>,
}

impl Gate {
    pub fn new() -> Self {
        Gate::default()
    }

    pub fn open(&self) {
        *self.inner.0.lock().unwrap() = true;
        self.inner.1.notify_all();
    }

    /// Blocks until opened; panics (failing the calling process) if the hang guard expires.
    pub fn wait(&self) {
        let guard = self.inner.0.lock().unwrap();
        let (open, timeout) = self
            .inner
            .1
            .wait_timeout_while(guard, HANG_GUARD, |open| !*open)
            .unwrap();
        assert!(*open && !timeout.timed_out(), "gate never opened");
    }
}

impl fmt::Debug for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Gate")
    }
}

// ---------------------------------------------------------------------------------------------
// Test instruments, as processes hold them.
//
// A test watches and steers the processes it runs through a few instruments: channels that
// carry reports out to the test thread, gates the test thread opens, counters and flags it
// reads or sets from outside the runtime. They are shared with the test thread on purpose and
// are thread-safe, so a process holds them the sanctioned way, as `SharedClient`s with the
// reason; never as shared application state another process of the system under test reads.
// ---------------------------------------------------------------------------------------------

/// Compiles only for `Isolated` types: name `assert_isolated::<T>` in a `const` block to have
/// the compiler check a field's type (the check `#[derive(Isolated)]` would make).
pub fn assert_isolated<T: ?Sized + Isolated>() {}

/// A channel to the test thread, as a process holds it.
pub type ToTest<T> = SharedClient<Sender<T>>;

/// Wraps a channel to the test thread for a process to hold.
pub fn to_test<T: Send + 'static>(tx: &Sender<T>) -> ToTest<T> {
    SharedClient::new(
        tx.clone(),
        "test instrument: a channel to the test thread, which receives on it outside the \
         runtime; it only carries owned reports out of the process",
    )
}

/// Wraps a gate for a process to hold (see [`Gate`]).
pub fn gate(gate: &Gate) -> SharedClient<Gate> {
    SharedClient::new(
        gate.clone(),
        "test instrument: a gate only the test thread opens, from outside the runtime, to hold \
         a handler mid-run",
    )
}

/// Wraps a counter for a process to hold.
pub fn counter(counter: &Arc<AtomicU64>) -> SharedClient<Arc<AtomicU64>> {
    SharedClient::new(
        Arc::clone(counter),
        "test instrument: a counter the process bumps and the test thread reads from outside \
         the runtime",
    )
}

/// Wraps a `usize` counter for a process to hold.
pub fn counter_usize(counter: &Arc<AtomicUsize>) -> SharedClient<Arc<AtomicUsize>> {
    SharedClient::new(
        Arc::clone(counter),
        "test instrument: a counter the process bumps and the test thread reads from outside \
         the runtime",
    )
}

/// Wraps a flag for a process to hold.
pub fn flag(flag: &Arc<AtomicBool>) -> SharedClient<Arc<AtomicBool>> {
    SharedClient::new(
        Arc::clone(flag),
        "test instrument: a flag only the test thread sets, from outside the runtime, to stop \
         a handler's loop",
    )
}

/// Dead letters collected by a runtime's sink.
#[derive(Clone, Default)]
pub struct DeadLetters {
    letters: Arc<Mutex<Vec<DeadLetter>>>,
}

impl DeadLetters {
    /// A sink for `RuntimeBuilder::dead_letters`.
    pub fn sink(&self) -> impl Fn(DeadLetter) + Send + Sync + 'static {
        let letters = Arc::clone(&self.letters);
        move |letter| letters.lock().unwrap().push(letter)
    }

    pub fn len(&self) -> usize {
        self.letters.lock().unwrap().len()
    }

    pub fn take(&self) -> Vec<DeadLetter> {
        std::mem::take(&mut *self.letters.lock().unwrap())
    }
}

/// A runtime with `threads` default-group workers and a collecting dead-letter sink.
pub fn runtime_with_dead_letters(threads: usize) -> (Runtime, DeadLetters) {
    let dead = DeadLetters::default();
    let rt = Runtime::builder()
        .threads(threads)
        .dead_letters(dead.sink())
        .build()
        .expect("the runtime starts");
    (rt, dead)
}

/// Installs (once per test binary) a panic hook that stays quiet about panics whose message
/// contains `[expected]`, so deliberately panicking handlers do not flood the output.
pub fn quiet_expected_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let text = payload
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
                .unwrap_or("");
            if !text.contains("[expected]") {
                previous(info);
            }
        }));
    });
}

// ---------------------------------------------------------------------------------------------
// `Node`: a general-purpose test process driven by closures.
// ---------------------------------------------------------------------------------------------

/// What a [`Node`] reports to its test.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A system node received a termination notice as a message.
    Down { by: &'static str, notice: Down },
    /// A node's `terminated` hook ran.
    Terminated {
        name: &'static str,
        reason: ExitReason,
    },
}

/// Code to run inside a node's handler: a closure the test thread writes and hands one node to
/// run once, held as a `SharedClient` (see [`job`]).
pub type Job<P> =
    SharedClient<Box<dyn FnOnce(&mut P, &mut Ctx<P>) -> Result<(), Failure> + Send + Sync>>;

// A job stays a closure rather than data plus a function pointer (as the timers tests' `Setup`
// is) because `run` and `post_job` take closures and other test files, among them
// supervisor_dynamic.rs, call them with capturing ones. The compiler checks only that a job is
// `Send + Sync`; that it captures nothing but addresses, reply handles, owned values and other
// test instruments is the declared intent, and this reason is where it is declared.
const JOB: &str = "test instrument: a job, code the test thread hands one node to run once in its \
     handler (the harness's remote control of a process, not an observer); it moves what it \
     captures (addresses, reply handles, owned values, other test instruments) into that \
     process, and must be thread-safe";

/// Wraps `f` as a [`Job`] (the reason is `JOB`).
pub fn job<P: Process>(
    f: impl FnOnce(&mut P, &mut Ctx<P>) -> Result<(), Failure> + Send + Sync + 'static,
) -> Job<P> {
    SharedClient::new(Box::new(f), JOB)
}

/// A [`Node`]'s messages.
pub enum NodeMsg<const SYSTEM: bool> {
    Run(Job<Node<SYSTEM>>),
    Down(Down),
}

impl<const SYSTEM: bool> fmt::Debug for NodeMsg<SYSTEM> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NodeMsg::Run(_) => f.write_str("Run(..)"),
            NodeMsg::Down(d) => write!(f, "Down({d:?})"),
        }
    }
}

/// A process that runs closures sent to it and reports its termination notices and its
/// `terminated` hook to the test. `SYSTEM` decides whether it is a system process.
pub struct Node<const SYSTEM: bool> {
    pub name: &'static str,
    events: ToTest<Event>,
    /// Whatever a test wants to keep between jobs.
    pub log: Vec<u64>,
}

/// A non-system node: fails when a process it monitors fails.
pub type Plain = Node<false>;
/// A system node: receives termination notices as messages.
pub type System = Node<true>;

impl<const SYSTEM: bool> Node<SYSTEM> {
    pub fn new(name: &'static str, events: &ToTest<Event>) -> Self {
        Node {
            name,
            events: events.clone(),
            log: Vec::new(),
        }
    }
}

// SAFETY: every field is `Isolated` (asserted below): a `Job`, a closure held as a
// `SharedClient` with the reason (`JOB`), or a `Down`, an isolated runtime value.
unsafe impl<const SYSTEM: bool> whirl_runtime::Isolated for NodeMsg<SYSTEM> {}
impl<const SYSTEM: bool> whirl_runtime::Message for NodeMsg<SYSTEM> {}

// SAFETY: the state is `Isolated`, field by field (asserted below): `name` is a `&'static str`,
// `log` owned numbers and `events` a channel to the test thread held as a `SharedClient`
// (`to_test`). The messages are `NodeMsg`s, `Isolated` (above).
unsafe impl<const SYSTEM: bool> Process for Node<SYSTEM> {
    type Message = NodeMsg<SYSTEM>;

    fn handle(&mut self, msg: NodeMsg<SYSTEM>, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        match msg {
            NodeMsg::Run(job) => SharedClient::into_inner(job)(self, ctx),
            NodeMsg::Down(notice) => {
                let _ = self.events.send(Event::Down {
                    by: self.name,
                    notice,
                });
                Ok(())
            }
        }
    }

    fn terminated(&mut self, reason: &ExitReason) {
        let _ = self.events.send(Event::Terminated {
            name: self.name,
            reason: reason.clone(),
        });
    }

    fn down_message(notice: Down) -> Option<NodeMsg<SYSTEM>> {
        SYSTEM.then_some(NodeMsg::Down(notice))
    }
}

const _: () = {
    // Never called: naming the instances makes the compiler check each field's type.
    let _ = assert_isolated::<&'static str>;
    let _ = assert_isolated::<ToTest<Event>>;
    let _ = assert_isolated::<Vec<u64>>;
    let _ = assert_isolated::<Job<Plain>>;
    let _ = assert_isolated::<Job<System>>;
    let _ = assert_isolated::<Down>;
};

impl<const SYSTEM: bool> whirl_runtime::Handles<NodeMsg<SYSTEM>> for Node<SYSTEM> {
    fn into_message(msg: NodeMsg<SYSTEM>) -> NodeMsg<SYSTEM> {
        msg
    }
}

/// Runs `f` inside `node`'s handler and returns its result (a blocking `call`).
#[track_caller]
pub fn run<const S: bool, R: whirl_runtime::Isolated>(
    node: &Addr<Node<S>>,
    f: impl FnOnce(&mut Node<S>, &mut Ctx<Node<S>>) -> R + Send + Sync + 'static,
) -> R {
    node.request_with(|reply: ReplyTo<R>| {
        NodeMsg::Run(job(move |n, ctx| {
            let _ = reply.send(f(n, ctx));
            Ok(())
        }))
    })
    .call()
    .expect("call to a node failed")
}

/// Posts a job to `node` without waiting.
pub fn post_job<const S: bool>(
    node: &Addr<Node<S>>,
    f: impl FnOnce(&mut Node<S>, &mut Ctx<Node<S>>) -> Result<(), Failure> + Send + Sync + 'static,
) -> Result<(), PostError<NodeMsg<S>>> {
    node.post(NodeMsg::Run(job(f)))
}

/// Makes `node` fail with `reason` (a handler returning `Err`).
pub fn make_fail<const S: bool>(node: &Addr<Node<S>>, reason: &'static str) {
    post_job(node, move |_, _| Err(Failure::new(reason))).expect("node already terminated");
}

/// Makes `node` terminate normally (`ctx.complete()`).
pub fn make_complete<const S: bool>(node: &Addr<Node<S>>) {
    post_job(node, |_, ctx| {
        ctx.complete();
        Ok(())
    })
    .expect("node already terminated");
}

/// `watcher` monitors `target` (returns once the monitor is in place).
pub fn monitor<const S: bool, const T: bool>(watcher: &Addr<Node<S>>, target: &Addr<Node<T>>) {
    let target = target.clone();
    run(watcher, move |_, ctx| ctx.monitor(&target));
}

/// `a` links with `b` (returns once the link is in place).
pub fn link<const S: bool, const T: bool>(a: &Addr<Node<S>>, b: &Addr<Node<T>>) {
    let b = b.clone();
    run(a, move |_, ctx| ctx.link(&b));
}

/// The events a test's nodes report, with helpers to wait for a particular one.
pub struct Events {
    rx: Receiver<Event>,
    backlog: Vec<Event>,
}

/// A fresh event channel: give the sender to nodes, keep the `Events`.
pub fn events() -> (ToTest<Event>, Events) {
    let (tx, rx) = mpsc::channel();
    (
        to_test(&tx),
        Events {
            rx,
            backlog: Vec::new(),
        },
    )
}

impl Events {
    /// Waits for the first event matching `pred`, keeping the others for later.
    #[track_caller]
    pub fn wait_for(&mut self, pred: impl Fn(&Event) -> bool) -> Event {
        if let Some(pos) = self.backlog.iter().position(&pred) {
            return self.backlog.remove(pos);
        }
        loop {
            let e = recv(&self.rx);
            if pred(&e) {
                return e;
            }
            self.backlog.push(e);
        }
    }

    /// Waits for `name`'s `terminated` hook and returns the reason.
    #[track_caller]
    pub fn terminated(&mut self, name: &'static str) -> ExitReason {
        match self.wait_for(|e| matches!(e, Event::Terminated { name: n, .. } if *n == name)) {
            Event::Terminated { reason, .. } => reason,
            _ => unreachable!(),
        }
    }

    /// Waits for the next termination notice received by system node `by`.
    #[track_caller]
    pub fn down(&mut self, by: &'static str) -> Down {
        match self.wait_for(|e| matches!(e, Event::Down { by: b, .. } if *b == by)) {
            Event::Down { notice, .. } => notice,
            _ => unreachable!(),
        }
    }

    /// Everything reported so far and not yet taken (call at a quiescent point).
    pub fn rest(&mut self) -> Vec<Event> {
        let mut all = std::mem::take(&mut self.backlog);
        all.extend(self.rx.try_iter());
        all
    }
}

/// The failure inside an exit reason, or a test failure if the exit was normal.
#[track_caller]
pub fn failure(reason: &ExitReason) -> &Failure {
    match reason {
        ExitReason::Failed(f) => f,
        other => panic!("expected a failure, got a {other} exit"),
    }
}

/// The id a process would report, via a blocking call.
pub fn id_of<const S: bool>(node: &Addr<Node<S>>) -> ProcessId {
    run(node, |_, ctx| ctx.id())
}

// ---------------------------------------------------------------------------------------------
// Capturing `tracing` warnings and errors (for the tests of what the runtime reports).
// ---------------------------------------------------------------------------------------------

/// A `tracing` subscriber for a whole test binary that keeps every warning and error.
pub mod capture {
    use std::collections::HashMap;
    use std::fmt;
    use std::sync::{Mutex, OnceLock};

    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Level, Metadata, Subscriber};

    /// One captured event: its fields, by name, as text (the event's text is `message`).
    pub type Fields = HashMap<&'static str, String>;

    /// Keeps the fields of every warning and error, from any thread.
    pub struct Capture {
        pub events: Mutex<Vec<Fields>>,
    }

    /// Writes an event's or a span's fields into a map, as text.
    pub struct FieldText<'a>(pub &'a mut Fields);

    impl Visit for FieldText<'_> {
        fn record_str(&mut self, field: &Field, value: &str) {
            self.0.insert(field.name(), value.to_owned());
        }

        fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
            self.0.insert(field.name(), format!("{value:?}"));
        }
    }

    impl Subscriber for Capture {
        fn enabled(&self, metadata: &Metadata<'_>) -> bool {
            metadata.is_event() && *metadata.level() <= Level::WARN
        }

        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }

        fn record(&self, _: &Id, _: &Record<'_>) {}

        fn record_follows_from(&self, _: &Id, _: &Id) {}

        fn event(&self, event: &Event<'_>) {
            let mut fields = Fields::new();
            event.record(&mut FieldText(&mut fields));
            self.events
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .push(fields);
        }

        fn enter(&self, _: &Id) {}

        fn exit(&self, _: &Id) {}
    }

    /// The binary's subscriber, installed on first use (the watchdog warns from the controller
    /// thread, so a thread-local subscriber would not see it).
    pub fn capture() -> &'static Capture {
        static CAPTURE: OnceLock<&'static Capture> = OnceLock::new();
        CAPTURE.get_or_init(|| {
            let capture: &'static Capture = Box::leak(Box::new(Capture {
                events: Mutex::new(Vec::new()),
            }));
            tracing::subscriber::set_global_default(ForwardTo(capture))
                .expect("no other global subscriber in this test binary");
            capture
        })
    }

    /// The global default takes ownership of a subscriber; this one forwards to the leaked capture
    /// the tests read.
    struct ForwardTo(&'static Capture);

    impl Subscriber for ForwardTo {
        fn enabled(&self, metadata: &Metadata<'_>) -> bool {
            self.0.enabled(metadata)
        }

        fn new_span(&self, span: &Attributes<'_>) -> Id {
            self.0.new_span(span)
        }

        fn record(&self, span: &Id, values: &Record<'_>) {
            self.0.record(span, values);
        }

        fn record_follows_from(&self, span: &Id, follows: &Id) {
            self.0.record_follows_from(span, follows);
        }

        fn event(&self, event: &Event<'_>) {
            self.0.event(event);
        }

        fn enter(&self, span: &Id) {
            self.0.enter(span);
        }

        fn exit(&self, span: &Id) {
            self.0.exit(span);
        }
    }
}

/// Echoes every byte a socket receives back to it (the socket tests' server).
#[cfg(feature = "net")]
pub mod echo {
    use whirl_runtime::net::{SocketConnection, SocketEvent, SocketMsg};
    use whirl_runtime::request::Sender as _;
    use whirl_runtime::{Addr, Ctx, Failure, Handles, Process};

    /// Echoes every byte back.
    pub struct Echo {
        pub socket: Addr<SocketConnection>,
    }

    // SAFETY: a process address; the message, `SocketEvent`, is isolated.
    unsafe impl Process for Echo {
        type Message = SocketEvent;

        fn started(&mut self, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
            let _ = self.socket.post(SocketMsg::Attach(ctx.myself().into()));
            Ok(())
        }

        fn handle(&mut self, event: SocketEvent, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
            match event {
                SocketEvent::Data(bytes) => {
                    let _ = self.socket.post(SocketMsg::Write(bytes));
                }
                SocketEvent::Eof => {
                    let _ = self.socket.post(SocketMsg::Close);
                }
                SocketEvent::Closed(_) => ctx.complete(),
                _ => {}
            }
            Ok(())
        }
    }

    impl Handles<SocketEvent> for Echo {
        fn into_message(event: SocketEvent) -> SocketEvent {
            event
        }
    }
}
