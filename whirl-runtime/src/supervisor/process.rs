//! The supervisor process: its state, how it starts a child, and its message loop.
//!
//! A reader follows a failure through the files: `restart.rs` decides what a child's `Down`
//! leads to (restart type, intensity, strategy); `stop.rs` stops children in reverse order
//! without blocking the worker, then restarts them, answers, or ends the supervisor;
//! `requests.rs` answers the dynamic API. [`Supervisor::dispatch`] defers requests while a stop
//! operation runs and replays them after, in order.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::client::SharedClient;
use crate::clock::{Clock, SystemClock};
use crate::ctx::Ctx;
use crate::process::{Down, ExitReason, Failure, Process, ProcessId};

use super::child::{RunningChild, StartCx};
use super::event::{emit, EventKind, EventSink, SupervisorEvent};
use super::intensity::Intensity;
use super::message::{ChildRef, Msg, SupervisorMsg};
use super::spec::{ChildSpec, ChildTemplate, Restart, Strategy, SupervisorSpec};
use super::stop::{StopOp, Then};

/// A supervisor (OTP's `supervisor` behaviour): a system process that starts children from
/// [`ChildSpec`]s, monitors them, and restarts them by its [`Strategy`], within its restart
/// intensity. See the [module documentation](crate::supervisor) for the semantics.
///
/// ```
/// use whirl_runtime::{ChildSpec, Ctx, Failure, Isolated, Process};
/// use whirl_runtime::{Runtime, Supervisor, SupervisorSpec};
///
/// #[derive(Clone)]
/// struct Worker;
/// // SAFETY: no fields. (Real code writes `#[process]`, which checks it.)
/// unsafe impl Isolated for Worker {}
/// // SAFETY: no state, and the message is `()`.
/// unsafe impl Process for Worker {
///     type Message = ();
///     fn handle(&mut self, _: (), _: &mut Ctx<Self>) -> Result<(), Failure> {
///         Ok(())
///     }
/// }
///
/// let rt = Runtime::new();
/// let sup = rt.spawn(Supervisor::new(
///     SupervisorSpec::new("root").child(ChildSpec::worker("worker", Worker)),
/// ));
/// let children = sup.which_children().unwrap();
/// assert_eq!(children[0].id, "worker");
/// assert!(children[0].pid.is_some());
/// ```
pub struct Supervisor {
    pub(super) name: Arc<str>,
    pub(super) strategy: Strategy,
    pub(super) intensity: Intensity,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) events: Option<EventSink>,
    pub(super) template: Option<ChildTemplate>,
    /// The spec's children, until `started` starts them; the spec's problem, if any.
    pub(super) initial: Vec<ChildSpec>,
    pub(super) problem: Option<String>,
    pub(super) children: Vec<Entry>,
    pub(super) next_key: u64,
    pub(super) op: Option<StopOp>,
    pub(super) deferred: VecDeque<Msg>,
    pub(super) epoch: u64,
    pub(super) restarts: u64,
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
    pub(super) dynamic: bool,
}

impl Entry {
    pub(super) fn pid(&self) -> Option<ProcessId> {
        self.running.as_ref().map(|c| c.id())
    }

    /// Removed, rather than kept stopped, once it terminates.
    pub(super) fn removed_when_stopped(&self) -> bool {
        self.dynamic || self.spec.restart == Restart::Temporary
    }
}

impl Supervisor {
    /// A supervisor that will run `spec` once spawned. An invalid spec (duplicate ids, a
    /// template without [`Strategy::SimpleOneForOne`]...) makes it fail at start, saying why.
    pub fn new(spec: SupervisorSpec) -> Self {
        let problem = spec.problem();
        Supervisor {
            name: Arc::from(spec.name.as_str()),
            strategy: spec.strategy,
            intensity: Intensity::new(spec.max_restarts, spec.period),
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
            dynamic,
        });
        self.children.len() - 1
    }

    /// Starts a new incarnation of child `index`.
    pub(super) fn start(&mut self, index: usize, restarting: bool, ctx: &Ctx<Self>) -> ProcessId {
        let spec = &self.children[index].spec;
        let mut cx = StartCx {
            ctx,
            group: spec.group.as_ref(),
            name: spec.name.as_deref(),
            clock: &self.clock,
            events: self.events.as_ref(),
        };
        let child = spec.start.start(&mut cx);
        let pid = child.id();
        let entry = &mut self.children[index];
        entry.running = Some(child);
        entry.last_pid = Some(pid);
        let id = entry.spec.id.clone();
        if restarting {
            entry.restarts += 1;
            let restarts = entry.restarts;
            self.emit(EventKind::ChildRestarted { id, pid, restarts });
        } else {
            self.emit(EventKind::ChildStarted { id, pid });
        }
        pid
    }

    pub(super) fn dispatch(&mut self, msg: Msg, ctx: &mut Ctx<Self>) {
        match msg {
            Msg::Down(down) => self.on_down(down, ctx),
            Msg::StopTimeout(epoch) => self.on_stop_timeout(epoch, ctx),
            // Dropped once exiting: the callers' reply handles drop with them (`NoReply`).
            _ if self.exiting => {}
            msg if self.op.is_some() => self.deferred.push_back(msg),
            Msg::Shutdown => {
                let all = self.children.iter().map(|e| e.key).collect();
                self.stop(all, Then::Exit(ExitReason::Normal), ctx);
            }
            Msg::Request(request) => self.on_request(request, ctx),
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
//   keys, the spec's problem, deferred messages (`SupervisorMsg`s) and the stop operation's
//   queue and reply handle;
// * child specs and the template: data (initial states, function pointers and arguments,
//   supervisor specs), `Isolated` by their impls; children are spawned from clones of them;
// * the running children as `Addr`s (inside `Box<dyn RunningChild>`) and the shutdown timer's
//   `TimerHandle`: runtime handles that grant no access to another process's state;
// * the clock and the event sink, which the user may share on purpose (a test's
//   `ManualClock`, a metrics counter): observers and policies, not process state. The
//   supervisor only reads the clock and hands the sink copies of its events; neither reaches
//   a child's state, and the spec holds them as `SharedClient`s, with the reason.
#[diagnostic::do_not_recommend]
unsafe impl Process for Supervisor {
    type Message = SupervisorMsg;

    /// Starts the children in order (each spawn returns at once; their `started` hooks run
    /// on workers, possibly side by side).
    fn started(&mut self, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        self.pid = Some(ctx.id());
        if let Some(problem) = self.problem.take() {
            return Err(Failure::new(problem));
        }
        for spec in std::mem::take(&mut self.initial) {
            let index = self.add(spec, false);
            self.start(index, false, ctx);
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
