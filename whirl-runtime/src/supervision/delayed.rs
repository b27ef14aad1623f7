//! Delayed restarts: a child under a [`Backoff`](super::Backoff) that fails is restarted after
//! a delay, measured by the runtime's timers (`Ctx::post_after` posts the supervisor a
//! `RestartDue` when it is over), never by holding the supervisor's worker. Meanwhile the
//! supervisor goes on serving requests and other children's failures; the waiting child is
//! stopped, and marked with the restart's token, which a `terminate_child`, `restart_child` or
//! `delete_child` clears (cancelling the timer once no child waits for it).
//!
//! `restart.rs` decides that a restart is delayed and by how much (`backoff_delay`); under
//! one-for-all and rest-for-one, `stop.rs` stops the affected siblings first, and the delay
//! starts once they are down.

use std::time::Duration;

use crate::lifecycle::{ExitReason, Failure};
use crate::process::Ctx;

use super::event::EventKind;
use super::message::{Msg, SupervisorMsg};
use super::process::Supervisor;
use super::stop_op::Then;

impl<A: 'static> Supervisor<A> {
    /// Child `index`, which has a backoff, failed (or its restart could not start): counts the
    /// failure, and returns the delay before its restart (reported as
    /// [`EventKind::RestartDelayed`]), or `None` if its backoff gives up.
    pub(super) fn backoff_delay(&mut self, index: usize) -> Option<Duration> {
        let now = self.clock.now();
        let entry = &mut self.children[index];
        let backoff = entry.spec.backoff_policy()?;
        let attempt = entry.attempts.failed(&backoff, now)?;
        let delay = backoff.jittered(attempt, self.jitter.unit());
        let id = entry.spec.id.clone();
        self.emit(EventKind::RestartDelayed { id, attempt, delay });
        Some(delay)
    }

    /// Child `index` failed under its backoff: restarts `keys` (it, and any siblings stopped
    /// with it) after the next delay, or, if the backoff gives up, stops every child and fails.
    pub(super) fn restart_with_backoff(
        &mut self,
        index: usize,
        keys: Vec<u64>,
        ctx: &mut Ctx<Self>,
    ) {
        match self.backoff_delay(index) {
            Some(delay) => self.restart_after(keys, delay, ctx),
            None => self.backoff_exhausted(index, ctx),
        }
    }

    /// Schedules the restart of `keys` (entry keys, start order) after `delay`.
    pub(super) fn restart_after(&mut self, keys: Vec<u64>, delay: Duration, ctx: &Ctx<Self>) {
        self.next_due += 1;
        let token = self.next_due;
        for key in keys {
            if let Some(index) = self.index_of_key(key) {
                self.children[index].attempts.due = Some(token);
            }
        }
        let timer = ctx.post_after(delay, SupervisorMsg(Msg::RestartDue(token)));
        self.delayed.push((token, timer));
    }

    /// The delay of restart `token` is over: restarts the children still waiting for it, in
    /// start order, as one restart (unless the runtime is shutting down).
    pub(super) fn on_restart_due(&mut self, token: u64, ctx: &mut Ctx<Self>) {
        self.delayed.retain(|(t, _)| *t != token);
        let mut keys = Vec::new();
        for entry in &mut self.children {
            if entry.attempts.due == Some(token) {
                entry.attempts.due = None;
                keys.push(entry.key);
            }
        }
        if keys.is_empty() || ctx.cell().group.kernel.is_closing() {
            return;
        }
        self.restarts += 1;
        for key in keys {
            if self.exiting {
                return;
            }
            if let Some(index) = self.index_of_key(key) {
                if self.children[index].running.is_none() {
                    self.restart(index, ctx);
                }
            }
        }
    }

    /// Child `index` no longer waits for a delayed restart (it is stopped, started or deleted
    /// on request), and its next failure is the first in a row. The timer is cancelled once no
    /// child waits for it.
    pub(super) fn forget_delayed(&mut self, index: usize) {
        let attempts = &mut self.children[index].attempts;
        let due = attempts.due;
        attempts.reset();
        let Some(token) = due else { return };
        if self.children.iter().any(|e| e.attempts.due == Some(token)) {
            return;
        }
        self.delayed.retain(|(t, timer)| {
            if *t == token {
                timer.cancel();
            }
            *t != token
        });
    }

    /// Child `index` failed once more than its backoff's `max_attempts` allows: the supervisor
    /// stops every child and fails, so its own supervisor takes over (escalation).
    pub(super) fn backoff_exhausted(&mut self, index: usize, ctx: &mut Ctx<Self>) {
        let entry = &self.children[index];
        let id = entry.spec.id.clone();
        let attempts = entry
            .spec
            .backoff_policy()
            .and_then(|b| b.attempts_limit())
            .unwrap_or(entry.attempts.count);
        self.emit(EventKind::BackoffExhausted {
            id: id.clone(),
            attempts,
        });
        let failure = Failure::new(format!(
            "supervisor `{}`: child `{id}` failed again after {attempts} delayed restarts in a \
             row (its backoff's `max_attempts`)",
            self.name
        ));
        let all = self.children.iter().map(|e| e.key).collect();
        self.stop(all, Then::Exit(ExitReason::Failed(failure)), ctx);
    }
}
