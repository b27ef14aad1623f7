//! What a child's termination leads to: a synchronous start that failed is answered; else its
//! restart type decides whether it is restarted, the restart intensity whether the supervisor
//! may (or, for a child under a backoff, the backoff when: `delayed.rs`), the strategy which
//! siblings go with it, and, for a significant child that is not restarted, the auto-shutdown
//! policy whether the supervisor shuts down.

use std::time::Duration;

use crate::lifecycle::{Down, ExitReason, Failure};
use crate::process::Ctx;

use super::event::EventKind;
use super::kinds::{AutoShutdown, Restart, RestartStrategy};
use super::message::Msg;
use super::process::Supervisor;
use super::stop_op::Then;

impl<A: 'static> Supervisor<A> {
    /// A child (or an incarnation already let go of) terminated.
    pub(super) fn on_down(&mut self, down: Down, ctx: &mut Ctx<Self>) {
        let Some(index) = self.index_of_pid(down.id) else {
            return; // an incarnation the supervisor already let go of
        };
        // The decision (restart, escalate, shut down) and the events it emits happen inside.
        let _span = tracing::debug_span!(
            "supervision",
            supervisor = %self.name,
            child = %down.id,
            reason = %down.reason,
        )
        .entered();
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
        let awaiting = self.children[index].awaiting.as_ref();
        if let Some(forget) = awaiting.map(|a| a.forget_on_failure) {
            // A synchronous start that failed: `exited` tells the caller, as OTP's
            // `start_child` returns `init`'s error; it is not a crash to restart.
            self.exited(index, down);
            if forget || self.children[index].removed_when_stopped() {
                self.children.remove(index);
            }
            return;
        }
        let restart = match self.children[index].spec.restart {
            Restart::Permanent => true,
            Restart::Transient => down.reason.is_failure(),
            Restart::Temporary => false,
        };
        self.exited(index, down);
        // During a runtime shutdown every process is being terminated: restart nothing.
        let closing = self.exiting || ctx.cell().group.kernel.is_closing();
        if !restart || closing {
            let significant = self.children[index].spec.significant;
            if self.children[index].removed_when_stopped() {
                self.children.remove(index);
            }
            if significant && !closing {
                self.auto_shutdown(ctx);
            }
            return;
        }
        // A child under a backoff waits out its delay, outside the intensity (the module
        // documentation's rule); any other restart counts against the intensity.
        let delay = if self.children[index].spec.backoff.is_some() {
            match self.backoff_delay(index) {
                Some(delay) => Some(delay),
                None => return self.backoff_exhausted(index, ctx),
            }
        } else {
            if !self.within_intensity(ctx) {
                return;
            }
            self.restarts += 1;
            None
        };
        self.restart_by_strategy(index, delay, ctx);
    }

    /// Restarts child `index` and the siblings its strategy takes with it: at once, or after
    /// `delay` (the siblings are stopped at once, and the delay starts once they are down).
    fn restart_by_strategy(&mut self, index: usize, delay: Option<Duration>, ctx: &mut Ctx<Self>) {
        let key = self.children[index].key;
        let affected: Vec<u64> = match self.strategy {
            RestartStrategy::OneForOne | RestartStrategy::SimpleOneForOne => {
                match delay {
                    None => self.restart(index, ctx),
                    Some(delay) => self.restart_after(vec![key], delay, ctx),
                }
                return;
            }
            RestartStrategy::OneForAll => self.children.iter().map(|e| e.key).collect(),
            RestartStrategy::RestForOne => self.children[index..].iter().map(|e| e.key).collect(),
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
        self.stop(affected, Then::Restart(restart, delay), ctx);
    }

    /// Records a restart against the intensity; if it is one too many, stops every child and
    /// fails (escalation), and returns `false`.
    fn within_intensity(&mut self, ctx: &mut Ctx<Self>) -> bool {
        if self.intensity.record(self.clock.now()) {
            return true;
        }
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
        false
    }

    /// A restart that could not start is tried again (OTP's `try_again_restart`), as one more
    /// restart against the intensity.
    pub(super) fn on_retry(&mut self, key: u64, ctx: &mut Ctx<Self>) {
        let Some(index) = self.index_of_key(key) else {
            return;
        };
        if self.children[index].running.is_some() || !self.within_intensity(ctx) {
            return;
        }
        self.restarts += 1;
        self.restart(index, ctx);
    }

    /// A significant child terminated on its own and is not restarted: OTP 24's
    /// `auto_shutdown`. The supervisor stops the others and exits `Shutdown`.
    fn auto_shutdown(&mut self, ctx: &mut Ctx<Self>) {
        let shut_down = match self.auto_shutdown {
            AutoShutdown::Never => false,
            AutoShutdown::AnySignificant => true,
            AutoShutdown::AllSignificant => !self
                .children
                .iter()
                .any(|e| e.spec.significant && e.running.is_some()),
        };
        if shut_down {
            let all = self.children.iter().map(|e| e.key).collect();
            self.stop(all, Then::Exit(ExitReason::Shutdown), ctx);
        }
    }

    /// Records that child `index`'s running incarnation terminated (answering a caller still
    /// waiting for its start).
    pub(super) fn exited(&mut self, index: usize, down: Down) {
        let entry = &mut self.children[index];
        entry.running = None;
        if down.reason.is_failure() {
            entry.failures += 1;
        }
        entry.start_failed(&down.reason);
        let id = entry.spec.id.clone();
        self.emit(EventKind::ChildExited {
            id,
            pid: down.id,
            reason: down.reason,
        });
    }
}
