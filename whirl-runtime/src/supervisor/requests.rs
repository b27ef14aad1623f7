//! The dynamic API, as the supervisor answers it.

use crate::ctx::Ctx;

use super::child::{ChildCounts, ChildInfo};
use super::error::SupervisorError;
use super::message::{ChildRef, Request};
use super::process::{Entry, Supervisor};
use super::spec::{ChildKind, Strategy};
use super::stop::Then;

impl Supervisor {
    /// Answers one request of the dynamic API (never during a stop operation: deferred).
    pub(super) fn on_request(&mut self, request: Request, ctx: &mut Ctx<Self>) {
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
                    Some(template) => match template.make.make(arg) {
                        None => Err(SupervisorError::WrongArgument {
                            expected: template.argument,
                            given,
                        }),
                        Some(spec) => {
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

    /// OTP's `count_children`, plus the restarts performed.
    pub(super) fn counts(&self) -> ChildCounts {
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
