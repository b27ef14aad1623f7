//! The router's manager: a process that restarts members, resizes the pool and follows the
//! autoscaling signal, one request at a time.
//!
//! Every member is spawned with an exit hook (`process/cell.rs`). When a member ends, the hook
//! runs on the worker that ends it and posts [`Command::Exited`] here, carrying the messages
//! that were still queued in the member's inbox (they are not dead-lettered). The manager puts
//! them at the front of the member's buffer (they are older than anything buffered since) and
//! spawns the replacement, which gets the buffer, oldest first, before the slot is live again.
//! A member ending while its slot is retiring (a shrink) is not replaced: the slot leaves the
//! table, and its buffer is routed through the new table, under the table's write lock, so no
//! newer post can overtake it.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::autoscale::{Autoscale, Policy};
use super::strategy::Kind;
use super::table::{
    catch_inline, post_inline, requeue_caught, Command, Entry, Inner, ManagerMsg, Slot,
};
use crate::isolation::{Isolated, Message};
use crate::lifecycle::{DeadLetter, ExitReason, Failure, ProcessId, QueuedMessage};
use crate::process::{spawn_with_exit_hook, Addr, Ctx, Handles, OnExit, Process, Sender};
use crate::time::TimerHandle;

/// The autoscaler's periodic tick.
#[derive(Clone, Copy)]
pub(super) struct Tick;

// SAFETY: no data. (I8)
unsafe impl Isolated for Tick {}
impl Message for Tick {
    const BYPASSES_ADMISSION: bool = true;
}

/// The manager process's state.
pub(super) struct Manager<P: Handles<M>, M: Message> {
    inner: Arc<Inner<P, M>>,
    bounds: (usize, usize),
    autoscale: Option<Autoscale>,
    /// Restarts allowed within the period before they are delayed.
    max_restarts: usize,
    period: Duration,
    backoff: Duration,
    recent_restarts: VecDeque<Instant>,
    /// A shrink is waiting for retiring members to end.
    retiring: bool,
    /// A resize asked for while a shrink was under way.
    pending_resize: Option<usize>,
    ticker: Option<TimerHandle>,
}

impl<P: Handles<M>, M: Message> Manager<P, M> {
    pub(super) fn new(
        inner: Arc<Inner<P, M>>,
        bounds: (usize, usize),
        autoscale: Option<Autoscale>,
        (max_restarts, period): (usize, Duration),
        backoff: Duration,
    ) -> Self {
        Manager {
            inner,
            bounds,
            autoscale,
            max_restarts,
            period,
            backoff,
            recent_restarts: VecDeque::new(),
            retiring: false,
            pending_resize: None,
            ticker: None,
        }
    }

    fn slot(&self, index: usize, uid: u64) -> Option<Arc<Slot<P, M>>> {
        let table = self.inner.table.read();
        table.slots.get(index).filter(|s| s.uid == uid).cloned()
    }

    fn closing(&self) -> bool {
        self.inner.stopped.load(Ordering::Acquire) || self.inner.group.shared().kernel.is_closing()
    }

    fn exited(
        &mut self,
        (index, uid, generation): (usize, u64, u64),
        reason: ExitReason,
        queued: Vec<M>,
        ctx: &mut Ctx<Self>,
    ) {
        self.inner
            .counts
            .salvaged
            .fetch_add(queued.len() as u64, Ordering::Relaxed);
        let Some(slot) = self.slot(index, uid) else {
            // The slot was retired already: these go where its buffer went.
            let table = self.inner.table.read();
            for msg in queued {
                if let Err(e) = self.inner.route(&table, msg, Entry::Admitted) {
                    self.dead_letter(ctx.id(), &reason, [e.into_message()]);
                }
            }
            return;
        };
        let mut state = slot.state.lock();
        if generation != state.generation || state.exited {
            // Posts that raced with an end already handled: they go on after what the
            // member, or its replacement, has.
            drop(state);
            for msg in queued {
                let _ = self.inner.offer_admitted(&slot, msg);
            }
            return;
        }
        state.exited = true;
        slot.set_live(&mut state, false);
        for msg in queued.into_iter().rev() {
            state.buffer.push_front(msg);
        }
        if self.closing() {
            let left: Vec<M> = state.buffer.drain(..).collect();
            let to = state.member.as_ref().map_or(ctx.id(), Addr::id);
            drop(state);
            self.dead_letter(to, &reason, left);
            return;
        }
        let retiring = state.retiring;
        drop(state);
        if retiring {
            self.finish_retire(ctx);
        } else {
            self.restart(index, uid, false, ctx);
        }
    }

    /// Restarts the member of the slot, unless the restart limit is reached and this is not
    /// the delayed restart already (`waited`): then it is delayed by the backoff.
    fn restart(&mut self, index: usize, uid: u64, waited: bool, ctx: &mut Ctx<Self>) {
        let Some(slot) = self.slot(index, uid) else {
            return;
        };
        {
            let state = slot.state.lock();
            if state.retiring || !state.exited {
                return;
            }
        }
        let now = Instant::now();
        while self
            .recent_restarts
            .front()
            .is_some_and(|t| now.duration_since(*t) > self.period)
        {
            self.recent_restarts.pop_front();
        }
        if !waited && self.recent_restarts.len() >= self.max_restarts {
            let _ = ctx.post_after(self.backoff, ManagerMsg(Command::Restart { index, uid }));
            return;
        }
        self.recent_restarts.push_back(now);
        if self.closing() {
            return;
        }
        self.inner.start_member(&slot, index);
        self.inner.counts.restarts.fetch_add(1, Ordering::Relaxed);
    }

    fn resize(&mut self, members: usize, ctx: &mut Ctx<Self>) {
        self.inner.target.store(members, Ordering::Relaxed);
        if self.retiring {
            self.pending_resize = Some(members);
            return;
        }
        if self.closing() {
            return;
        }
        let mut table = self.inner.table.write();
        let len = table.slots.len();
        if members > len {
            for index in len..members {
                let slot = Arc::new(Slot::new());
                self.inner.start_member(&slot, index);
                table.slots.push(slot);
            }
            table.reindex(self.inner.strategy.virtual_nodes());
            self.inner.counts.resizes.fetch_add(1, Ordering::Relaxed);
        } else if members < len {
            self.retiring = true;
            for slot in &table.slots[members..] {
                let mut state = slot.state.lock();
                state.retiring = true;
                if !state.exited {
                    if let Some(member) = &state.member {
                        member.exit(ExitReason::Shutdown);
                    }
                }
            }
            drop(table);
            self.finish_retire(ctx);
        }
    }

    /// Removes the retiring slots once all their members have ended, and routes what waited
    /// for them through the new table.
    fn finish_retire(&mut self, ctx: &mut Ctx<Self>) {
        let mut table = self.inner.table.write();
        let waiting = table.slots.iter().any(|s| {
            let state = s.state.lock();
            state.retiring && !state.exited
        });
        if waiting {
            return;
        }
        let keep = table
            .slots
            .iter()
            .position(|s| s.state.lock().retiring)
            .unwrap_or(table.slots.len());
        let removed: Vec<_> = table.slots.drain(keep..).collect();
        table.reindex(self.inner.strategy.virtual_nodes());
        let broadcast = matches!(self.inner.strategy.kind, Kind::Broadcast(_));
        for slot in removed {
            let mut state = slot.state.lock();
            let left: Vec<M> = state.buffer.drain(..).collect();
            let to = state.member.as_ref().map_or(ctx.id(), Addr::id);
            drop(state);
            if broadcast {
                // Copies meant for a member that is gone: every other member has its own.
                self.dead_letter(to, &ExitReason::Shutdown, left);
                continue;
            }
            for msg in left {
                if let Err(e) = self.inner.route(&table, msg, Entry::Admitted) {
                    self.dead_letter(to, &ExitReason::Shutdown, [e.into_message()]);
                }
            }
        }
        drop(table);
        self.retiring = false;
        self.inner.counts.resizes.fetch_add(1, Ordering::Relaxed);
        if let Some(members) = self.pending_resize.take() {
            self.resize(members, ctx);
        }
    }

    fn stop(&mut self, ctx: &mut Ctx<Self>) {
        if let Some(ticker) = self.ticker.take() {
            ticker.cancel();
        }
        let table = self.inner.table.write();
        for slot in &table.slots {
            let mut state = slot.state.lock();
            state.retiring = true;
            slot.set_live(&mut state, false);
            let left: Vec<M> = state.buffer.drain(..).collect();
            let to = state.member.as_ref().map_or(ctx.id(), Addr::id);
            if let Some(member) = &state.member {
                member.exit(ExitReason::Shutdown);
            }
            drop(state);
            self.dead_letter(to, &ExitReason::Shutdown, left);
        }
        drop(table);
        ctx.complete();
    }

    fn tick(&mut self, ctx: &mut Ctx<Self>) {
        let Some(autoscale) = &self.autoscale else {
            return;
        };
        if self.retiring || self.closing() {
            return;
        }
        let n = self.inner.table.read().slots.len().max(1);
        let desired = match autoscale.policy {
            Policy::FollowThreads { per_thread } => self.inner.group.threads() * per_thread,
            Policy::QueueLength {
                grow_above,
                shrink_below,
            } => {
                let per_member = self.inner.group.counts().queued() / n as u64;
                if per_member > grow_above {
                    n + 1
                } else if per_member < shrink_below {
                    n - 1
                } else {
                    n
                }
            }
        };
        let desired = desired.clamp(self.bounds.0, self.bounds.1);
        if desired != n {
            self.resize(desired, ctx);
        }
    }

    /// Gives messages that can no longer reach a member to the dead-letter sink. They are not
    /// in any group's counters at this point (a buffered message was never posted; a salvaged
    /// one was counted as moved), so the counters are left alone (I3).
    fn dead_letter(
        &self,
        to: ProcessId,
        reason: &ExitReason,
        messages: impl IntoIterator<Item = M>,
    ) {
        let kernel = &self.inner.group.shared().kernel;
        for msg in messages {
            let boxed: Box<dyn std::any::Any + Send> = Box::new(msg);
            kernel.dead_letter(DeadLetter::new(
                to,
                reason.clone(),
                (std::any::type_name::<M>(), boxed),
            ));
        }
    }
}

impl<P: Handles<M>, M: Message> Inner<P, M> {
    /// Spawns the next incarnation of `slot` (the first, if it has none), hands it the
    /// slot's buffer, oldest first, and makes the slot live.
    pub(super) fn start_member(&self, slot: &Slot<P, M>, index: usize) {
        let state = (self.factory.lock())(index);
        let mut slot_state = slot.state.lock();
        if slot_state.member.is_some() {
            slot_state.generation += 1;
        }
        slot_state.exited = false;
        let hook = self.exit_hook(index, slot.uid, slot_state.generation);
        let member = spawn_with_exit_hook(self.group.shared(), state, hook);
        slot_state.member = Some(member.clone());
        let generation = slot_state.generation;
        while let Some(msg) = slot_state.buffer.pop_front() {
            let (posted, caught) = post_inline(slot.uid, generation, || member.post_moved(msg));
            if let Err(e) = posted {
                // It ended already; its end is on its way to the manager.
                slot_state.buffer.push_front(e.into_message());
                return;
            }
            if !caught.is_empty() {
                requeue_caught(slot, &mut slot_state, caught);
                return;
            }
        }
        slot.set_live(&mut slot_state, true);
    }

    /// What a member's inbox is drained into when it ends: its messages of type `M` go to
    /// the manager; anything else (and everything, once the router is stopped or the
    /// manager gone) goes back to the dead-letter sink.
    fn exit_hook(&self, index: usize, uid: u64, generation: u64) -> OnExit {
        let manager = self.manager.get().cloned();
        let stopped = Arc::clone(&self.stopped);
        Arc::new(move |reason: &ExitReason, queued: Vec<QueuedMessage>| {
            let mut mine = Vec::new();
            let mut others = Vec::new();
            for message in queued {
                match message.downcast::<M>() {
                    Ok(msg) => mine.push(msg),
                    Err(other) => others.push(other),
                }
            }
            let wrap = |m: M| {
                let boxed: Box<dyn std::any::Any + Send> = Box::new(m);
                QueuedMessage::new((std::any::type_name::<M>(), boxed))
            };
            let back = |msgs: Vec<M>, others: &mut Vec<QueuedMessage>| {
                others.extend(msgs.into_iter().map(wrap));
            };
            // Inside a router's post to this very incarnation: the poster buffers them.
            if !mine.is_empty() {
                let wrapped = mine.into_iter().map(wrap).collect();
                match catch_inline(uid, generation, wrapped) {
                    None => return others,
                    Some(wrapped) => {
                        mine = wrapped
                            .into_iter()
                            .filter_map(|q| q.downcast::<M>().ok())
                            .collect();
                    }
                }
            }
            match &manager {
                Some(manager) if !stopped.load(Ordering::Acquire) => {
                    let exited = Command::Exited {
                        index,
                        uid,
                        generation,
                        reason: reason.clone(),
                        queued: mine,
                    };
                    if let Err(e) = manager.post(ManagerMsg(exited)) {
                        if let ManagerMsg(Command::Exited { queued, .. }) = e.into_message() {
                            back(queued, &mut others);
                        }
                    }
                }
                _ => back(mine, &mut others),
            }
            others
        })
    }
}

// SAFETY: the manager's state is the router's bookkeeping (the slot table behind its locks,
// which the router's handles share, as an `Addr` shares a process's inbox), a timer handle
// and plain values; the member factory it reaches was built from a function pointer and
// `Isolated` arguments. No process's state is reachable from it, and its only message type
// holds `Isolated` values. (I8)
unsafe impl<P: Handles<M>, M: Message> Process for Manager<P, M> {
    type Message = ManagerMsg<M>;

    fn started(&mut self, ctx: &mut Ctx<Self>) -> Result<(), Failure> {
        if let Some(autoscale) = &self.autoscale {
            self.ticker = Some(ctx.post_every(autoscale.every, Tick));
        }
        Ok(())
    }

    fn handle(
        &mut self,
        ManagerMsg(command): ManagerMsg<M>,
        ctx: &mut Ctx<Self>,
    ) -> Result<(), Failure> {
        match command {
            Command::Exited {
                index,
                uid,
                generation,
                reason,
                queued,
            } => self.exited((index, uid, generation), reason, queued, ctx),
            Command::Restart { index, uid } => self.restart(index, uid, true, ctx),
            Command::Resize(members) => self.resize(members, ctx),
            Command::Stop => self.stop(ctx),
            Command::Tick => self.tick(ctx),
        }
        Ok(())
    }

    fn terminated(&mut self, _reason: &ExitReason) {
        if let Some(ticker) = self.ticker.take() {
            ticker.cancel();
        }
    }
}

impl<P: Handles<M>, M: Message> Handles<ManagerMsg<M>> for Manager<P, M> {
    fn into_message(msg: ManagerMsg<M>) -> ManagerMsg<M> {
        msg
    }

    const BYPASSES_ADMISSION: bool = true;
}

impl<P: Handles<M>, M: Message> Handles<Tick> for Manager<P, M> {
    fn into_message(_: Tick) -> ManagerMsg<M> {
        ManagerMsg(Command::Tick)
    }

    const BYPASSES_ADMISSION: bool = true;
}
