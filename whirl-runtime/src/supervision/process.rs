//! The supervisor process: its state, how it starts a child, and its message loop.
//!
//! A reader follows a failure through the files: `restart.rs` decides what a child's `Down`
//! leads to (restart type, intensity or backoff, strategy, auto-shutdown); `delayed.rs` waits
//! out a backoff's delay on the runtime's timers; `stop.rs` stops children in
//! reverse order without blocking the worker, then restarts them, answers, or ends the
//! supervisor; `requests.rs` answers the dynamic API. [`Supervisor::dispatch`] defers requests
//! while a stop operation runs and replays them after, in order.

use std::collections::VecDeque;
use std::sync::{Arc, Weak};

use crate::control::Supervision;
use crate::group::observe;
use crate::isolation::SharedClient;
use crate::lifecycle::{Down, ExitReason, Failure, ProcessId};
use crate::process::Process;
use crate::process::{Addr, Ctx, Sender, Watcher};
use crate::time::{Clock, SystemClock, TimerHandle};

use super::backoff::{Attempts, Jitter};
use super::error::SupervisorError;
use super::event::{emit, EventKind, EventSink, SupervisorEvent};
use super::info::AnyAddr;
use super::intensity::Intensity;
use super::kinds::ChildRef;
use super::kinds::{AutoShutdown, Restart, RestartStrategy};
use super::listing;
use super::message::{Msg, Reply, SupervisorMsg};
use super::recipe::Start;
use super::spec::{
    ChildSpec, ChildTemplate, Nested, NoTemplate, SupervisorSpec, CLOCK_SHARED, EVENTS_SHARED,
};
use super::start::{RunningChild, StartCx, StartError};
use super::stop_op::{StopOp, Then};

/// A supervisor (OTP's `supervisor` behaviour): a system process that starts children from
/// [`ChildSpec`]s, monitors them, and restarts them by its [`RestartStrategy`], within its restart
/// intensity. See the [module documentation](crate::supervision) for the semantics.
///
/// `A` is the argument type of its [`ChildTemplate`] (a simple-one-for-one supervisor), or
/// [`NoTemplate`]: `Addr<Supervisor<A>>::start_dynamic` takes an `A`.
///
/// ```
/// use whirl::supervision::ChildSpec;
/// use whirl::prelude::*;
/// use whirl::Runtime;
/// use whirl::supervision::{Supervisor, SupervisorSpec};
///
/// #[derive(Message)]
/// struct Poke;
///
/// #[process]
/// #[derive(Clone)]
/// struct Worker;
///
/// #[process]
/// impl Worker {
///     #[handle]
///     fn poke(&mut self, _: Poke) {}
/// }
///
/// let rt = Runtime::new();
/// let sup = rt.spawn(Supervisor::new(
///     SupervisorSpec::new("root").child(ChildSpec::worker("worker", Worker)),
/// ));
/// let children = sup.which_children().unwrap();
/// assert_eq!(children[0].id, "worker");
/// let worker = children[0].addr::<Worker>().expect("a running `Worker`");
/// assert_eq!(Some(worker.id()), children[0].pid);
/// assert!(children[0].addr::<Supervisor>().is_none(), "checked, not trusted");
/// ```
pub struct Supervisor<A = NoTemplate> {
    pub(super) name: Arc<str>,
    pub(super) strategy: RestartStrategy,
    pub(super) intensity: Intensity,
    pub(super) auto_shutdown: AutoShutdown,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) events: Option<EventSink>,
    pub(super) template: Option<ChildTemplate<A>>,
    /// The spec's children, until `started` starts them; the spec's problem, if any.
    pub(super) initial: Vec<ChildSpec>,
    pub(super) problem: Option<String>,
    pub(super) children: Vec<Entry>,
    pub(super) next_key: u64,
    pub(super) op: Option<StopOp>,
    pub(super) deferred: VecDeque<Msg>,
    pub(super) epoch: u64,
    pub(super) restarts: u64,
    /// The last token given to a delayed restart, and the timers of those still to come.
    pub(super) next_due: u64,
    pub(super) delayed: Vec<(u64, TimerHandle)>,
    pub(super) jitter: Jitter,
    /// Set once the supervisor has decided to terminate: nothing more is started.
    pub(super) exiting: bool,
    pub(super) pid: Option<ProcessId>,
}

/// A child the supervisor knows, running or not.
pub(super) struct Entry {
    pub(super) key: u64,
    pub(super) spec: ChildSpec,
    pub(super) running: Option<Box<dyn RunningChild>>,
    /// The latest incarnation, running or not (to release its name, and only its name).
    pub(super) last_pid: Option<ProcessId>,
    pub(super) restarts: u64,
    /// Its incarnations that failed (shown by `Runtime::process_info`).
    pub(super) failures: u64,
    /// Its failures in a row and the delayed restart it waits for, under a backoff.
    pub(super) attempts: Attempts,
    pub(super) dynamic: bool,
    /// A synchronous start waiting for the running incarnation's `started` hook.
    pub(super) awaiting: Option<Awaiting>,
}

/// A caller waiting for a child's start to be confirmed.
pub(super) struct Awaiting {
    pub(super) reply: Reply<ProcessId>,
    /// A new child (`start_child`, `start_dynamic`) is forgotten if its start fails; a
    /// restarted one (`restart_child`) stays, stopped.
    pub(super) forget_on_failure: bool,
}

impl Entry {
    pub(super) fn pid(&self) -> Option<ProcessId> {
        self.running.as_ref().map(|c| c.id())
    }

    /// Removed, rather than kept stopped, once it terminates.
    pub(super) fn removed_when_stopped(&self) -> bool {
        self.dynamic || self.spec.restart == Restart::Temporary
    }

    /// Answers a caller waiting for this child's start, now that it has terminated.
    pub(super) fn start_failed(&mut self, reason: &ExitReason) {
        if let Some(awaiting) = self.awaiting.take() {
            let _ = awaiting.reply.send(Err(SupervisorError::StartFailed {
                id: self.spec.id.clone(),
                reason: reason.clone(),
            }));
        }
    }
}

impl<A: 'static> Supervisor<A> {
    /// A supervisor that will run `spec` once spawned. An invalid spec (duplicate ids, a
    /// template without [`RestartStrategy::SimpleOneForOne`], a zero intensity period...) makes it
    /// fail at start, saying why.
    pub fn new(spec: SupervisorSpec<A>) -> Self {
        let problem = spec.problem();
        Supervisor {
            name: Arc::from(spec.name.as_str()),
            strategy: spec.strategy,
            intensity: Intensity::new(spec.max_restarts, spec.period),
            auto_shutdown: spec.auto_shutdown,
            clock: match spec.clock {
                Some(clock) => SharedClient::into_inner(clock),
                None => Arc::new(SystemClock),
            },
            events: spec.events.map(SharedClient::into_inner),
            template: spec.template,
            initial: spec.children,
            problem,
            children: Vec::new(),
            next_key: 0,
            op: None,
            deferred: VecDeque::new(),
            epoch: 0,
            restarts: 0,
            next_due: 0,
            delayed: Vec::new(),
            jitter: Jitter::new(),
            exiting: false,
            pid: None,
        }
    }

    pub(super) fn emit(&self, kind: EventKind) {
        let event = SupervisorEvent {
            supervisor: Arc::clone(&self.name),
            supervisor_pid: self.pid.unwrap_or(ProcessId(0)),
            kind,
        };
        emit(self.events.as_ref(), event);
    }

    pub(super) fn index_of_key(&self, key: u64) -> Option<usize> {
        self.children.iter().position(|e| e.key == key)
    }

    pub(super) fn index_of_pid(&self, pid: ProcessId) -> Option<usize> {
        self.children.iter().position(|e| e.pid() == Some(pid))
    }

    pub(super) fn index_of(&self, child: &ChildRef) -> Option<usize> {
        match child {
            ChildRef::Id(id) => self.children.iter().position(|e| &e.spec.id == id),
            ChildRef::Pid(pid) => self.index_of_pid(*pid),
        }
    }

    pub(super) fn add(&mut self, spec: ChildSpec, dynamic: bool) -> usize {
        self.next_key += 1;
        self.children.push(Entry {
            key: self.next_key,
            spec,
            running: None,
            last_pid: None,
            restarts: 0,
            failures: 0,
            attempts: Attempts::default(),
            dynamic,
            awaiting: None,
        });
        self.children.len() - 1
    }

    /// Starts a new incarnation of child `index`. With `confirm`, the child reports when its
    /// `started` hook has succeeded (a [`Msg::Started`]): for a synchronous start, whose
    /// caller the requester records in the entry's `awaiting` (answered with the failure
    /// instead if the child terminates first).
    pub(super) fn start(
        &mut self,
        index: usize,
        restarting: bool,
        confirm: bool,
        ctx: &Ctx<Self>,
    ) -> Result<ProcessId, SupervisorError> {
        let on_started = confirm.then(|| {
            let me = Arc::downgrade(ctx.cell());
            Box::new(move |pid| {
                if let Some(cell) = me.upgrade() {
                    cell.deliver_unadmitted(SupervisorMsg(Msg::Started(pid)), observe::UNOBSERVED);
                }
            }) as crate::process::OnStarted
        });
        let entry = &self.children[index];
        let spec = &entry.spec;
        let mut cx = StartCx {
            home: &ctx.cell().group,
            principal: ctx.principal().cloned(),
            watcher: ctx.watcher(),
            group: spec.group.as_ref(),
            name: spec.name.as_deref(),
            previous: entry.last_pid,
            on_started,
            clock: &self.clock,
            events: self.events.as_ref(),
        };
        let child = spec.start.start(&mut cx).map_err(|e| match e {
            StartError::NameTaken(crate::group::NameError::Taken { name, holder }) => {
                SupervisorError::NameTaken {
                    id: spec.id.clone(),
                    name,
                    holder,
                }
            }
            StartError::Spent => SupervisorError::StartFailed {
                id: spec.id.clone(),
                reason: ExitReason::Failed(Failure::new(StartError::Spent.to_string())),
            },
        })?;
        let pid = child.id();
        let entry = &mut self.children[index];
        if entry.spec.backoff.is_some() {
            entry.attempts.started(self.clock.now());
        }
        entry.running = Some(child);
        entry.last_pid = Some(pid);
        entry.spec.spend_if_temporary();
        let id = entry.spec.id.clone();
        if restarting {
            entry.restarts += 1;
        }
        let supervision = Supervision {
            supervisor: ctx.cell().id(),
            child: id.clone(),
            restarts: entry.restarts,
            failures: entry.failures,
        };
        note_child(ctx, pid, supervision);
        if restarting {
            let restarts = self.children[index].restarts;
            self.emit(EventKind::ChildRestarted { id, pid, restarts });
        } else {
            self.emit(EventKind::ChildStarted { id, pid });
        }
        Ok(pid)
    }

    /// Restarts child `index` for the strategy; if it cannot start (its name is held by
    /// another process), tries again later: at once, each attempt a restart against the
    /// intensity, or, under a backoff, after the next delay, as one more failure in a row.
    pub(super) fn restart(&mut self, index: usize, ctx: &mut Ctx<Self>) {
        if let Err(error) = self.start(index, true, false, ctx) {
            tracing::warn!(supervisor = %self.name, %error, "restart failed; trying again");
            let key = self.children[index].key;
            if self.children[index].spec.backoff.is_some() {
                self.restart_with_backoff(index, vec![key], ctx);
            } else {
                let _ = ctx.myself().post(SupervisorMsg(Msg::Retry(key)));
            }
        }
    }

    pub(super) fn dispatch(&mut self, msg: Msg, ctx: &mut Ctx<Self>) {
        match msg {
            Msg::Down(down) => self.on_down(down, ctx),
            Msg::Started(pid) => self.on_started(pid),
            Msg::StopTimeout(epoch) => self.on_stop_timeout(epoch, ctx),
            // Dropped once exiting: the callers' reply handles drop with them (`NoReply`).
            _ if self.exiting => {}
            msg if self.op.is_some() => self.deferred.push_back(msg),
            Msg::Shutdown => {
                let all = self.children.iter().map(|e| e.key).collect();
                self.stop(all, Then::Exit(ExitReason::Shutdown), ctx);
            }
            Msg::Retry(key) => self.on_retry(key, ctx),
            Msg::RestartDue(token) => self.on_restart_due(token, ctx),
            Msg::Request(request) => self.on_request(request, ctx),
        }
    }

    /// A child started synchronously has run its `started` hook: answer the caller.
    fn on_started(&mut self, pid: ProcessId) {
        let Some(index) = self.index_of_pid(pid) else {
            return; // stopped (and answered) meanwhile
        };
        if let Some(awaiting) = self.children[index].awaiting.take() {
            let _ = awaiting.reply.send(Ok(pid));
        }
    }

    /// Replays deferred messages until one starts another stop operation.
    pub(super) fn replay(&mut self, ctx: &mut Ctx<Self>) {
        while self.op.is_none() && !self.exiting {
            let Some(msg) = self.deferred.pop_front() else {
                return;
            };
            self.dispatch(msg, ctx);
        }
    }
}

// SAFETY: the message is `SupervisorMsg`, `Isolated` (see its impl). The state is
// * owned data: the name (an immutable `Arc<str>`), strategy, intensity window, counters,
//   keys, backoff attempts and restart tokens, the jitter's seed, the spec's problem,
//   deferred messages (`SupervisorMsg`s), reply handles of callers waiting for a start, and
//   the stop operation's queue and reply handle;
// * child specs and the template: data (initial states, function pointers and arguments,
//   supervisor specs), `Isolated` by their impls; children are spawned from clones of them;
// * the running children as `Addr`s (inside `Box<dyn RunningChild>`) and the `TimerHandle`s
//   of the shutdown timer and of delayed restarts: runtime handles that grant no access to
//   another process's state;
// * the clock and the event sink, which the user may share on purpose (a test's
//   `ManualClock`, a metrics counter): observers and policies, not process state. The
//   supervisor only reads the clock and hands the sink copies of its events; neither reaches
//   a child's state, and the spec holds them as `SharedClient`s, with the reason (I8).
#[diagnostic::do_not_recommend]
unsafe impl<A: 'static> Process for Supervisor<A> {
    type Message = SupervisorMsg;

    /// Starts the children in order (each spawn returns at once; their `started` hooks run
    /// on workers, possibly side by side). A child that cannot be spawned at all (its name
    /// is held by another process) fails the supervisor's start, as in OTP, after stopping
    /// the children already started.
    fn started(&mut self, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        self.pid = Some(ctx.id());
        if let Some(problem) = self.problem.take() {
            return Err(Failure::new(problem));
        }
        for spec in std::mem::take(&mut self.initial) {
            let index = self.add(spec, false);
            if let Err(error) = self.start(index, false, false, ctx) {
                let failure = Failure::new(format!(
                    "supervisor `{}` failed to start its children: {error}",
                    self.name
                ));
                let all = self.children.iter().map(|e| e.key).collect();
                self.stop(all, Then::Exit(ExitReason::Failed(failure)), ctx);
                break;
            }
        }
        Ok(())
    }

    fn handle(
        &mut self,
        SupervisorMsg(msg): SupervisorMsg,
        ctx: &mut Ctx<Self>,
    ) -> Result<(), Failure> {
        self.dispatch(msg, ctx);
        Ok(())
    }

    /// Whatever ended the supervisor, no child outlives it untold: any still running is
    /// asked to stop (in reverse start order, without waiting: the orderly path is the
    /// `Shutdown` message). Then the termination is reported, a failure as an error log.
    fn terminated(&mut self, reason: &ExitReason) {
        for (_, timer) in self.delayed.drain(..) {
            timer.cancel();
        }
        for entry in self.children.iter().rev() {
            if let Some(child) = &entry.running {
                child.shutdown();
            }
        }
        self.emit(EventKind::Terminated {
            reason: reason.clone(),
        });
    }

    fn down_message(notice: Down) -> Option<SupervisorMsg> {
        Some(SupervisorMsg(Msg::Down(notice)))
    }
}

/// A child supervisor: asked to stop its subtree in order, then itself.
pub(super) struct SupervisedSupervisor<A: 'static>(pub(super) Addr<Supervisor<A>>);

impl<A: 'static> RunningChild for SupervisedSupervisor<A> {
    fn id(&self) -> ProcessId {
        self.0.id()
    }

    fn addr(&self) -> AnyAddr {
        let asked = self.0.clone();
        AnyAddr::supervisor(
            &self.0,
            listing::erase(Arc::new(move |timeout| {
                asked.which_children_timeout(timeout)
            })),
        )
    }

    fn shutdown(&self) {
        // A predicate may shed the request under overload: fall back to an unordered stop
        // (its `terminated` hook still asks each of its children to stop).
        if self.0.post(SupervisorMsg(Msg::Shutdown)).is_err() {
            self.0.exit(ExitReason::Shutdown);
        }
    }

    fn demonitor(&self, watcher: &Weak<dyn Watcher>) {
        self.0.cell().remove_watcher(watcher);
    }
}

// [`ChildSpec::supervisor`]: every incarnation runs a clone of the spec; the spec's start is
// here, where `Supervisor` is.
impl<A: 'static> Start for Nested<A> {
    fn start(&self, cx: &mut StartCx<'_>) -> Result<Box<dyn RunningChild>, StartError> {
        let mut spec = self.0.clone();
        // Inherited observers are shared on purpose, as the parent's were.
        spec.clock = spec
            .clock
            .or_else(|| Some(SharedClient::new(Arc::clone(cx.clock), CLOCK_SHARED)));
        spec.events = spec.events.or_else(|| {
            cx.events
                .map(|sink| SharedClient::new(sink.clone(), EVENTS_SHARED))
        });
        Ok(Box::new(SupervisedSupervisor(
            cx.spawn(|| Supervisor::new(spec))?,
        )))
    }

    fn clone_box(&self) -> Box<dyn Start> {
        Box::new(Nested(self.0.clone()))
    }
}

/// Tells a child just started where it sits (for `Runtime::process_info`) and notes it among
/// the processes the supervisor monitors (unless it has already ended: its notice, delivered
/// at once, came before the note).
fn note_child<A: 'static>(ctx: &Ctx<Supervisor<A>>, pid: ProcessId, supervision: Supervision) {
    let me = ctx.cell();
    me.note_monitoring(pid);
    match me.group.kernel.registry.get(pid) {
        Some(child) => child.set_supervision(supervision),
        None => me.forget_monitoring(pid),
    }
}
