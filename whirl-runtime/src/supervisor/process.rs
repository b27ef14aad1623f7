//! The supervisor process: starts its children, watches them, applies the strategy.
//!
//! Stopping children is asynchronous (a supervisor must not block its worker waiting for a
//! child that may need that very worker to terminate), so stopping is a *stop operation*: the
//! children to stop, in reverse start order, one at a time — ask, then wait for its `Down`
//! or its shutdown timer — and what to do when all are down (restart some, reply to a
//! request, or terminate the supervisor). While one is in progress, requests and the `Down`s
//! of children outside the operation are deferred and replayed afterwards, in order: the
//! selective receive of OTP's supervisor, without blocking.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::clock::{Clock, SystemClock};
use crate::ctx::Ctx;
use crate::process::{Down, ExitReason, Failure, Process, ProcessId};
use crate::reply::ReplyTo;
use crate::timer::TimerHandle;

use super::child::{ChildCounts, ChildInfo, RunningChild, StartCx};
use super::error::SupervisorError;
use super::event::{emit, EventKind, EventSink, SupervisorEvent};
use super::intensity::Intensity;
use super::message::{ChildRef, Msg, Request, SupervisorMsg};
use super::spec::{ChildKind, ChildSpec, ChildTemplate, Restart, Strategy, SupervisorSpec};

/// A supervisor (OTP's `supervisor` behaviour): a system process that starts children from
/// [`ChildSpec`]s, monitors them, and restarts them by its [`Strategy`], within its restart
/// intensity. See the [module documentation](crate::supervisor) for the semantics.
///
/// ```
/// use whirl_runtime::{ChildSpec, Ctx, Failure, Process, Runtime, Supervisor, SupervisorSpec};
///
/// struct Worker;
/// impl Process for Worker {
///     type Message = ();
///     fn handle(&mut self, _: (), _: &mut Ctx<Self>) -> Result<(), Failure> {
///         Ok(())
///     }
/// }
///
/// let rt = Runtime::new();
/// let sup = rt.spawn(Supervisor::new(
///     SupervisorSpec::new("root").child(ChildSpec::worker("worker", || Worker)),
/// ));
/// let children = sup.which_children().unwrap();
/// assert_eq!(children[0].id, "worker");
/// assert!(children[0].pid.is_some());
/// ```
pub struct Supervisor {
    name: Arc<str>,
    strategy: Strategy,
    intensity: Intensity,
    clock: Arc<dyn Clock>,
    events: Option<EventSink>,
    template: Option<ChildTemplate>,
    /// The spec's children, until `started` starts them; the spec's problem, if any.
    initial: Vec<ChildSpec>,
    problem: Option<String>,
    children: Vec<Entry>,
    next_key: u64,
    op: Option<StopOp>,
    deferred: VecDeque<Msg>,
    epoch: u64,
    restarts: u64,
    /// Set once the supervisor has decided to terminate: nothing more is started.
    exiting: bool,
    pid: Option<ProcessId>,
}

/// A child the supervisor knows, running or not.
struct Entry {
    key: u64,
    spec: ChildSpec,
    running: Option<Box<dyn RunningChild>>,
    /// The latest incarnation, running or not (to release its name, and only its name).
    last_pid: Option<ProcessId>,
    restarts: u64,
    dynamic: bool,
}

impl Entry {
    fn pid(&self) -> Option<ProcessId> {
        self.running.as_ref().map(|c| c.id())
    }

    /// Removed, rather than kept stopped, once it terminates.
    fn removed_when_stopped(&self) -> bool {
        self.dynamic || self.spec.restart == Restart::Temporary
    }
}

/// Children being stopped one at a time, in reverse start order.
struct StopOp {
    /// Entry keys in start order; the next one to stop is the last.
    queue: Vec<u64>,
    waiting: Option<Waiting>,
    then: Then,
}

struct Waiting {
    key: u64,
    pid: ProcessId,
    epoch: u64,
    timer: Option<TimerHandle>,
}

/// What a stop operation does once every child in it is down.
enum Then {
    /// Restart these children (entry keys, start order); temporary ones are removed.
    Restart(Vec<u64>),
    /// Answer `terminate_child`; a dynamic or temporary child is removed.
    Reply(u64, ReplyTo<Result<(), SupervisorError>>),
    /// Terminate the supervisor.
    Exit(ExitReason),
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
            clock: spec.clock.unwrap_or_else(|| Arc::new(SystemClock)),
            events: spec.events,
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

    fn emit(&self, kind: EventKind) {
        let event = SupervisorEvent {
            supervisor: Arc::clone(&self.name),
            supervisor_pid: self.pid.unwrap_or(ProcessId(0)),
            kind,
        };
        emit(self.events.as_ref(), event);
    }

    fn index_of_key(&self, key: u64) -> Option<usize> {
        self.children.iter().position(|e| e.key == key)
    }

    fn index_of_pid(&self, pid: ProcessId) -> Option<usize> {
        self.children.iter().position(|e| e.pid() == Some(pid))
    }

    fn index_of(&self, child: &ChildRef) -> Option<usize> {
        match child {
            ChildRef::Id(id) => self.children.iter().position(|e| &e.spec.id == id),
            ChildRef::Pid(pid) => self.index_of_pid(*pid),
        }
    }

    fn add(&mut self, spec: ChildSpec, dynamic: bool) -> usize {
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
    fn start(&mut self, index: usize, restarting: bool, ctx: &Ctx<Self>) -> ProcessId {
        let spec = &self.children[index].spec;
        let start = Arc::clone(&spec.start);
        let mut cx = StartCx {
            ctx,
            group: spec.group.as_ref(),
            name: spec.name.as_deref(),
            clock: &self.clock,
            events: self.events.as_ref(),
        };
        let child = start(&mut cx);
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

    fn dispatch(&mut self, msg: Msg, ctx: &mut Ctx<Self>) {
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
    fn replay(&mut self, ctx: &mut Ctx<Self>) {
        while self.op.is_none() && !self.exiting {
            let Some(msg) = self.deferred.pop_front() else {
                return;
            };
            self.dispatch(msg, ctx);
        }
    }

    fn on_down(&mut self, down: Down, ctx: &mut Ctx<Self>) {
        let Some(index) = self.index_of_pid(down.id) else {
            return; // an incarnation the supervisor already let go of
        };
        let key = self.children[index].key;
        if let Some(op) = &mut self.op {
            let waited_for = op.waiting.as_ref().is_some_and(|w| w.pid == down.id);
            if !waited_for && !op.queue.contains(&key) {
                // Not part of the stop in progress: handled after it, in order.
                self.deferred.push_back(Msg::Down(down));
                return;
            }
            if waited_for {
                if let Some(timer) = op.waiting.take().and_then(|w| w.timer) {
                    timer.cancel();
                }
            }
            self.exited(index, down);
            self.advance(ctx);
            return;
        }
        let restart = match self.children[index].spec.restart {
            Restart::Permanent => true,
            Restart::Transient => down.reason.is_failure(),
            Restart::Temporary => false,
        };
        self.exited(index, down);
        // During a runtime shutdown every process is being terminated: restart nothing.
        if !restart || self.exiting || ctx.cell().group.runtime.is_closing() {
            if self.children[index].removed_when_stopped() {
                self.children.remove(index);
            }
            return;
        }
        if !self.intensity.record(self.clock.now()) {
            let (max_restarts, period) = (self.intensity.max_restarts, self.intensity.period);
            self.emit(EventKind::IntensityExceeded {
                max_restarts,
                period,
            });
            let failure = Failure::new(format!(
                "supervisor `{}` reached its maximum restart intensity ({max_restarts} in \
                 {period:?})",
                self.name
            ));
            let all = self.children.iter().map(|e| e.key).collect();
            self.stop(all, Then::Exit(ExitReason::Failed(failure)), ctx);
            return;
        }
        self.restarts += 1;
        let affected: Vec<u64> = match self.strategy {
            Strategy::OneForOne | Strategy::SimpleOneForOne => {
                self.start(index, true, ctx);
                return;
            }
            Strategy::OneForAll => self.children.iter().map(|e| e.key).collect(),
            Strategy::RestForOne => self.children[index..].iter().map(|e| e.key).collect(),
        };
        // Restart the failed child and the affected ones that were running; a stopped sibling
        // (terminated on request, or a transient one that finished) stays stopped.
        let restart: Vec<u64> = affected
            .iter()
            .copied()
            .filter(|&k| {
                k == key
                    || self
                        .index_of_key(k)
                        .is_some_and(|i| self.children[i].running.is_some())
            })
            .collect();
        self.stop(affected, Then::Restart(restart), ctx);
    }

    /// Records that child `index`'s running incarnation terminated.
    fn exited(&mut self, index: usize, down: Down) {
        let entry = &mut self.children[index];
        entry.running = None;
        let id = entry.spec.id.clone();
        self.emit(EventKind::ChildExited {
            id,
            pid: down.id,
            reason: down.reason,
        });
    }

    fn on_stop_timeout(&mut self, epoch: u64, ctx: &mut Ctx<Self>) {
        let Some(op) = &mut self.op else { return };
        let Some(waiting) = op.waiting.take_if(|w| w.epoch == epoch) else {
            return;
        };
        if let Some(index) = self.index_of_key(waiting.key) {
            // Let it go: its exit request stays, but its `Down` will match nothing.
            self.children[index].running = None;
            let id = self.children[index].spec.id.clone();
            self.emit(EventKind::ShutdownTimedOut {
                id,
                pid: waiting.pid,
            });
        }
        self.advance(ctx);
    }

    /// Starts a stop operation over `keys` (start order).
    fn stop(&mut self, keys: Vec<u64>, then: Then, ctx: &mut Ctx<Self>) {
        if matches!(then, Then::Exit(_)) {
            self.exiting = true;
        }
        self.op = Some(StopOp {
            queue: keys,
            waiting: None,
            then,
        });
        self.advance(ctx);
    }

    /// Asks the next running child of the operation to stop, or finishes the operation.
    fn advance(&mut self, ctx: &mut Ctx<Self>) {
        loop {
            let Some(op) = &mut self.op else { return };
            if op.waiting.is_some() {
                return;
            }
            let Some(key) = op.queue.pop() else {
                let done = self.op.take().map(|op| op.then);
                if let Some(then) = done {
                    self.finish(then, ctx);
                }
                return;
            };
            let Some(index) = self.index_of_key(key) else {
                continue;
            };
            let entry = &self.children[index];
            let Some(child) = &entry.running else {
                continue;
            };
            let pid = child.id();
            child.shutdown();
            self.epoch += 1;
            let epoch = self.epoch;
            let timer = match entry.spec.shutdown {
                super::Shutdown::Timeout(limit) => {
                    Some(ctx.post_after(limit, SupervisorMsg(Msg::StopTimeout(epoch))))
                }
                super::Shutdown::Infinity => None,
            };
            if let Some(op) = &mut self.op {
                op.waiting = Some(Waiting {
                    key,
                    pid,
                    epoch,
                    timer,
                });
            }
        }
    }

    fn finish(&mut self, then: Then, ctx: &mut Ctx<Self>) {
        match then {
            Then::Exit(ExitReason::Normal) => ctx.complete(),
            Then::Exit(ExitReason::Failed(failure)) => ctx.fail(failure.reason().to_owned()),
            Then::Reply(key, reply) => {
                if let Some(index) = self.index_of_key(key) {
                    if self.children[index].removed_when_stopped() {
                        self.children.remove(index);
                    }
                }
                let _ = reply.send(Ok(()));
            }
            Then::Restart(keys) => {
                self.children
                    .retain(|e| e.running.is_some() || e.spec.restart != Restart::Temporary);
                for key in keys {
                    if let Some(index) = self.index_of_key(key) {
                        self.start(index, true, ctx);
                    }
                }
            }
        }
        self.replay(ctx);
    }

    fn on_request(&mut self, request: Request, ctx: &mut Ctx<Self>) {
        let dynamic = self.strategy == Strategy::SimpleOneForOne;
        let wrong = |operation| SupervisorError::WrongStrategy {
            operation,
            strategy: self.strategy,
        };
        match request {
            Request::Which(reply) => {
                let _ = reply.send(self.children.iter().map(info).collect());
            }
            Request::Count(reply) => {
                let _ = reply.send(self.counts());
            }
            Request::Start(spec, reply) => {
                let answer = if dynamic {
                    Err(wrong("start_child"))
                } else if self.children.iter().any(|e| e.spec.id == spec.id) {
                    Err(SupervisorError::AlreadyPresent(spec))
                } else {
                    let index = self.add(spec, false);
                    Ok(self.start(index, false, ctx))
                };
                let _ = reply.send(answer);
            }
            Request::StartDynamic(arg, given, reply) => {
                let answer = match &self.template {
                    None => Err(wrong("start_dynamic")),
                    Some(template) => match (template.make)(arg) {
                        Err(_) => Err(SupervisorError::WrongArgument {
                            expected: template.argument,
                            given,
                        }),
                        Ok(spec) => {
                            let index = self.add(spec, true);
                            Ok(self.start(index, false, ctx))
                        }
                    },
                };
                let _ = reply.send(answer);
            }
            Request::Terminate(child, reply) => match self.index_of(&child) {
                None => {
                    let _ = reply.send(Err(SupervisorError::NotFound(child)));
                }
                Some(index) => {
                    let key = self.children[index].key;
                    self.stop(vec![key], Then::Reply(key, reply), ctx);
                }
            },
            Request::Restart(id, reply) => {
                let answer = match self.index_of(&ChildRef::Id(id.clone())) {
                    _ if dynamic => Err(wrong("restart_child")),
                    None => Err(SupervisorError::NotFound(ChildRef::Id(id))),
                    Some(i) if self.children[i].running.is_some() => {
                        Err(SupervisorError::Running(id))
                    }
                    Some(i) => Ok(self.start(i, false, ctx)),
                };
                let _ = reply.send(answer);
            }
            Request::Delete(id, reply) => {
                let answer = match self.index_of(&ChildRef::Id(id.clone())) {
                    _ if dynamic => Err(wrong("delete_child")),
                    None => Err(SupervisorError::NotFound(ChildRef::Id(id))),
                    Some(i) if self.children[i].running.is_some() => {
                        Err(SupervisorError::Running(id))
                    }
                    Some(i) => {
                        let entry = self.children.remove(i);
                        if let Some(name) = &entry.spec.name {
                            let names = &ctx.cell().group.runtime.names;
                            names.unregister(name, entry.last_pid);
                        }
                        Ok(())
                    }
                };
                let _ = reply.send(answer);
            }
        }
    }

    fn counts(&self) -> ChildCounts {
        let supervisors = self
            .children
            .iter()
            .filter(|e| e.spec.kind == ChildKind::Supervisor)
            .count();
        ChildCounts {
            specs: self.children.len(),
            active: self.children.iter().filter(|e| e.running.is_some()).count(),
            supervisors,
            workers: self.children.len() - supervisors,
            restarts: self.restarts,
        }
    }
}

fn info(entry: &Entry) -> ChildInfo {
    ChildInfo {
        id: entry.spec.id.clone(),
        pid: entry.pid(),
        kind: entry.spec.kind,
        restart: entry.spec.restart,
        restarts: entry.restarts,
    }
}

impl Process for Supervisor {
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
