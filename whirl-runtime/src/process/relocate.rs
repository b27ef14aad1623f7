//! Moving a live process to another group of the same runtime, at a message boundary, with
//! nothing lost and every sender's order kept.
//!
//! [`Addr::move_to`] (or [`Ctx::move_to`] from the process itself, or a controller through
//! [`Group::move_process`](crate::Group::move_process) or an automatic-grouping rule) asks the process to move; the request
//! is acted on by its next turn, between two messages (an async handler that is waiting
//! completes first). The turn that moves it:
//!
//! 1. builds a cell in the target group with the same id, principal and state, its token held
//!    by the mover and its `started` hook already run;
//! 2. under the old cell's control lock, hands the monitors over to the new cell and records
//!    where the process went (a kill or a monitor arriving from now on is passed on);
//! 3. marks the old mailbox closed *and moved*, and passes every queued message on to the new
//!    cell, in order, before anything else can reach it;
//! 4. releases the old mailbox, passing on any message that slipped in, then lets the new cell
//!    run in its group.
//!
//! Addresses taken before the move keep working: a post to the old cell finds it moved and
//! goes on to the new one (through the new group's admission predicate, as any post there).
//! Order is kept per sender: such a post first takes the old mailbox's token and passes on
//! whatever is still queued there, so a message sent before it, which may still be in the old
//! inbox, is passed on first; and a sender whose message slipped into the old inbox while the
//! mover held the token waits (yielding) until it has been passed on
//! ([`AfterPush::Moved`]). Forwarding costs a stale address a few atomic operations per post;
//! the new address ([`Addr::current`]) costs nothing extra.
//!
//! Accounting: the messages passed on count as `moved` in the group left and as `posted` in
//! the group joined, and the process as `terminated` in one and `spawned` in the other, so
//! each group's identity `posted = handled + rejected + dead_lettered + moved + queued` holds.
//! Watchers see no `Down`: the process did not end.
//!
//! Processes that share state ([`GroupBuilder::shares_state`](crate::GroupBuilder::shares_state))
//! are confined to their group, and no process moves into or out of such a group.

use std::any::Any;
use std::sync::Arc;

use super::addr::Addr;
use super::mailbox::AfterPush;
use super::model::{Ctx, Process, ProcessCell};
use super::trace::Envelope;
use crate::control::Event;
use crate::group::{observe, Group, GroupShared, MoveError, Task};

impl<P: Process> Addr<P> {
    /// Moves the process to `group` at its next message boundary: the message it is handling
    /// (if any) finishes here, every later one is handled there, in the order it was posted.
    /// Returns at once; the move happens on the process's own turn. This address keeps
    /// working afterwards (it forwards); [`Addr::current`] gives the direct one. Moving to the
    /// group the process is in does nothing; a second request before the first is acted on
    /// replaces it.
    ///
    /// The messages passed on count as `moved` in the group left and as `posted` in the one
    /// joined; watchers see no `Down` (the process did not end); timers and monitors follow.
    pub fn move_to(&self, group: &Group) -> Result<(), MoveError> {
        self.current().cell().ask_to_move(group.shared())
    }

    /// The address of the process where it is now: this one, or, if the process moved to
    /// another group, the address of its cell there (posting through it skips forwarding).
    pub fn current(&self) -> Addr<P> {
        let mut cell = Arc::clone(self.cell());
        // Each hop passes on what is still queued in the cell left, so that a post through
        // the address returned cannot overtake a message this thread sent through this one.
        while let Some(next) = cell.settle_moved() {
            cell = next;
        }
        Addr::from_cell(cell)
    }
}

impl<P: Process> Ctx<P> {
    /// Moves this process to `group` once the current handler returns: every later message is
    /// handled there, in order. See [`Addr::move_to`].
    pub fn move_to(&mut self, group: &Group) -> Result<(), MoveError> {
        let asked = self.cell.record_move(group.shared())?;
        // The turn running this handler acts on it as the handler returns (a detached
        // context, an async handler's, is not that turn: its process is asked like any other).
        if asked && !self.recorder.is_null() {
            self.moving = true;
        } else if asked {
            let after = self.cell.mailbox.request_kill();
            self.cell.after_token_attempt(after);
        }
        Ok(())
    }
}

impl<P: Process> ProcessCell<P> {
    /// Records a move request and asks for a turn to act on it.
    pub(crate) fn ask_to_move(self: &Arc<Self>, to: &Arc<GroupShared>) -> Result<(), MoveError> {
        if self.record_move(to)? {
            let after = self.mailbox.request_kill();
            self.after_token_attempt(after);
        }
        Ok(())
    }

    /// Records a move request; `true` if a turn must act on it (`false`: already there, or
    /// the request went on to the cell the process has moved to).
    fn record_move(self: &Arc<Self>, to: &Arc<GroupShared>) -> Result<bool, MoveError> {
        let mut cell = Arc::clone(self);
        // Following the moves in a loop: a stale address may be thousands of cells behind.
        loop {
            match cell.record_move_here(to)? {
                Recorded::Here(asked) => {
                    if Arc::ptr_eq(&cell, self) {
                        return Ok(asked);
                    }
                    if asked {
                        let after = cell.mailbox.request_kill();
                        cell.after_token_attempt(after);
                    }
                    return Ok(false);
                }
                Recorded::MovedTo(next) => cell = next,
            }
        }
    }

    /// [`record_move`](Self::record_move) for this cell only: recorded here (`true` if a turn
    /// must act on it), or the cell the process moved to, where the request goes instead.
    fn record_move_here(self: &Arc<Self>, to: &Arc<GroupShared>) -> Result<Recorded<P>, MoveError> {
        if !Arc::ptr_eq(&to.kernel, &self.group.kernel) {
            return Err(MoveError::OtherRuntime(to.name.clone()));
        }
        if to.is_stopped() {
            return Err(MoveError::Stopped(to.name.clone()));
        }
        if P::SHARES_STATE.is_some() || self.group.shares_state.is_some() {
            return Err(MoveError::SharesState(self.group.name.clone()));
        }
        if to.shares_state.is_some() {
            return Err(MoveError::SharesState(to.name.clone()));
        }
        let mut control = self.control().lock();
        if control.moved_to.is_some() {
            drop(control);
            return match self.forwarded() {
                Some(next) => Ok(Recorded::MovedTo(next)),
                None => Err(MoveError::Ending),
            };
        }
        if control.exit.is_some() || control.pending_kill.is_some() || self.mailbox.is_closed() {
            return Err(MoveError::Ending);
        }
        if Arc::ptr_eq(to, &self.group) {
            // Already there: withdraw an earlier request, if any.
            if control.move_request.take().is_some() {
                self.group.counters.add(Event::Deactivated, 1);
            }
            return Ok(Recorded::Here(false));
        }
        if control.move_request.replace(Arc::clone(to)).is_none() {
            // Counted before the token is requested, like a kill, so that a quiescence check
            // never misses it; consumed by the turn that moves the process.
            self.group.counters.add(Event::Activated, 1);
        }
        Ok(Recorded::Here(true))
    }

    /// Whether a move was requested (read by the turn after an async handler completes, when
    /// the request may have arrived while it was waiting). No control block is allocated.
    pub(super) fn move_requested(&self) -> bool {
        self.control_if_any()
            .is_some_and(|control| control.lock().move_request.is_some())
    }

    /// The cell the process moved (or is moving) to, if any. Set before the old mailbox is
    /// marked moved; anything sent on to it must first [settle](Self::settle_moved) this cell,
    /// so that it cannot overtake what is still queued here.
    pub(crate) fn moved_to(&self) -> Option<Arc<ProcessCell<P>>> {
        let control = self.control_if_any()?.lock();
        control
            .moved_to
            .as_ref()?
            .downcast_ref::<Arc<ProcessCell<P>>>()
            .cloned()
    }

    /// Moves the process as its turn ends (the caller holds the token, no async handler is
    /// pending, and the turn's `handled` messages and `consumed_activations` are not counted
    /// yet). Returns `None` once the process has moved (the token of this cell released), or
    /// gives back the counts if it stays: the request was withdrawn, or the target can no
    /// longer take it (stopped meanwhile), or a kill arrived first.
    pub(super) fn finish_move(
        self: &Arc<Self>,
        handled: u64,
        mut consumed_activations: u64,
    ) -> Option<(u64, u64)> {
        let target = {
            let mut control = self.control().lock();
            let Some(target) = control.move_request.take() else {
                return Some((handled, consumed_activations));
            };
            consumed_activations += 1;
            if Arc::ptr_eq(&target, &self.group) {
                return Some((handled, consumed_activations));
            }
            if control.pending_kill.is_some() || target.is_stopped() {
                if target.is_stopped() {
                    tracing::warn!(
                        process = %self.id,
                        group = %target.name,
                        "a process was to move to a group that stopped meanwhile; it stays"
                    );
                }
                return Some((handled, consumed_activations));
            }
            target
        };
        // SAFETY: we hold the token, so the body is ours; no async handler is pending, so
        // nothing borrows the state; the reference ends in this statement. (I9)
        let Some(state) = self.body.with_mut(|b| unsafe { (*b).state.take() }) else {
            return Some((handled, consumed_activations));
        };
        let next = Arc::new(ProcessCell::moved_in(
            self.id,
            Arc::clone(&target),
            self.principal.clone(),
            state,
        ));
        {
            let mut control = self.control().lock();
            let watchers = std::mem::take(&mut control.watchers);
            let earlier = std::mem::take(&mut control.moved_from);
            // A kill or another move asked for while this one was being made goes with the
            // process (and so does its count, from the group left to the group joined).
            let kill = control.pending_kill.take();
            let hand_over = control.hand_over.take();
            let again = control.move_request.take();
            control.moved_to = Some(Box::new(Arc::clone(&next)) as Box<dyn Any + Send>);
            let mut theirs = next.control().lock();
            theirs.watchers = watchers;
            theirs.monitoring = std::mem::take(&mut control.monitoring);
            theirs.supervision = control.supervision.take();
            theirs.on_exit = control.on_exit.clone();
            theirs.moved_from = earlier;
            theirs
                .moved_from
                .push(Arc::clone(self) as Arc<dyn Any + Send + Sync>);
            let carried = u64::from(kill.is_some()) + u64::from(again.is_some());
            if carried > 0 {
                theirs.pending_kill = kill;
                theirs.hand_over = hand_over;
                theirs.move_request = again;
                target.counters.add(Event::Activated, carried);
                self.group.counters.add(Event::Deactivated, carried);
                // We hold its token: this only sets the bit its first turn looks at.
                let _ = next.mailbox.request_kill();
            }
        }
        let replaced = self
            .group
            .kernel
            .registry
            .replace(self.id, Arc::clone(&next) as Task);
        // SAFETY: we hold the token. (I9)
        unsafe { self.mailbox.close_moved() };
        self.group.counters.add(Event::Terminated, 1);
        target.counters.add(Event::Spawned, 1);
        let mut passed = 0;
        // SAFETY: we hold the token of this (now closed) mailbox. (I9)
        while let Some((msg, meta)) = unsafe { self.mailbox.pop_with_meta() } {
            self.pass_on(&next, msg, meta);
            passed += 1;
        }
        tracing::debug!(
            process = %self.id,
            from = %self.group.name,
            to = %target.name,
            queued = passed,
            "process moved"
        );
        // Releases this token, passing on what slipped in meanwhile.
        self.forward_queue(&next);
        // SAFETY: we created `next` holding its token, and nobody else has run it. (I9)
        let release = unsafe { next.mailbox.release() };
        if release == super::mailbox::AfterRelease::Reschedule {
            target.schedule(Arc::clone(&next) as Task);
        }
        self.count_turn(handled, consumed_activations);
        drop(replaced);
        None
    }

    /// Passes a message that was admitted here on to the cell the process moved to: `moved`
    /// here, `posted` there, no admission check (it was accepted once, and refusing it now
    /// would have nobody to give it back to).
    fn pass_on(&self, next: &Arc<ProcessCell<P>>, msg: Envelope<P::Message>, meta: u32) {
        let after = self.hand_on(next, msg, meta);
        next.after_token_attempt(after);
    }

    /// [`pass_on`](Self::pass_on) up to the push: what to do about `next`'s token is left to
    /// the caller.
    fn hand_on(&self, next: &ProcessCell<P>, msg: Envelope<P::Message>, meta: u32) -> AfterPush {
        if meta != observe::UNOBSERVED && self.group.observes() {
            // It leaves this group unhandled: a predicate counting what is in flight hears of
            // it as of a dead letter.
            observe::dead_lettered(&self.group, self.principal.as_ref(), meta);
        }
        self.group.counters.add(Event::Moved, 1);
        next.group.counters.add(Event::Posted, 1);
        next.mailbox.push(msg, meta)
    }

    /// For a moved cell whose token the caller holds: passes every queued message on to
    /// `next` and releases the token (repeating while producers slip messages in).
    ///
    /// `next` may have moved on too (or ended): then whoever pushes into it must pass its
    /// queue on in turn, and so on down the chain of cells. That is a loop here, not a
    /// recursion through the push, so the chain may be as long as the moves were many.
    pub(super) fn forward_queue(&self, next: &Arc<ProcessCell<P>>) {
        if !self.forward_queue_once(next) {
            return;
        }
        // We hold the token of `cell`, a closed mailbox.
        let mut cell = Arc::clone(next);
        while let Some(after) = cell.moved_to() {
            if !cell.forward_queue_once(&after) {
                return;
            }
            cell = after;
        }
        // It ended: what we passed on goes where its late messages go.
        cell.drain_after_exit();
    }

    /// One step of [`forward_queue`](Self::forward_queue): drains this closed mailbox (the
    /// caller holds its token) into `next` and releases the token. Returns `true` if the
    /// caller now holds `next`'s token, which it must then drain in turn: `next` is closed
    /// (it moved on, or ended) and holds some of the messages passed on.
    fn forward_queue_once(&self, next: &Arc<ProcessCell<P>>) -> bool {
        let mut holding = false;
        // SAFETY: callers hold the token of a closed mailbox. (I9)
        unsafe {
            self.mailbox.drain_closed(|msg, meta| {
                let after = self.hand_on(next, msg, meta);
                if holding {
                    // Ours: the message waits for our drain of `next`, after those before it.
                    return;
                }
                match after {
                    // Closed, and we took its token.
                    AfterPush::Drain => holding = true,
                    // Moved on, and another thread holds its token (passing its queue on):
                    // the message may still be there. Wait for the token (its holders only
                    // pass messages on, down the chain, never back), then drain it ourselves.
                    AfterPush::Moved => {
                        while !next.mailbox.try_take() {
                            std::thread::yield_now();
                        }
                        holding = true;
                    }
                    AfterPush::Nothing | AfterPush::Schedule => next.after_token_attempt(after),
                }
            })
        };
        holding
    }

    /// A producer's message may sit in this moved cell's inbox while another thread holds its
    /// token: takes the token (yielding until it is free: once the process has moved, holders
    /// only pass messages on, and the mover holds it until the queue has been passed on) and
    /// passes on what is queued, so the caller's next message cannot overtake it. Returns the
    /// cell the process moved to; `None` (at once) if it did not move.
    pub(super) fn settle_moved(&self) -> Option<Arc<ProcessCell<P>>> {
        let next = self.moved_to()?;
        while !self.mailbox.try_take() {
            std::thread::yield_now();
        }
        self.forward_queue(&next);
        Some(next)
    }

    /// Delivers a message that skips admission (a timer's, a `Down` notice, a supervisor's
    /// own): to this cell, or on to where the process moved. `false` if it has terminated.
    pub(crate) fn deliver_unadmitted(self: &Arc<Self>, msg: P::Message, meta: u32) -> bool {
        let mut cell = Arc::clone(self);
        loop {
            if !cell.mailbox.is_closed() {
                cell.deliver(msg, meta);
                return true;
            }
            match cell.settle_moved() {
                Some(next) => cell = next,
                None => return false,
            }
        }
    }

    /// The kill, monitor or hand-over request that found this cell moved goes on to the cell
    /// the process moved to, once what was queued here has been passed on.
    pub(super) fn forwarded(&self) -> Option<Arc<ProcessCell<P>>> {
        self.moved_to()?;
        self.settle_moved()
    }

    /// Whether the process has terminated, following moves.
    pub(crate) fn has_terminated(&self) -> bool {
        if !self.mailbox.is_closed() {
            return false;
        }
        let Some(mut cell) = self.moved_to() else {
            return self.exit_recorded();
        };
        loop {
            if !cell.mailbox.is_closed() {
                return false;
            }
            match cell.moved_to() {
                Some(next) => cell = next,
                None => return cell.exit_recorded(),
            }
        }
    }

    /// For a closed cell the process did not move on from: whether its end is recorded.
    /// Closed is not yet ended: the `terminated` hook may still be running. Ended is when the
    /// exit is recorded, the moment its watchers are taken to be told: a watch added from then
    /// on runs at once.
    fn exit_recorded(&self) -> bool {
        self.control_if_any()
            .is_some_and(|control| control.lock().exit.is_some())
    }
}

/// Where [`ProcessCell::record_move_here`] left a move request.
enum Recorded<P: Process> {
    /// Recorded in this cell: `true` if a turn must act on it.
    Here(bool),
    /// The process moved on to this cell: the request goes there.
    MovedTo(Arc<ProcessCell<P>>),
}

/// Each cell a process moved from holds the next one (`Control::moved_to`), so a process that
/// moved N times leaves a chain of N cells, the first held by addresses taken before the moves
/// (the process itself keeps them all alive through `moved_from` until it ends). Dropped the
/// plain way, each cell's drop would drop the next from inside its own: N nested drops, which
/// overflow the stack for a few thousand moves. This unlinks the chain and drops it one cell at
/// a time instead.
impl<P: Process> Drop for ProcessCell<P> {
    fn drop(&mut self) {
        let mut next = self.take_moved_to();
        while let Some(cell) = next {
            // The last holder of the next cell: unlink what follows it before it goes, so its
            // own drop has nothing to recurse into. Otherwise someone else still holds it and
            // the chain stops here for now.
            next = Arc::into_inner(cell).and_then(|mut cell| cell.take_moved_to());
        }
    }
}

impl<P: Process> ProcessCell<P> {
    /// Takes the cell this one forwards to, if any (for the drop above: the lock is not
    /// contended, the cell being ours alone).
    fn take_moved_to(&mut self) -> Option<Arc<ProcessCell<P>>> {
        let moved_to = self.control_if_any()?.lock().moved_to.take()?;
        moved_to
            .downcast::<Arc<ProcessCell<P>>>()
            .ok()
            .map(|boxed| *boxed)
    }
}
