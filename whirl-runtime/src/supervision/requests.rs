//! The dynamic API, as the supervisor answers it.

use crate::lifecycle::ProcessId;
use crate::process::Ctx;

use super::error::SupervisorError;
use super::info::{ChildCounts, ChildInfo};
use super::kinds::{ChildKind, ChildRef, RestartStrategy};
use super::message::{Reply, Request};
use super::process::{Awaiting, Entry, Supervisor};
use super::spec::ChildSpec;
use super::stop_op::Then;

impl<A: 'static> Supervisor<A> {
    /// Answers one request of the dynamic API (never during a stop operation: deferred).
    pub(super) fn on_request(&mut self, request: Request, ctx: &mut Ctx<Self>) {
        let dynamic = self.strategy == RestartStrategy::SimpleOneForOne;
        let wrong = |operation| SupervisorError::WrongStrategy {
            operation,
            strategy: self.strategy,
        };
        match request {
            Request::Which(reply) => {
                let _ = reply.send(self.children.iter().map(info).collect());
            }
            Request::WhichChild(child, reply) => {
                let answer = match self.find(&child, "which_child") {
                    Ok(i) => Ok(info(&self.children[i])),
                    Err(e) => Err(e),
                };
                let _ = reply.send(answer);
            }
            Request::Spec(child, reply) => {
                let answer = match self.find(&child, "child_spec") {
                    Ok(i) => Ok(self.children[i].spec.clone()),
                    Err(e) => Err(e),
                };
                let _ = reply.send(answer);
            }
            Request::Count(reply) => {
                let _ = reply.send(self.counts());
            }
            Request::Start(spec, reply) => {
                if dynamic {
                    let _ = reply.send(Err(wrong("start_child")));
                    return;
                }
                match self.children.iter().find(|e| e.spec.id == spec.id) {
                    Some(entry) => {
                        let refusal = match entry.pid() {
                            Some(pid) => SupervisorError::AlreadyStarted(pid, spec),
                            None => SupervisorError::AlreadyPresent(spec),
                        };
                        let _ = reply.send(Err(refusal));
                    }
                    None => self.start_new(spec, false, reply, ctx),
                }
            }
            Request::StartDynamic(arg, given, reply) => {
                let Some(template) = self.template else {
                    let _ = reply.send(Err(wrong("start_dynamic")));
                    return;
                };
                match arg.into_any().downcast::<A>() {
                    Err(_) => {
                        let _ = reply.send(Err(SupervisorError::WrongArgument {
                            expected: std::any::type_name::<A>(),
                            given,
                        }));
                    }
                    Ok(arg) => self.start_new((template.make)(*arg), true, reply, ctx),
                }
            }
            Request::Terminate(child, reply) => {
                if dynamic && matches!(child, ChildRef::Id(_)) {
                    // OTP's `{error, simple_one_for_one}`: the children share the template's
                    // id, so which one would be arbitrary.
                    let _ = reply.send(Err(wrong("terminate_child by id")));
                    return;
                }
                match self.index_of(&child) {
                    None => {
                        let _ = reply.send(Err(SupervisorError::NotFound(child)));
                    }
                    Some(index) => {
                        // A child waiting for a delayed restart stays stopped.
                        self.forget_delayed(index);
                        let key = self.children[index].key;
                        self.stop(vec![key], Then::Reply(key, reply), ctx);
                    }
                }
            }
            Request::Restart(id, reply) => match self.index_of(&ChildRef::Id(id.clone())) {
                _ if dynamic => {
                    let _ = reply.send(Err(wrong("restart_child")));
                }
                None => {
                    let _ = reply.send(Err(SupervisorError::NotFound(ChildRef::Id(id))));
                }
                Some(i) if self.children[i].running.is_some() => {
                    let _ = reply.send(Err(SupervisorError::Running(id)));
                }
                Some(i) => {
                    // Started now, not when a delayed restart is due.
                    self.forget_delayed(i);
                    let confirm = Awaiting {
                        reply,
                        forget_on_failure: false,
                    };
                    self.start_confirmed(i, confirm, ctx);
                }
            },
            Request::Delete(id, reply) => {
                let answer = match self.index_of(&ChildRef::Id(id.clone())) {
                    _ if dynamic => Err(wrong("delete_child")),
                    None => Err(SupervisorError::NotFound(ChildRef::Id(id))),
                    Some(i) if self.children[i].running.is_some() => {
                        Err(SupervisorError::Running(id))
                    }
                    Some(i) => {
                        self.forget_delayed(i);
                        let entry = self.children.remove(i);
                        if let Some(name) = &entry.spec.name {
                            let names = &ctx.cell().group.kernel.names;
                            names.unregister(name, entry.last_pid);
                        }
                        Ok(())
                    }
                };
                let _ = reply.send(answer);
            }
        }
    }

    /// The child `child` names, for an operation that takes either kind of reference (by id
    /// under simple-one-for-one is refused: the children share the template's id).
    fn find(&self, child: &ChildRef, operation: &'static str) -> Result<usize, SupervisorError> {
        if self.strategy == RestartStrategy::SimpleOneForOne && matches!(child, ChildRef::Id(_)) {
            return Err(SupervisorError::WrongStrategy {
                operation,
                strategy: self.strategy,
            });
        }
        self.index_of(child)
            .ok_or_else(|| SupervisorError::NotFound(child.clone()))
    }

    /// Adds a new child and starts it synchronously (`start_child`, `start_dynamic`).
    fn start_new(
        &mut self,
        spec: ChildSpec,
        dynamic: bool,
        reply: Reply<ProcessId>,
        ctx: &mut Ctx<Self>,
    ) {
        if let Some(problem) = spec.problem(self.auto_shutdown) {
            let _ = reply.send(Err(SupervisorError::InvalidSpec(spec, problem)));
            return;
        }
        let index = self.add(spec, dynamic);
        let confirm = Awaiting {
            reply,
            forget_on_failure: true,
        };
        self.start_confirmed(index, confirm, ctx);
    }

    /// Starts child `index`; the caller is answered when its `started` hook has run. If it
    /// cannot even be spawned, the caller is answered now, and a new child forgotten.
    fn start_confirmed(&mut self, index: usize, confirm: Awaiting, ctx: &mut Ctx<Self>) {
        match self.start(index, false, true, ctx) {
            // Answered by `on_started`, or by `exited` if the child terminates first.
            Ok(_) => self.children[index].awaiting = Some(confirm),
            Err(error) => {
                if confirm.forget_on_failure {
                    self.children.remove(index);
                }
                let _ = confirm.reply.send(Err(error));
            }
        }
    }

    /// OTP's `count_children`, plus the restarts performed. A simple-one-for-one supervisor
    /// has one spec, its template, however many children it runs.
    pub(super) fn counts(&self) -> ChildCounts {
        let supervisors = self
            .children
            .iter()
            .filter(|e| e.spec.kind == ChildKind::Supervisor)
            .count();
        let specs = match self.strategy {
            RestartStrategy::SimpleOneForOne => 1,
            _ => self.children.len(),
        };
        ChildCounts {
            specs,
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
        significant: entry.spec.significant,
        addr: entry.running.as_ref().map(|c| c.addr()),
    }
}
