//! Stop operations: children stopped one at a time, in reverse start order, each within its
//! shutdown policy, and what happens when they are all down.
//!
//! Stopping is asynchronous (a supervisor must not block its worker waiting for a child that
//! may need that very worker to terminate): ask the next child to stop, then wait for its
//! `Down` or its shutdown timer, as messages. While an operation is in progress, requests and
//! the `Down`s of children outside it are deferred and replayed afterwards, in order (see
//! `Supervisor::dispatch`): the selective receive of OTP's supervisor, without blocking.

use crate::lifecycle::ExitReason;
use crate::process::Ctx;

use super::event::EventKind;
use super::kinds::{Restart, Shutdown};
use super::message::{Msg, SupervisorMsg};
use super::process::Supervisor;
use super::stop_op::{StopOp, Then, Waiting};

impl<A: 'static> Supervisor<A> {
    /// The shutdown timer of the child being stopped expired: report it and move on.
    pub(super) fn on_stop_timeout(&mut self, epoch: u64, ctx: &mut Ctx<Self>) {
        let Some(op) = &mut self.op else { return };
        let Some(waiting) = op.waiting.take_if(|w| w.epoch == epoch) else {
            return;
        };
        if let Some(index) = self.index_of_key(waiting.key) {
            // Let it go: its exit request stays, but the supervisor no longer watches it.
            let entry = &mut self.children[index];
            if let Some(child) = entry.running.take() {
                child.demonitor(&ctx.watcher());
            }
            entry.start_failed(&ExitReason::Shutdown);
            let id = entry.spec.id.clone();
            self.emit(EventKind::ShutdownTimedOut {
                id,
                pid: waiting.pid,
            });
        }
        self.advance(ctx);
    }

    /// Starts a stop operation over `keys` (start order).
    pub(super) fn stop(&mut self, keys: Vec<u64>, then: Then, ctx: &mut Ctx<Self>) {
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
    pub(super) fn advance(&mut self, ctx: &mut Ctx<Self>) {
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
                Shutdown::Timeout(limit) => {
                    Some(ctx.post_after(limit, SupervisorMsg(Msg::StopTimeout(epoch))))
                }
                Shutdown::Infinity => None,
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

    pub(super) fn finish(&mut self, then: Then, ctx: &mut Ctx<Self>) {
        match then {
            Then::Exit(reason) => ctx.exit_with(reason),
            Then::Reply(key, reply) => {
                if let Some(index) = self.index_of_key(key) {
                    if self.children[index].removed_when_stopped() {
                        self.children.remove(index);
                    }
                }
                let _ = reply.send(Ok(()));
            }
            Then::Restart(keys, delay) => {
                self.children
                    .retain(|e| e.running.is_some() || e.spec.restart != Restart::Temporary);
                // A runtime shutdown that began during the stop: restart nothing.
                let keys = if ctx.cell().group.kernel.is_closing() {
                    Vec::new()
                } else {
                    keys
                };
                match delay {
                    Some(delay) if !keys.is_empty() => self.restart_after(keys, delay, ctx),
                    _ => {
                        for key in keys {
                            if self.exiting {
                                break;
                            }
                            if let Some(index) = self.index_of_key(key) {
                                self.restart(index, ctx);
                            }
                        }
                    }
                }
            }
        }
        self.replay(ctx);
    }
}
