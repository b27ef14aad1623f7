//! What a child's termination leads to: its restart type decides whether it is restarted,
//! the restart intensity whether the supervisor may, and the strategy which siblings go with it.

use crate::ctx::Ctx;
use crate::process::{Down, ExitReason, Failure};

use super::event::EventKind;
use super::message::Msg;
use super::process::Supervisor;
use super::spec::{Restart, Strategy};
use super::stop::Then;

impl Supervisor {
    /// A child (or an incarnation already let go of) terminated.
    pub(super) fn on_down(&mut self, down: Down, ctx: &mut Ctx<Self>) {
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
    pub(super) fn exited(&mut self, index: usize, down: Down) {
        let entry = &mut self.children[index];
        entry.running = None;
        let id = entry.spec.id.clone();
        self.emit(EventKind::ChildExited {
            id,
            pid: down.id,
            reason: down.reason,
        });
    }
}
