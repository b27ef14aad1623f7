//! What a supervisor is told to run: child specs, restart types, shutdown policies, strategy
//! and restart intensity.

use std::any::Any;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::clock::Clock;
use crate::group::Group;
use crate::process::Process;

use super::child::{RunningChild, StartCx, SupervisedSupervisor, Worker};
use super::event::{EventSink, SupervisorEvent};
use super::process::Supervisor;

/// How a supervisor reacts when a child must be restarted (OTP's `strategy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// Restart only the child that terminated.
    OneForOne,
    /// Stop every other child (in reverse start order), then restart them all in start order.
    OneForAll,
    /// Stop the children started after the one that terminated (in reverse order), then
    /// restart it and them in start order.
    RestForOne,
    /// Dynamic children, all made from one [`ChildTemplate`] and started on demand with
    /// [`Addr::start_dynamic`](crate::Addr::start_dynamic); restarted one-for-one.
    SimpleOneForOne,
}

/// When a terminated child is restarted (OTP's `restart`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Restart {
    /// Always restarted, whatever the exit reason.
    Permanent,
    /// Restarted only after a failure; a normal exit (or a shutdown) leaves it stopped.
    Transient,
    /// Never restarted, not even when a sibling's failure restarts the others under
    /// one-for-all or rest-for-one; removed from the supervisor when it terminates.
    Temporary,
}

/// How a child is stopped (OTP's `shutdown`).
///
/// Whirl never interrupts a handler: stopping a worker is
/// [`Addr::exit`](crate::Addr::exit)`(ExitReason::Normal)`, which takes effect at the child's
/// next message boundary (a handler already running finishes first; its `terminated` hook
/// runs). There is no "forced" kill, so the timeout bounds how long the *supervisor* waits:
/// when it expires the supervisor reports [`EventKind::ShutdownTimedOut`](super::EventKind),
/// stops waiting and treats the child as gone. The exit request stays in place, so the child
/// terminates as soon as its running handler returns; until then it is an orphan that the
/// supervisor no longer tracks (a restart may run beside it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Shutdown {
    /// Wait at most this long for the child to terminate (workers default to 5 s, as in OTP).
    Timeout(Duration),
    /// Wait as long as it takes (the default for supervisors, whose subtree stops in order).
    Infinity,
}

/// Whether a child is a worker or a supervisor (OTP's `type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChildKind {
    /// Any process.
    Worker,
    /// A [`Supervisor`]; it is stopped by an ordered shutdown of its own subtree.
    Supervisor,
}

/// The factory: spawns a fresh incarnation, monitored by the supervisor.
pub(super) type StartFn = Arc<dyn Fn(&mut StartCx<'_>) -> Box<dyn RunningChild> + Send + Sync>;

/// How to start one child and how to treat it when it terminates.
///
/// The factory rebuilds the child's state from a known good state at every (re)start; it runs
/// on the supervisor's worker, so it should be quick (do slow setup in the child's `started`
/// hook).
///
/// ```
/// use std::time::Duration;
/// use whirl_runtime::{ChildSpec, Ctx, Failure, Process, Restart, Shutdown};
///
/// struct Cache;
/// impl Process for Cache {
///     type Message = ();
///     fn handle(&mut self, _: (), _: &mut Ctx<Self>) -> Result<(), Failure> {
///         Ok(())
///     }
/// }
///
/// let spec = ChildSpec::worker("cache", || Cache)
///     .restart(Restart::Transient)
///     .shutdown(Shutdown::Timeout(Duration::from_secs(1)))
///     .named("cache");
/// assert_eq!(spec.id(), "cache");
/// ```
#[derive(Clone)]
pub struct ChildSpec {
    pub(super) id: String,
    pub(super) restart: Restart,
    pub(super) shutdown: Shutdown,
    pub(super) kind: ChildKind,
    pub(super) group: Option<Group>,
    pub(super) name: Option<String>,
    pub(super) start: StartFn,
}

impl ChildSpec {
    /// A permanent worker with a 5 s shutdown timeout, made by `make` at every start.
    pub fn worker<P: Process>(
        id: impl Into<String>,
        make: impl Fn() -> P + Send + Sync + 'static,
    ) -> Self {
        let start: StartFn = Arc::new(move |cx: &mut StartCx<'_>| {
            let addr = cx.spawn(make());
            Box::new(Worker(addr)) as Box<dyn RunningChild>
        });
        ChildSpec {
            id: id.into(),
            restart: Restart::Permanent,
            shutdown: Shutdown::Timeout(Duration::from_secs(5)),
            kind: ChildKind::Worker,
            group: None,
            name: None,
            start,
        }
    }

    /// A permanent child supervisor, with an infinite shutdown timeout: stopping it stops its
    /// subtree in order first. `make` builds its spec at every start; a spec that sets no
    /// clock or event sink inherits the parent's.
    pub fn supervisor(
        id: impl Into<String>,
        make: impl Fn() -> SupervisorSpec + Send + Sync + 'static,
    ) -> Self {
        let start: StartFn = Arc::new(move |cx: &mut StartCx<'_>| {
            let mut spec = make();
            spec.clock = spec.clock.or_else(|| Some(Arc::clone(cx.clock)));
            spec.events = spec.events.or_else(|| cx.events.cloned());
            let addr = cx.spawn(Supervisor::new(spec));
            Box::new(SupervisedSupervisor(addr)) as Box<dyn RunningChild>
        });
        ChildSpec {
            id: id.into(),
            restart: Restart::Permanent,
            shutdown: Shutdown::Infinity,
            kind: ChildKind::Supervisor,
            group: None,
            name: None,
            start,
        }
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
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
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

impl fmt::Debug for ChildSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChildSpec")
            .field("id", &self.id)
            .field("restart", &self.restart)
            .field("shutdown", &self.shutdown)
            .field("kind", &self.kind)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

type TemplateFn =
    dyn Fn(Box<dyn Any + Send>) -> Result<ChildSpec, Box<dyn Any + Send>> + Send + Sync;

/// The one child spec of a [`Strategy::SimpleOneForOne`] supervisor: turns the argument given
/// to [`Addr::start_dynamic`](crate::Addr::start_dynamic) into a child spec (whose factory
/// keeps the argument, so restarts rebuild the same child).
#[derive(Clone)]
pub struct ChildTemplate {
    pub(super) make: Arc<TemplateFn>,
    pub(super) argument: &'static str,
}

impl ChildTemplate {
    /// A template taking arguments of type `A`.
    pub fn new<A: Send + 'static>(make: impl Fn(A) -> ChildSpec + Send + Sync + 'static) -> Self {
        ChildTemplate {
            make: Arc::new(move |arg: Box<dyn Any + Send>| {
                arg.downcast::<A>().map(|arg| make(*arg))
            }),
            argument: std::any::type_name::<A>(),
        }
    }
}

impl fmt::Debug for ChildTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ChildTemplate({})", self.argument)
    }
}

/// A supervisor's configuration: strategy, restart intensity, children, and where its events
/// go. Start it with `rt.spawn(Supervisor::new(spec))`, or under another supervisor with
/// [`ChildSpec::supervisor`].
#[must_use = "a supervisor spec does nothing until a `Supervisor` is spawned from it"]
pub struct SupervisorSpec {
    pub(super) name: String,
    pub(super) strategy: Strategy,
    pub(super) max_restarts: u32,
    pub(super) period: Duration,
    pub(super) clock: Option<Arc<dyn Clock>>,
    pub(super) events: Option<EventSink>,
    pub(super) children: Vec<ChildSpec>,
    pub(super) template: Option<ChildTemplate>,
}

impl SupervisorSpec {
    /// A one-for-one supervisor called `name` (for events and logs) with OTP's default
    /// intensity: at most 1 restart in 5 s.
    pub fn new(name: impl Into<String>) -> Self {
        SupervisorSpec {
            name: name.into(),
            strategy: Strategy::OneForOne,
            max_restarts: 1,
            period: Duration::from_secs(5),
            clock: None,
            events: None,
            children: Vec::new(),
            template: None,
        }
    }

    /// Sets the restart strategy.
    pub fn strategy(mut self, strategy: Strategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// At most `max_restarts` restarts within any `period`; one more and the supervisor stops
    /// its children and fails (escalating to its own supervisor).
    pub fn intensity(mut self, max_restarts: u32, period: Duration) -> Self {
        self.max_restarts = max_restarts;
        self.period = period;
        self
    }

    /// The clock the intensity period is measured with (default: the system clock, or the
    /// parent supervisor's). Tests pass a [`ManualClock`](crate::ManualClock).
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Some(Arc::new(clock));
        self
    }

    /// Calls `sink` with every [`SupervisorEvent`] (on the supervisor's worker: keep it quick).
    /// Child supervisors without a sink of their own inherit it.
    pub fn on_event(mut self, sink: impl Fn(&SupervisorEvent) + Send + Sync + 'static) -> Self {
        self.events = Some(Arc::new(sink));
        self
    }

    /// Adds a static child; children start in the order they are added and stop in reverse.
    pub fn child(mut self, child: ChildSpec) -> Self {
        self.children.push(child);
        self
    }

    /// The template of a [`Strategy::SimpleOneForOne`] supervisor.
    pub fn template(mut self, template: ChildTemplate) -> Self {
        self.template = Some(template);
        self
    }

    /// Checks the spec; the supervisor fails at start with this reason if it is invalid.
    pub(super) fn problem(&self) -> Option<String> {
        let name = &self.name;
        if self.strategy == Strategy::SimpleOneForOne {
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
                 for `Strategy::SimpleOneForOne`",
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
        }
        None
    }
}

impl fmt::Debug for SupervisorSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SupervisorSpec")
            .field("name", &self.name)
            .field("strategy", &self.strategy)
            .field("max_restarts", &self.max_restarts)
            .field("period", &self.period)
            .field("children", &self.children)
            .field("template", &self.template)
            .finish_non_exhaustive()
    }
}
