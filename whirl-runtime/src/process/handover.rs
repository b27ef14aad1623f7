//! Moving a process out of the runtime, the local half of a migration.
//!
//! [`Addr::hand_over`] asks a process to stop before it handles another message, as
//! [`Addr::exit`] does, but instead of running its `terminated` hook and giving the messages
//! left in its inbox to the dead-letter sink, it hands its state and those messages, in the
//! order they were queued, to a receiver: whirl-dist encodes them, sends them to another node
//! and restores the process there, posting the messages again before any new one.
//!
//! The process ends with [`ExitReason::Normal`] for everyone watching it here; its inbox is
//! closed at that moment, so a later post comes back as [`PostError::Terminated`], and the
//! messages handed over are counted as `moved` in the group's counters
//! ([`MessageCounts::moved`](crate::control::MessageCounts::moved)), which keeps the
//! accounting identity: `posted = handled + rejected + dead_lettered + moved + queued`. A post
//! that races with the closing and wins its slot after the last one handed over is
//! dead-lettered, as after any exit.
//!
//! [`PostError::Terminated`]: crate::PostError::Terminated

use std::sync::Arc;

use super::addr::Addr;
use super::model::{Process, ProcessCell};
use crate::control::Event;
use crate::group::observe;
use crate::lifecycle::{ExitReason, ProcessId, QueuedMessage};

/// A process moved out of the runtime by [`Addr::hand_over`].
#[non_exhaustive]
pub struct HandedOver<P> {
    /// The id it had here.
    pub id: ProcessId,
    /// Its state, as its last handler left it. Its `terminated` hook did not run.
    pub state: P,
    /// The messages that were queued for it, oldest first, as the values that were posted.
    pub queued: Vec<QueuedMessage>,
}

impl<P> std::fmt::Debug for HandedOver<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandedOver")
            .field("id", &self.id)
            .field("queued", &self.queued.len())
            .finish_non_exhaustive()
    }
}

/// Why [`Addr::hand_over`] did nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HandOverError {
    /// The process has terminated, or was already asked to (by `exit` or a hand-over): the
    /// first request wins.
    #[error("the process has terminated or is already terminating")]
    Ending,
}

/// What [`Addr::hand_over`] stores for the turn that ends the process.
pub(super) type Receiver<P> = Box<dyn FnOnce(HandedOver<P>) + Send>;

impl<P: Process> Addr<P> {
    /// Moves the process out of the runtime before it handles another message: `receiver`
    /// gets its state and the messages queued for it, in order ([`HandedOver`]). The process
    /// ends with [`ExitReason::Normal`] for its watchers here; the messages count as `moved`
    /// ([`MessageCounts::moved`](crate::control::MessageCounts::moved)). A handler already running
    /// finishes first; an async handler suspended in an `await` is cancelled, as by
    /// [`exit`](Addr::exit). `receiver` runs on the worker that ends the process: keep it
    /// short (encode, send, return).
    ///
    /// For migration (whirl-dist's `Node::migrate`). A supervised process should not be
    /// handed over: its supervisor sees it end normally and, if it is permanent, restarts it.
    pub fn hand_over(
        &self,
        receiver: impl FnOnce(HandedOver<P>) + Send + 'static,
    ) -> Result<(), HandOverError> {
        let mut cell = Arc::clone(self.cell());
        loop {
            let mut control = cell.control().lock();
            if control.moved_to.is_some() {
                // The process moved to another group: the request goes after it (in a loop:
                // a stale address may be thousands of moves behind).
                drop(control);
                match cell.forwarded() {
                    Some(next) => {
                        cell = next;
                        continue;
                    }
                    None => return Err(HandOverError::Ending),
                }
            }
            if control.exit.is_some() || control.pending_kill.is_some() {
                return Err(HandOverError::Ending);
            }
            let receiver: Receiver<P> = Box::new(receiver);
            control.hand_over = Some(Box::new(receiver));
            control.pending_kill = Some(ExitReason::Normal);
            // As for a kill: counted before the token is requested, consumed by the turn
            // that acts on it.
            cell.group.counters.add(Event::Activated, 1);
            break;
        }
        let after = cell.mailbox.request_kill();
        cell.after_token_attempt(after);
        Ok(())
    }
}

impl<P: Process> Addr<P> {
    /// Posts a message that was admitted once already and is being delivered again: one of the
    /// [`queued`](HandedOver::queued) messages of a process restored from a hand-over. The
    /// group's predicate is not consulted (the message was accepted before it moved, and
    /// refusing it now would have nobody to give it back to); it fails only if the process
    /// has terminated ([`PostError::Terminated`], the message back).
    ///
    /// Migration plumbing, for whirl-dist: hidden from the docs.
    ///
    /// [`PostError::Terminated`]: crate::PostError::Terminated
    #[doc(hidden)]
    pub fn post_moved<M>(&self, msg: M) -> Result<(), crate::PostError<M>>
    where
        P: crate::Handles<M>,
        M: crate::Message,
    {
        let mut cell = Arc::clone(self.cell());
        // Following the moves in a loop: a stale address may be thousands of cells behind.
        while cell.mailbox.is_closed() {
            match cell.settle_moved() {
                Some(next) => cell = next,
                None => return Err(crate::PostError::Terminated(msg)),
            }
        }
        let meta = observe::stamp(P::cost(&msg));
        cell.deliver(P::into_message(msg), meta);
        Ok(())
    }

    /// Gives a message handed over with this (ended) process, which cannot follow it where it
    /// went, to the runtime's dead-letter sink, as a dead letter of this process: counted as
    /// dead-lettered instead of moved, so the accounting identity still holds. Migration
    /// plumbing, for whirl-dist: hidden from the docs.
    #[doc(hidden)]
    pub fn dead_letter_moved(&self, message: QueuedMessage) {
        let cell = self.cell();
        cell.group.counters.add(Event::DeadLettered, 1);
        cell.group.counters.sub_moved(1);
        let letter = message.into_dead_letter(cell.id, ExitReason::Normal);
        cell.group.kernel.dead_letter(letter);
    }

    /// The group the process runs in now (it may have moved: [`Addr::move_to`]).
    pub fn group(&self) -> crate::Group {
        crate::Group::from_shared(Arc::clone(&self.current().cell().group))
    }
}

impl<P: Process> ProcessCell<P> {
    /// The hand-over receiver, if the process is ending by [`Addr::hand_over`].
    pub(super) fn take_hand_over(&self) -> Option<Receiver<P>> {
        let erased = self.control().lock().hand_over.take()?;
        erased.downcast::<Receiver<P>>().ok().map(|boxed| *boxed)
    }

    /// Ends a process by handing it over. The caller holds the token of the closed mailbox
    /// (an async handler it had pending was already cancelled); it is released at the end.
    pub(super) fn finish_hand_over(
        self: Arc<Self>,
        receiver: Receiver<P>,
        handled: u64,
        mut consumed_activations: u64,
    ) {
        // SAFETY: we hold the token, so the body is ours; the reference ends in this statement.
        // (I9)
        let state = self.body.with_mut(|b| unsafe { (*b).state.take() });
        let mut queued = Vec::new();
        // SAFETY: callers hold the token of a closed mailbox. (I9)
        unsafe {
            self.mailbox.drain_closed(|msg, meta| {
                if meta != observe::UNOBSERVED && self.group.observes() {
                    // It leaves this group unhandled: a predicate counting what is in flight
                    // hears of it as of a dead letter.
                    observe::dead_lettered(&self.group, self.principal.as_ref(), meta);
                }
                queued.push(QueuedMessage::new(P::__dead_letter(msg.msg)));
            })
        };
        let reason = ExitReason::Normal;
        let watchers = self.record_exit(&reason, &mut consumed_activations);
        // Before anyone hears of the end: a supervisor restarting this process must not find
        // the new incarnation among the members this failure kills.
        if let Some(fate) = &self.group.shares_state {
            fate.ended(self.id, &reason);
        }
        self.notify_watchers(watchers, &reason);
        let registered = self.group.kernel.registry.remove(self.id);
        self.group.counters.add(Event::Terminated, 1);
        match state {
            Some(state) => {
                if !queued.is_empty() {
                    self.group.counters.add(Event::Moved, queued.len() as u64);
                }
                let handed = HandedOver {
                    id: self.id,
                    state,
                    queued,
                };
                let run = std::panic::AssertUnwindSafe(|| receiver(handed));
                if std::panic::catch_unwind(run).is_err() {
                    tracing::error!(
                        process = %self.id,
                        "a hand-over receiver panicked: the process and its queue are dropped"
                    );
                }
            }
            // No state to hand over (it cannot happen: the state lives until its process
            // ends): the queue goes where an ended process's queue goes.
            None => {
                let count = queued.len() as u64;
                for message in queued {
                    let letter = message.into_dead_letter(self.id, reason.clone());
                    self.group.kernel.dead_letter(letter);
                }
                if count > 0 {
                    self.group.counters.add(Event::DeadLettered, count);
                }
            }
        }
        // Last, so that a quiescence check cannot pass before the hand-over is done.
        self.count_turn(handled, consumed_activations);
        drop(registered);
    }
}
