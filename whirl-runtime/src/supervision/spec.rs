//! What a supervisor is told to run: child specs (restart type, shutdown policy, backoff, name,
//! group, and the recipe that starts each incarnation, `recipe.rs`), and the supervisor's own
//! spec (strategy, restart intensity, children or template, clock and event sink).
//!
//! # Child specs are data
//!
//! OTP's child spec says how to start a child as data, `{Module, Function, Arguments}`, not as
//! a closure. whirl keeps that shape so that isolation survives restarts: everything a spec
//! moves into a child process is [`Isolated`] data, cloned afresh at every (re)start.
//!
//! * [`ChildSpec::worker`] keeps a known-good initial state `P: Isolated + Clone`;
//! * [`ChildSpec::worker_with`] keeps arguments `A: Isolated + Clone` and a plain function
//!   pointer `fn(A) -> P`, OTP's `{M, F, A}`;
//! * [`ChildSpec::supervisor`] keeps a [`SupervisorSpec`], itself made of child specs;
//! * a [`ChildTemplate`] keeps a function pointer `fn(A) -> ChildSpec`.
//!
//! A closure that captures nothing coerces to a function pointer; one that captures (an
//! `Arc<Mutex<_>>` the caller keeps a clone of, which every incarnation would then share) is a
//! compile error. So a [`ChildSpec`] is honestly `Isolated`, and so are the messages and errors
//! that carry one.
//!
//! The exceptions are the observers and policies that are not process state: a supervisor's
//! [`Clock`] and its event sink ([`SupervisorSpec::on_event`]) may share state (a test's
//! `ManualClock`, a metrics counter), because the user shares them on purpose and they never
//! reach a child's state. A spec holds them as [`SharedClient`]s, whirl's sanctioned and
//! greppable way of holding something shared on purpose, with the reason.

use std::any::Any;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use crate::group::Group;
use crate::isolation::Isolated;
use crate::isolation::SharedClient;
use crate::process::Process;
use crate::time::Clock;

use super::backoff::Backoff;
use super::event::{EventSink, SupervisorEvent};
use super::kinds::{AutoShutdown, ChildKind, Restart, RestartStrategy, Shutdown};
use super::recipe::{Apply, Initial, Spent, Start};

/// [`ChildSpec::supervisor`]: every incarnation runs a clone of the spec.
pub(super) struct Nested<A>(pub(super) SupervisorSpec<A>);

// SAFETY: the one field is a `SupervisorSpec`, which is `Isolated` (see its impl). (I8)
#[diagnostic::do_not_recommend]
unsafe impl<A: 'static> Isolated for Nested<A> {}

/// How to start one child and how to treat it when it terminates (OTP's child spec).
///
/// A spec is data: an initial state, or a start function and its arguments, or a supervisor
/// spec, all [`Isolated`]. The supervisor rebuilds the child from it at every (re)start, so a
/// restarted child begins again from a known good state. Building the state runs on the
/// supervisor's worker, so it should be quick (do slow or fallible setup in the child's
/// `started` hook, where a failure is an ordinary, restartable one).
///
/// ```
/// use std::time::Duration;
/// use whirl::supervision::{ChildSpec, Restart, Shutdown};
/// use whirl::prelude::*;
///
/// #[derive(Message)]
/// struct Poke;
///
/// #[process]
/// #[derive(Clone)]
/// struct Cache {
///     capacity: usize,
/// }
///
/// #[process]
/// impl Cache {
///     #[handle]
///     fn poke(&mut self, _: Poke) {}
/// }
///
/// let spec = ChildSpec::worker("cache", Cache { capacity: 1024 })
///     .restart(Restart::Transient)
///     .shutdown(Shutdown::Timeout(Duration::from_secs(1)))
///     .named("cache");
/// assert_eq!(spec.id(), "cache");
/// ```
pub struct ChildSpec {
    pub(super) id: String,
    pub(super) restart: Restart,
    pub(super) shutdown: Shutdown,
    pub(super) kind: ChildKind,
    pub(super) group: Option<Group>,
    /// A boxed `str`, not a `String`: eight bytes less in every spec, and in the errors that
    /// carry one (the backoff's box takes them).
    pub(super) name: Option<Box<str>>,
    pub(super) significant: bool,
    /// Boxed: a rare option, kept out of the size of every spec (and of the errors that
    /// carry one).
    pub(super) backoff: Option<Box<Backoff>>,
    pub(super) start: Box<dyn Start>,
}

// SAFETY: every field is `Isolated` (asserted below): strings, enums, a `Group` handle, a
// boxed backoff policy (plain data), and a `Box<dyn Start>`, `Isolated` through `Start`'s
// supertrait. Every `Start` is a function pointer (no data) plus `Isolated` values: an initial
// state, arguments, or a `SupervisorSpec`; nothing the caller keeps can be captured, since the
// constructors take no closures. (I8)
#[diagnostic::do_not_recommend]
unsafe impl Isolated for ChildSpec {}

const _: () = {
    fn assert_isolated<T: ?Sized + Isolated>() {}
    // Never called: naming the instances makes the compiler check each field's type.
    let _ = assert_isolated::<String>;
    let _ = assert_isolated::<Restart>;
    let _ = assert_isolated::<Shutdown>;
    let _ = assert_isolated::<ChildKind>;
    let _ = assert_isolated::<Option<Group>>;
    let _ = assert_isolated::<Option<Box<str>>>;
    let _ = assert_isolated::<bool>;
    let _ = assert_isolated::<Option<Box<Backoff>>>;
    let _ = assert_isolated::<Box<dyn Start>>;
};

/// What a supervisor takes as a child: a [`ChildSpec`], and only that.
///
/// It exists for its error: a closure given where a child spec is expected (`.child(move ||
/// Worker { .. })`) is refused with a note saying how to make a spec and where the captured
/// values go, not as a bare type mismatch.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a child spec",
    label = "expected a `ChildSpec`",
    note = "a child is `ChildSpec::worker(id, state)` (every restart starts from a clone of `state`) or `ChildSpec::worker_with(id, args, start)` (every restart runs `start(args.clone())`, with `start` a `fn`)",
    note = "a closure cannot be a child: pass what it would capture through `args` (which must be `Isolated`), so that no two incarnations share it"
)]
pub trait IntoChildSpec {
    /// The spec.
    fn into_child_spec(self) -> ChildSpec;
}

impl IntoChildSpec for ChildSpec {
    #[inline]
    fn into_child_spec(self) -> ChildSpec {
        self
    }
}

impl ChildSpec {
    fn new(id: impl Into<String>, kind: ChildKind, start: Box<dyn Start>) -> Self {
        ChildSpec {
            id: id.into(),
            restart: Restart::Permanent,
            shutdown: match kind {
                ChildKind::Worker => Shutdown::Timeout(Duration::from_secs(5)),
                ChildKind::Supervisor => Shutdown::Infinity,
            },
            kind,
            group: None,
            name: None,
            significant: false,
            backoff: None,
            start,
        }
    }

    /// A permanent worker with a 5 s shutdown timeout; every (re)start spawns a clone of
    /// `initial`, the known good state.
    ///
    /// `P: Isolated` because the spec moves `initial` into the supervisor and every clone of it
    /// into a child process (a `#[process]` state type is `Isolated`; add `#[derive(Clone)]`).
    pub fn worker<P: Process + Isolated + Clone>(id: impl Into<String>, initial: P) -> Self {
        ChildSpec::new(id, ChildKind::Worker, Box::new(Initial(initial)))
    }

    /// A permanent worker with a 5 s shutdown timeout; every (re)start spawns
    /// `start(args.clone())`: OTP's `{Module, Function, Arguments}`.
    ///
    /// `start` is a plain function pointer: a function, a constructor (`Session::new`), or a
    /// closure that captures nothing. Whatever the child needs comes through `args`, which are
    /// `Isolated` data the spec keeps for restarts, so no incarnation can share mutable state
    /// with the caller or with another incarnation. `P` needs no `Clone`: it is built afresh.
    ///
    /// ```
    /// use whirl::supervision::ChildSpec;
    /// use whirl::prelude::*;
    ///
    /// #[derive(Message)]
    /// struct Poke;
    ///
    /// #[process]
    /// struct Connection {
    ///     host: String,
    ///     port: u16,
    ///     sent: u64,
    /// }
    ///
    /// #[process]
    /// impl Connection {
    ///     #[handle]
    ///     fn poke(&mut self, _: Poke) {
    ///         self.sent += 1;
    ///     }
    /// }
    ///
    /// let spec = ChildSpec::worker_with("db", (String::from("db.local"), 5432), |(host, port)| {
    ///     Connection { host, port, sent: 0 }
    /// });
    /// assert_eq!(spec.id(), "db");
    /// ```
    ///
    /// A closure that captures shared state is refused: every incarnation would share it, and
    /// so would the caller.
    ///
    /// ```compile_fail,E0308
    /// use std::sync::{Arc, Mutex};
    /// use whirl::supervision::ChildSpec;
    /// use whirl::prelude::*;
    ///
    /// #[derive(Message)]
    /// struct Poke;
    ///
    /// #[process]
    /// struct Counter {
    ///     total: u64,
    /// }
    ///
    /// #[process]
    /// impl Counter {
    ///     #[handle]
    ///     fn poke(&mut self, _: Poke) {}
    /// }
    ///
    /// let shared = Arc::new(Mutex::new(0));
    /// let spec = ChildSpec::worker_with("counter", (), move |()| Counter {
    ///     total: *shared.lock().unwrap(), // error: closures can only be coerced to `fn`
    ///                                     // types if they do not capture any variables
    /// });
    /// ```
    // One line, so that rustc's note on a capturing closure ("associated function defined
    // here") shows `args` beside `start`: captured values go through `args`.
    pub fn worker_with<A, P>(id: impl Into<String>, args: A, start: fn(A) -> P) -> Self
    where
        A: Isolated + Clone,
        P: Process,
    {
        ChildSpec::new(id, ChildKind::Worker, Box::new(Apply { args, start }))
    }

    /// A permanent child supervisor, with an infinite shutdown timeout: stopping it stops its
    /// subtree in order first. Every (re)start runs a clone of `spec`; a spec that sets no
    /// clock or event sink inherits the parent's.
    pub fn supervisor<A: 'static>(id: impl Into<String>, spec: SupervisorSpec<A>) -> Self {
        ChildSpec::new(id, ChildKind::Supervisor, Box::new(Nested(spec)))
    }

    /// Sets the restart type.
    pub fn restart(mut self, restart: Restart) -> Self {
        self.restart = restart;
        self
    }

    /// Sets the shutdown policy.
    pub fn shutdown(mut self, shutdown: Shutdown) -> Self {
        self.shutdown = shutdown;
        self
    }

    /// Runs the child in `group` (default: the group the process declares, else the
    /// supervisor's).
    pub fn in_group(mut self, group: &Group) -> Self {
        self.group = Some(group.clone());
        self
    }

    /// Registers every incarnation as `name`, so clients reach the current one with
    /// [`Runtime::whereis`](crate::Runtime::whereis) (the name is re-pointed at each restart).
    ///
    /// The supervisor never takes a name from another live process: if one holds it, the
    /// start fails with [`SupervisorError::NameTaken`](crate::supervision::SupervisorError::NameTaken),
    /// which carries the holder's id (OTP's `{already_started, Pid}`), and the name stays
    /// where it is.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into().into_boxed_str());
        self
    }

    /// Marks the child *significant* (OTP 24): when it terminates on its own and is not
    /// restarted, the supervisor's [`AutoShutdown`] policy may shut the supervisor down.
    /// Only a transient or temporary child can be significant, and only under a supervisor
    /// whose policy is not [`AutoShutdown::Never`]; anything else is a spec error.
    pub fn significant(mut self, significant: bool) -> Self {
        self.significant = significant;
        self
    }

    /// Restarts the child after growing delays instead of at once, for failures that come
    /// from outside it (an outage of a database it connects to): see [`Backoff`]. Its restarts
    /// are then not counted against the supervisor's restart intensity; the
    /// [module documentation](crate::supervision#riding-out-outages-restart-with-backoff)
    /// gives the exact rule.
    ///
    /// ```
    /// use std::time::Duration;
    /// use whirl::supervision::{Backoff, ChildSpec};
    /// use whirl::prelude::*;
    ///
    /// #[derive(Message)]
    /// struct Query;
    ///
    /// #[process]
    /// #[derive(Clone)]
    /// struct Db;
    ///
    /// #[process]
    /// impl Db {
    ///     #[handle]
    ///     fn query(&mut self, _: Query) {}
    /// }
    ///
    /// let spec = ChildSpec::worker("db", Db).backoff(
    ///     Backoff::exponential(Duration::from_millis(100), Duration::from_secs(30)).jitter(0.2),
    /// );
    /// assert_eq!(spec.backoff_policy().unwrap().delay(2), Duration::from_millis(200));
    /// ```
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = Some(Box::new(backoff));
        self
    }

    /// The child's backoff policy, if its restarts are delayed.
    pub fn backoff_policy(&self) -> Option<Backoff> {
        self.backoff.as_deref().copied()
    }

    /// Whether the child is significant.
    pub fn is_significant(&self) -> bool {
        self.significant
    }

    /// The name every incarnation is registered under, if any.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The shutdown policy.
    pub fn shutdown_policy(&self) -> Shutdown {
        self.shutdown
    }

    /// The child's id, unique among its supervisor's static children.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The child's restart type.
    pub fn restart_type(&self) -> Restart {
        self.restart
    }

    /// Worker or supervisor.
    pub fn kind(&self) -> ChildKind {
        self.kind
    }
}

impl Clone for ChildSpec {
    fn clone(&self) -> Self {
        ChildSpec {
            id: self.id.clone(),
            restart: self.restart,
            shutdown: self.shutdown,
            kind: self.kind,
            group: self.group.clone(),
            name: self.name.clone(),
            significant: self.significant,
            backoff: self.backoff.clone(),
            start: self.start.clone_box(),
        }
    }
}

impl fmt::Debug for ChildSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChildSpec")
            .field("id", &self.id)
            .field("restart", &self.restart)
            .field("shutdown", &self.shutdown)
            .field("kind", &self.kind)
            .field("name", &self.name)
            .field("significant", &self.significant)
            .field("backoff", &self.backoff)
            .finish_non_exhaustive()
    }
}

impl ChildSpec {
    /// Drops a temporary child's recipe once the child runs (see [`Spent`]).
    pub(super) fn spend_if_temporary(&mut self) {
        if self.restart == Restart::Temporary {
            self.start = Box::new(Spent);
        }
    }

    /// What is wrong with this child under a supervisor with `auto_shutdown`, if anything.
    pub(super) fn problem(&self, auto_shutdown: AutoShutdown) -> Option<String> {
        let id = &self.id;
        if let Some(problem) = self.backoff.as_deref().and_then(Backoff::problem) {
            return Some(format!("child `{id}`: {problem}"));
        }
        if !self.significant {
            return None;
        }
        if self.restart == Restart::Permanent {
            return Some(format!(
                "child `{id}` is significant and permanent; only transient and temporary \
                 children can be significant"
            ));
        }
        if auto_shutdown == AutoShutdown::Never {
            return Some(format!(
                "child `{id}` is significant, but the supervisor's auto-shutdown is `Never`"
            ));
        }
        None
    }
}

/// An [`Isolated`] value whose type is erased on its way through the supervisor's message
/// queue: the argument of [`StartDynamic`](super::StartDynamic). The typed API guarantees it
/// is of the template's argument type; the supervisor downcasts it back.
///
/// `Isolated` is a supertrait, so a `Box<dyn IsolatedAny>` is `Isolated` by the impl for `Box`,
/// and a message carrying one honestly is.
pub(super) trait IsolatedAny: Isolated {
    /// For the downcast to the template's argument type.
    fn into_any(self: Box<Self>) -> Box<dyn Any + Send>;
}

impl<T: Isolated> IsolatedAny for T {
    fn into_any(self: Box<Self>) -> Box<dyn Any + Send> {
        self
    }
}

/// The type argument of a [`SupervisorSpec`] and a [`Supervisor`](super::Supervisor) that have no
/// [`ChildTemplate`]: static children only. It has no values and is not [`Isolated`], so
/// `start_dynamic` cannot be called on such a supervisor (a compile error, not a run-time
/// refusal).
#[derive(Debug)]
pub enum NoTemplate {}

/// The one child spec of a [`RestartStrategy::SimpleOneForOne`] supervisor: turns the argument given
/// to [`Addr::start_dynamic`](crate::Addr::start_dynamic) into a child spec.
///
/// Like a [`ChildSpec`], it is data: a plain function pointer `fn(A) -> ChildSpec` (a closure
/// that captures nothing coerces to one). The argument moves into the spec it returns (as the
/// worker's initial state, or as the arguments of [`ChildSpec::worker_with`]), and the spec
/// is what restarts the child, so a restarted child is rebuilt from the same argument.
///
/// The argument type is part of the supervisor's type: a spec with a `ChildTemplate<A>` is a
/// `SupervisorSpec<A>`, it runs as a `Supervisor<A>`, and `Addr<Supervisor<A>>::start_dynamic`
/// takes an `A`, checked by the compiler. A child supervisor started by a parent is found by
/// name with that type too: `rt.whereis::<Supervisor<String>>("sessions")`.
///
/// ```
/// use whirl::supervision::{ChildSpec, ChildTemplate};
/// use whirl::prelude::*;
/// use whirl::supervision::{Restart, RestartStrategy, Supervisor, SupervisorSpec};
/// use whirl::Runtime;
///
/// #[derive(Message)]
/// struct Poke;
///
/// #[process]
/// #[derive(Clone)]
/// struct Session {
///     user: String,
/// }
///
/// #[process]
/// impl Session {
///     #[handle]
///     fn poke(&mut self, _: Poke) {}
/// }
///
/// let rt = Runtime::new();
/// let sessions = rt.spawn(Supervisor::new(
///     SupervisorSpec::new("sessions")
///         .strategy(RestartStrategy::SimpleOneForOne)
///         .template(ChildTemplate::new(|user: String| {
///             let name = format!("session:{user}");
///             ChildSpec::worker("session", Session { user })
///                 .restart(Restart::Transient)
///                 .named(name)
///         })),
/// ));
/// sessions.start_dynamic(String::from("alice")).unwrap();
/// assert!(rt.whereis::<Session>("session:alice").is_some());
/// rt.shutdown_graceful();
/// ```
///
/// An argument of another type does not compile:
///
/// ```compile_fail,E0308
/// use whirl::supervision::{ChildSpec, ChildTemplate};
/// use whirl::prelude::*;
/// use whirl::Runtime;
/// use whirl::supervision::{RestartStrategy, Supervisor, SupervisorSpec};
/// #[process]
/// #[derive(Clone)]
/// struct Counter(u64);
/// #[process]
/// impl Counter {}
/// let rt = Runtime::new();
/// let counters = rt.spawn(Supervisor::new(
///     SupervisorSpec::new("counters")
///         .strategy(RestartStrategy::SimpleOneForOne)
///         .template(ChildTemplate::new(|start: u64| ChildSpec::worker("c", Counter(start)))),
/// ));
/// counters.start_dynamic(7_i32); // error: expected `u64`, found `i32`
/// ```
///
/// Nor does `start_dynamic` on a supervisor without a template:
///
/// ```compile_fail,E0599
/// use whirl::Runtime;
/// use whirl::supervision::{Supervisor, SupervisorSpec};
/// let rt = Runtime::new();
/// let sup = rt.spawn(Supervisor::new(SupervisorSpec::new("static")));
/// sup.start_dynamic(7_u64); // error: `NoTemplate` is not `u64`
/// ```
pub struct ChildTemplate<A> {
    pub(super) make: fn(A) -> ChildSpec,
}

impl<A> Clone for ChildTemplate<A> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<A> Copy for ChildTemplate<A> {}

// SAFETY: a function pointer holds no data (`fn(A) -> ChildSpec` is `Send`, `Sync`, and
// `'static` with `A`). (I8)
#[diagnostic::do_not_recommend]
unsafe impl<A: 'static> Isolated for ChildTemplate<A> {}

impl<A: Isolated> ChildTemplate<A> {
    /// A template taking arguments of type `A`; `start` makes the child spec for each one.
    ///
    /// `A: Isolated` because the argument travels in a message to the supervisor and then
    /// into the child it starts.
    pub fn new(start: fn(A) -> ChildSpec) -> Self {
        ChildTemplate { make: start }
    }
}

impl<A> fmt::Debug for ChildTemplate<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ChildTemplate<{}>", std::any::type_name::<A>())
    }
}

/// Why a supervisor may hold a clock the user gave it.
pub(super) const CLOCK_SHARED: &str = "a supervisor's clock: a source of time the user chose to \
     share (a test's `ManualClock`), read to measure restart intensity; not process state";

/// Why a supervisor may hold an event sink the user gave it.
pub(super) const EVENTS_SHARED: &str = "a supervisor's event sink: an observer the user chose \
     to share (metrics, logs, a test's channel); it is given copies of events, never state";

/// A supervisor's configuration: strategy, restart intensity, children, and where its events
/// go. Start it with `rt.spawn(Supervisor::new(spec))`, or under another supervisor with
/// [`ChildSpec::supervisor`].
///
/// It is data, like the child specs it holds: a parent supervisor keeps it and starts a clone
/// at every restart of the child supervisor. Its clock and event sink are the exception, and
/// are shared with every clone on purpose (see [`SupervisorSpec::clock`] and
/// [`SupervisorSpec::on_event`]).
///
/// `A` is the argument type of its [`ChildTemplate`], if it has one (see
/// [`SupervisorSpec::template`]); [`NoTemplate`] otherwise.
#[must_use = "a supervisor spec does nothing until a `Supervisor` is spawned from it"]
pub struct SupervisorSpec<A = NoTemplate> {
    pub(super) name: String,
    pub(super) strategy: RestartStrategy,
    pub(super) max_restarts: u32,
    pub(super) period: Duration,
    pub(super) auto_shutdown: AutoShutdown,
    pub(super) clock: Option<SharedClient<Arc<dyn Clock>>>,
    pub(super) events: Option<SharedClient<EventSink>>,
    pub(super) children: Vec<ChildSpec>,
    pub(super) template: Option<ChildTemplate<A>>,
    pub(super) argument: PhantomData<fn() -> A>,
}

// SAFETY: every field is `Isolated` (asserted below): owned data, child specs and a template
// (data, see their impls), a `PhantomData` of a function pointer type (no data), and the clock
// and event sink as `SharedClient`s. Those two are shared on purpose: observers and policies
// the user chose to share, which the supervisor only reads or calls and which never reach a
// child's state (see `CLOCK_SHARED` and `EVENTS_SHARED`). (I8)
#[diagnostic::do_not_recommend]
unsafe impl<A: 'static> Isolated for SupervisorSpec<A> {}

const _: () = {
    fn assert_isolated<T: ?Sized + Isolated>() {}
    let _ = assert_isolated::<String>;
    let _ = assert_isolated::<RestartStrategy>;
    let _ = assert_isolated::<u32>;
    let _ = assert_isolated::<Duration>;
    let _ = assert_isolated::<AutoShutdown>;
    let _ = assert_isolated::<Option<SharedClient<Arc<dyn Clock>>>>;
    let _ = assert_isolated::<Option<SharedClient<EventSink>>>;
    let _ = assert_isolated::<Vec<ChildSpec>>;
    let _ = assert_isolated::<Option<ChildTemplate<u64>>>;
};

impl<A> Clone for SupervisorSpec<A> {
    fn clone(&self) -> Self {
        SupervisorSpec {
            name: self.name.clone(),
            strategy: self.strategy,
            max_restarts: self.max_restarts,
            period: self.period,
            auto_shutdown: self.auto_shutdown,
            clock: self.clock.clone(),
            events: self.events.clone(),
            children: self.children.clone(),
            template: self.template,
            argument: PhantomData,
        }
    }
}

impl SupervisorSpec {
    /// A one-for-one supervisor called `name` (for events and logs) with OTP's default
    /// intensity: at most 1 restart in 5 s.
    pub fn new(name: impl Into<String>) -> Self {
        SupervisorSpec {
            name: name.into(),
            strategy: RestartStrategy::OneForOne,
            max_restarts: 1,
            period: Duration::from_secs(5),
            auto_shutdown: AutoShutdown::Never,
            clock: None,
            events: None,
            children: Vec::new(),
            template: None,
            argument: PhantomData,
        }
    }
}

impl<A> SupervisorSpec<A> {
    /// Sets the restart strategy.
    pub fn strategy(mut self, strategy: RestartStrategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// At most `max_restarts` restarts within any `period`; one more and the supervisor stops
    /// its children and fails (escalating to its own supervisor). `period` must be positive
    /// (as in OTP): a zero period would make every restart the only one in its period, that is
    /// unlimited restarts, so the supervisor refuses it at start.
    pub fn intensity(mut self, max_restarts: u32, period: Duration) -> Self {
        self.max_restarts = max_restarts;
        self.period = period;
        self
    }

    /// When the supervisor shuts itself down because its significant children terminated
    /// (OTP 24's `auto_shutdown`; default [`AutoShutdown::Never`]). It stops its other
    /// children in reverse order and exits [`ExitReason::Shutdown`](crate::ExitReason), which
    /// its own supervisor does not treat as a failure (a transient parent entry is not
    /// restarted).
    pub fn auto_shutdown(mut self, auto_shutdown: AutoShutdown) -> Self {
        self.auto_shutdown = auto_shutdown;
        self
    }

    /// The clock the intensity period is measured with (default: the system clock, or the
    /// parent supervisor's). Tests pass a [`ManualClock`](crate::time::ManualClock).
    ///
    /// The clock may share state (clones of a `ManualClock` share their time): it is a policy
    /// the supervisor reads, not process state, and every clone of this spec, and every child
    /// supervisor that sets none, uses the same one. [`Clock`] is `Send + Sync + 'static`
    /// because the supervisor reads it from whichever worker runs it, for as long as it lives.
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Some(SharedClient::new(Arc::new(clock), CLOCK_SHARED));
        self
    }

    /// Calls `sink` with every [`SupervisorEvent`] (on the supervisor's worker: keep it quick).
    /// Child supervisors without a sink of their own inherit it.
    ///
    /// The sink may share state (a metrics counter, a channel to a test): it is an observer,
    /// not process state, and it is given copies of events, never the supervisor's state. It
    /// must be `Send + Sync + 'static` because every clone of this spec and every child
    /// supervisor that inherits it calls the same sink, from whichever worker runs them.
    pub fn on_event(mut self, sink: impl Fn(&SupervisorEvent) + Send + Sync + 'static) -> Self {
        let sink: EventSink = Arc::new(sink);
        self.events = Some(SharedClient::new(sink, EVENTS_SHARED));
        self
    }

    /// Adds a static child; children start in the order they are added and stop in reverse.
    pub fn child(mut self, child: impl IntoChildSpec) -> Self {
        self.children.push(child.into_child_spec());
        self
    }

    /// The template of a [`RestartStrategy::SimpleOneForOne`] supervisor. Its argument type becomes
    /// the spec's (and the supervisor's) type argument, so `start_dynamic` is typed.
    pub fn template<B: Isolated>(self, template: ChildTemplate<B>) -> SupervisorSpec<B> {
        SupervisorSpec {
            name: self.name,
            strategy: self.strategy,
            max_restarts: self.max_restarts,
            period: self.period,
            auto_shutdown: self.auto_shutdown,
            clock: self.clock,
            events: self.events,
            children: self.children,
            template: Some(template),
            argument: PhantomData,
        }
    }

    /// Checks the spec; the supervisor fails at start with this reason if it is invalid.
    pub(super) fn problem(&self) -> Option<String> {
        let name = &self.name;
        if self.period.is_zero() {
            return Some(format!(
                "supervisor `{name}` has a restart intensity period of zero; it must be \
                 positive (a zero period would allow unlimited restarts)"
            ));
        }
        if self.strategy == RestartStrategy::SimpleOneForOne {
            if !self.children.is_empty() {
                return Some(format!(
                    "simple-one-for-one supervisor `{name}` has static children; give it a \
                     template and start children with `start_dynamic`"
                ));
            }
            if self.template.is_none() {
                return Some(format!(
                    "simple-one-for-one supervisor `{name}` has no child template"
                ));
            }
        } else if self.template.is_some() {
            return Some(format!(
                "supervisor `{name}` has a child template but strategy {:?}; templates are \
                 for `RestartStrategy::SimpleOneForOne`",
                self.strategy
            ));
        }
        for (i, child) in self.children.iter().enumerate() {
            if self.children[..i].iter().any(|c| c.id == child.id) {
                return Some(format!(
                    "supervisor `{name}` has two children with id `{}`",
                    child.id
                ));
            }
            if let Some(problem) = child.problem(self.auto_shutdown) {
                return Some(format!("supervisor `{name}`: {problem}"));
            }
        }
        None
    }
}

impl<A> fmt::Debug for SupervisorSpec<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SupervisorSpec")
            .field("name", &self.name)
            .field("strategy", &self.strategy)
            .field("max_restarts", &self.max_restarts)
            .field("period", &self.period)
            .field("auto_shutdown", &self.auto_shutdown)
            .field("children", &self.children)
            .field("template", &self.template)
            .finish_non_exhaustive()
    }
}
