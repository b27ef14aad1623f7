//! A live process's post side: delivering a message into its mailbox and scheduling it,
//! monitors and the start callback, kill requests, and draining a terminated process's inbox
//! to the dead-letter sink. Running a turn is `turn.rs`.
//!
//! The post → schedule → handle path (ARCHITECTURE.md has it on one page):
//!
//! 1. `Addr::post` checks liveness and admission, then [`ProcessCell::deliver`] pushes the
//!    message into the mailbox and, if that took the token, hands the cell to the group's
//!    scheduler (`group/worker.rs`).
//! 2. A worker pops the cell and calls `Runnable::run`, the one dynamic call per scheduling.
//! 3. The turn (`turn.rs`) handles up to the group's budget of messages, then gives the token
//!    back, or re-queues itself at the back if messages remain (fairness).

use std::sync::atomic::Ordering::SeqCst;
use std::sync::{Arc, Weak};

use once_cell::race::OnceBox;
use parking_lot::Mutex;

use super::mailbox::{AfterPush, Mailbox};
use super::model::{Body, Control, OnStarted, Process, ProcessCell, Rare, Watcher};
use super::trace::Envelope;
use crate::control::{Activity, Event};
use crate::group::{observe, GroupShared, Task};
use crate::lifecycle::{DeadLetter, Down, ExitReason, ProcessId, QueuedMessage};
use crate::principal::Principal;
use crate::sync::UnsafeCell;

/// The cache-line size that matters for false sharing on the targets we measure.
const CACHE_LINE: usize = 64;

impl<P: Process> ProcessCell<P> {
    /// Fails the build if the body, which the worker writes on every message, could share a
    /// cache line with the mailbox words a post writes (see the layout note on
    /// [`ProcessCell`]): the last byte a post writes is `end - 1`, and two bytes 64 apart never
    /// share a 64-byte line.
    pub(crate) const BODY_A_LINE_PAST_POST_WORDS: () = {
        let end = std::mem::offset_of!(ProcessCell<P>, mailbox)
            + Mailbox::<P::Message>::PRODUCER_WORDS_END;
        assert!(
            std::mem::offset_of!(ProcessCell<P>, body) >= end - 1 + CACHE_LINE,
            "a process's body must lie a cache line past its mailbox's post words"
        );
    };

    /// A new cell whose token is held by the caller, who must schedule it.
    pub(crate) fn new(
        id: ProcessId,
        group: Arc<GroupShared>,
        principal: Option<Principal>,
        state: P,
    ) -> Self {
        #[allow(clippy::let_unit_value)] // evaluates the layout check for this `P`
        let () = Self::BODY_A_LINE_PAST_POST_WORDS;
        ProcessCell {
            id,
            mailbox: Mailbox::new_scheduled(),
            group,
            principal,
            body: UnsafeCell::new(Body {
                suspended: None,
                state: Some(state),
            }),
            rare: OnceBox::new(),
            activity: Activity::default(),
        }
    }

    /// A cell in `group` for a process moving there from another group with `state`: its
    /// token is held by the caller (the mover) and its `started` hook has run already.
    pub(super) fn moved_in(
        id: ProcessId,
        group: Arc<GroupShared>,
        principal: Option<Principal>,
        state: P,
    ) -> Self {
        let mut cell = Self::new(id, group, principal, state);
        cell.mailbox = Mailbox::new_moved();
        cell
    }

    pub(crate) fn id(&self) -> ProcessId {
        self.id
    }

    pub(super) fn control(&self) -> &Mutex<Control> {
        &self.rare.get_or_init(Box::default).control
    }

    /// The control block if one was allocated (reading never allocates it).
    pub(super) fn control_if_any(&self) -> Option<&Mutex<Control>> {
        self.rare.get().map(|rare| &rare.control)
    }

    /// Delivers a message that has passed liveness and admission checks.
    #[inline]
    pub(crate) fn deliver(self: &Arc<Self>, msg: P::Message, meta: u32) {
        self.group.counters.add(Event::Posted, 1);
        let after = self.mailbox.push(Envelope::here(msg), meta);
        self.after_token_attempt(after);
    }

    /// Delivers a message posted on behalf of a principal of priority `priority` to a process
    /// of a group with a scheduler: the process inherits the priority while the message is
    /// queued (priority inheritance; see [`Ready::inherited_priority`]).
    ///
    /// The inherited priority is raised between the push and the attempt to take the token,
    /// and the token holder resets it when the inbox drains ([`ProcessCell::reset_inherited`]):
    /// if that reset read this raise, the push happened before its look at the inbox, so it
    /// sees this message and keeps the priority; otherwise the raise comes after the reset and
    /// stays. Either way, whoever schedules the process next reads the raised priority; if it
    /// is queued already, the scheduler is told to move it.
    ///
    /// [`Ready::inherited_priority`]: crate::scheduler::Ready::inherited_priority
    #[cold]
    pub(crate) fn deliver_inheriting(self: &Arc<Self>, msg: P::Message, meta: u32, priority: u8) {
        self.group.counters.add(Event::Posted, 1);
        let level = u16::from(priority) + 1;
        let mut raised = false;
        let after = self.mailbox.push_then(Envelope::here(msg), meta, || {
            raised = self.rare().inherited.fetch_max(level, SeqCst) < level;
        });
        let held_elsewhere = after == AfterPush::Nothing;
        self.after_token_attempt(after);
        if raised && held_elsewhere {
            if let Some(scheduler) = &self.group.scheduler {
                scheduler.priority_raised(self.id);
            }
        }
    }

    /// The rarely used parts, allocated now if they were not.
    fn rare(&self) -> &Rare {
        self.rare.get_or_init(Box::default)
    }

    /// The inherited priority plus one, 0 for none (reading never allocates).
    fn inherited_level(&self) -> u16 {
        self.rare
            .get()
            .map_or(0, |rare| rare.inherited.load(SeqCst))
    }

    /// The priority the process inherits from its queued messages' principals, if any.
    pub(crate) fn inherited(&self) -> Option<u8> {
        self.inherited_level().checked_sub(1).map(|p| p as u8)
    }

    /// Token holder, about to give the token back with its inbox drained: forgets the
    /// inherited priority. Returns `true` if it did and a message raced in meanwhile (the
    /// priority is then kept, and the caller must run the process again rather than release).
    pub(super) fn reset_inherited(&self) -> bool {
        let Some(rare) = self.rare.get() else {
            return false;
        };
        if rare.inherited.load(SeqCst) == 0 {
            return false;
        }
        let old = rare.inherited.swap(0, SeqCst);
        // SAFETY: the caller holds the token. (I9)
        if old != 0 && unsafe { self.mailbox.has_pending() } {
            rare.inherited.fetch_max(old, SeqCst);
            return true;
        }
        false
    }

    /// Acts on the outcome of an attempt to take the token.
    #[inline]
    pub(super) fn after_token_attempt(self: &Arc<Self>, after: AfterPush) {
        match after {
            AfterPush::Nothing => {}
            AfterPush::Schedule => self.group.schedule(Arc::clone(self) as Task),
            AfterPush::Drain => self.drain_after_exit(),
            AfterPush::Moved => self.after_moved_push(),
        }
    }

    /// A push into the old mailbox of a process that moved away while another thread held its
    /// token: waits until the message has been passed on (`relocate.rs`). Out of line, so
    /// that the post path stays small enough to inline.
    #[cold]
    #[inline(never)]
    fn after_moved_push(&self) {
        self.settle_moved();
    }

    /// Registers `watcher` for this process's termination; if it has already terminated, the
    /// notice is delivered at once.
    pub(crate) fn add_watcher(&self, watcher: Weak<dyn Watcher>) {
        let mut control = self.control().lock();
        if control.moved_to.is_some() {
            drop(control);
            // Where the process is now (in a loop: it may have moved thousands of times).
            if let Some(mut next) = self.moved_to() {
                while let Some(after) = next.moved_to() {
                    next = after;
                }
                next.add_watcher(watcher);
            }
            return;
        }
        match &control.exit {
            None => control.watchers.push(watcher),
            Some(reason) => {
                let notice = Down::new(self.id, reason.clone());
                drop(control);
                if let Some(w) = watcher.upgrade() {
                    w.notify_down(notice);
                }
            }
        }
    }

    /// Runs `f` once the `started` hook has returned `Ok` (not if the process terminates
    /// before or in it: its monitors see that). Set before the process is scheduled.
    pub(crate) fn set_on_started(&self, f: OnStarted) {
        self.control().lock().on_started = Some(f);
    }

    /// The start hook succeeded: runs the callback, if one was set (no `Control` is
    /// allocated for a process nobody asked about).
    pub(super) fn notify_started(&self) {
        let callback = self
            .control_if_any()
            .and_then(|c| c.lock().on_started.take());
        if let Some(f) = callback {
            f(self.id);
        }
    }

    /// Removes `watcher` (every registration of it); returns whether there was one, i.e.
    /// whether this process had not yet terminated and notified it.
    pub(crate) fn remove_watcher(&self, watcher: &Weak<dyn Watcher>) -> bool {
        let mut control = self.control().lock();
        if control.moved_to.is_some() {
            drop(control);
            // Where the process is now (in a loop: it may have moved thousands of times).
            let Some(mut next) = self.moved_to() else {
                return false;
            };
            while let Some(after) = next.moved_to() {
                next = after;
            }
            return next.remove_watcher(watcher);
        }
        let before = control.watchers.len();
        control.watchers.retain(|w| !Weak::ptr_eq(w, watcher));
        control.watchers.len() != before
    }

    /// Adds a turn's handled messages and consumed lifecycle runs to the group's counters.
    pub(super) fn count_turn(&self, handled: u64, consumed_activations: u64) {
        if handled > 0 {
            self.group.counters.add(Event::Handled, handled);
        }
        if consumed_activations > 0 {
            self.group
                .counters
                .add(Event::Deactivated, consumed_activations);
        }
    }

    /// Records that the process ended with `reason` and takes its watchers to notify; a kill
    /// still pending (one that arrived while it ended for another reason) is moot, but it was
    /// counted as an activation, so it is counted as consumed.
    pub(super) fn record_exit(
        &self,
        reason: &ExitReason,
        consumed_activations: &mut u64,
    ) -> Vec<Weak<dyn Watcher>> {
        if reason.is_failure() {
            self.log_failure(reason);
        }
        let mut control = self.control().lock();
        control.exit = Some(reason.clone());
        if control.pending_kill.take().is_some() {
            *consumed_activations += 1;
        }
        // A move that was still to happen will not.
        if control.move_request.take().is_some() {
            *consumed_activations += 1;
        }
        // The cells it moved from may go once nobody holds them (their timers end with it).
        let moved_from = std::mem::take(&mut control.moved_from);
        let watchers = std::mem::take(&mut control.watchers);
        drop(control);
        drop(moved_from);
        watchers
    }

    /// Tells `watchers` (those still there) that the process ended with `reason`.
    pub(super) fn notify_watchers(&self, watchers: Vec<Weak<dyn Watcher>>, reason: &ExitReason) {
        for watcher in watchers.into_iter().filter_map(|w| w.upgrade()) {
            watcher.notify_down(Down::new(self.id, reason.clone()));
        }
    }

    /// Takes a pending kill request, counting it as consumed; or, if the request was to move
    /// to another group (`relocate.rs`), sets `moving` and forgets the kill bit: the turn ends
    /// at the next message boundary and moves the process.
    #[inline]
    pub(super) fn take_request(
        &self,
        consumed_activations: &mut u64,
        moving: &mut bool,
    ) -> Option<ExitReason> {
        if !self.mailbox.kill_requested() {
            return None;
        }
        let mut control = self.control().lock();
        if let Some(reason) = control.pending_kill.take() {
            *consumed_activations += 1;
            return Some(reason);
        }
        // Not a kill: a move to make, or the stale bit of a move request that was withdrawn.
        self.mailbox.clear_kill();
        *moving = control.move_request.is_some();
        None
    }

    /// Takes a pending kill request, counting it as consumed.
    #[inline]
    pub(super) fn take_kill_request(&self, consumed_activations: &mut u64) -> Option<ExitReason> {
        if !self.mailbox.kill_requested() {
            return None;
        }
        let pending = self.control().lock().pending_kill.take();
        if pending.is_some() {
            *consumed_activations += 1;
        }
        Some(pending.unwrap_or(ExitReason::Normal))
    }

    /// For a terminated process whose token the caller holds (messages that raced with its
    /// termination): dead-letters them with the exit reason and releases the token.
    #[cold]
    #[inline(never)]
    pub(super) fn drain_after_exit(&self) {
        if let Some(next) = self.moved_to() {
            return self.forward_queue(&next);
        }
        let reason = self.control().lock().exit.clone();
        self.drain_to_dead_letters(&reason.unwrap_or(ExitReason::Normal));
    }

    /// Gives every queued message to the dead-letter sink (or to the exit hook, if the
    /// process was spawned with one) and releases the token.
    pub(super) fn drain_to_dead_letters(&self, reason: &ExitReason) {
        let hook = self.control_if_any().and_then(|c| c.lock().on_exit.clone());
        if let Some(hook) = hook {
            return self.drain_to_exit_hook(&hook, reason);
        }
        let mut count = 0;
        let kernel = &self.group.kernel;
        // SAFETY: callers hold the token of a closed mailbox. (I9)
        unsafe {
            self.mailbox.drain_closed(|msg, meta| {
                count += 1;
                if meta != observe::UNOBSERVED && self.group.observes() {
                    observe::dead_lettered(&self.group, self.principal.as_ref(), meta);
                }
                kernel.dead_letter(DeadLetter::new(
                    self.id,
                    reason.clone(),
                    P::__dead_letter(msg.msg),
                ));
            })
        };
        if count > 0 {
            self.group.counters.add(Event::DeadLettered, count);
        }
    }

    /// [`drain_to_dead_letters`](Self::drain_to_dead_letters) for a process with an exit hook:
    /// the queue, oldest first, goes to the hook, counted as `moved` (as a hand-over's queue:
    /// the hook posts them again elsewhere); what it returns goes to the dead-letter sink.
    fn drain_to_exit_hook(&self, hook: &super::model::OnExit, reason: &ExitReason) {
        let mut queued = Vec::new();
        // SAFETY: callers hold the token of a closed mailbox. (I9)
        unsafe {
            self.mailbox.drain_closed(|msg, meta| {
                if meta != observe::UNOBSERVED && self.group.observes() {
                    observe::dead_lettered(&self.group, self.principal.as_ref(), meta);
                }
                queued.push(QueuedMessage::new(P::__dead_letter(msg.msg)));
            })
        };
        let count = queued.len() as u64;
        if count > 0 {
            self.group.counters.add(Event::Moved, count);
        }
        let run = std::panic::AssertUnwindSafe(|| hook(reason, queued));
        let left = std::panic::catch_unwind(run).unwrap_or_else(|_| {
            tracing::error!(process = %self.id, "an exit hook panicked; its messages are lost");
            Vec::new()
        });
        if !left.is_empty() {
            let n = left.len() as u64;
            self.group.counters.sub_moved(n);
            self.group.counters.add(Event::DeadLettered, n);
            for message in left {
                let letter = message.into_dead_letter(self.id, reason.clone());
                self.group.kernel.dead_letter(letter);
            }
        }
    }

    /// Sets the exit hook unless the process has already terminated; returns whether it did.
    pub(crate) fn set_on_exit(&self, hook: super::model::OnExit) -> bool {
        let mut control = self.control().lock();
        if control.exit.is_some() {
            return false;
        }
        control.on_exit = Some(hook);
        true
    }
}
