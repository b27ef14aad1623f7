//! The router's table: the member slots, their buffers, and posting through them.
//!
//! A post picks a slot with the router's strategy and posts to the slot's current member under
//! the slot's lock, so the messages one sender routes to one slot reach it in order. A slot
//! whose member has terminated is *restarting*: what is routed to it waits in the slot's
//! bounded buffer (round robin and random try another live member first), until the manager
//! (`manager.rs`) hands the buffer to the replacement. Table changes (members added or
//! retired) take the table's write lock, posts its read lock; locks are taken in the order
//! table, then slot. The manager is reached only through the [`Command`]s it takes, defined
//! here, so this module does not depend on it.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::{Mutex, RwLock};

use super::strategy::{choose, Kind, Ring, Strategy};
use crate::group::Group;
use crate::isolation::{Isolated, Message};
use crate::lifecycle::{ExitReason, QueuedMessage};
use crate::principal::Principal;
use crate::process::{Addr, Deliver, Handles, PostError, Recipient};

/// Builds the state of member `index`: a function pointer and its arguments, so that no
/// closure can smuggle shared mutable state into the members (as
/// [`ChildSpec::worker_with`](crate::supervision::ChildSpec::worker_with)).
pub(super) type Factory<P> = Box<dyn Fn(usize) -> P + Send>;

/// What the manager is asked to do.
pub(super) enum Command<M> {
    /// A member ended (or, for an incarnation already seen ending, more of its queue turned
    /// up): the messages that were queued for it, oldest first.
    Exited {
        index: usize,
        uid: u64,
        generation: u64,
        reason: ExitReason,
        queued: Vec<M>,
    },
    /// A restart that was delayed by the restart limit.
    Restart { index: usize, uid: u64 },
    /// `Router::resize`.
    Resize(usize),
    /// `Router::stop`.
    Stop,
    /// Read the autoscaling signal.
    Tick,
}

/// The manager's message.
pub(super) struct ManagerMsg<M>(pub(super) Command<M>);

// SAFETY: the commands hold only ids, counts, an exit reason and messages of type `M`, which
// is `Isolated`; they move into the manager whole. (I8)
unsafe impl<M: Isolated> Isolated for ManagerMsg<M> {}
impl<M: Message> Message for ManagerMsg<M> {
    const BYPASSES_ADMISSION: bool = true;
}

/// What the router's handles and its manager share.
pub(super) struct Inner<P, M>
where
    P: Handles<M>,
    M: Message,
{
    pub(super) table: RwLock<Table<P, M>>,
    pub(super) strategy: Strategy<M>,
    pub(super) next: AtomicUsize,
    pub(super) buffer_capacity: usize,
    /// The manager process, as the recipient of its commands.
    pub(super) manager: OnceLock<Recipient<ManagerMsg<M>>>,
    /// Set by [`Router::stop`](super::Router::stop): posts are refused, members are not restarted.
    pub(super) stopped: Arc<AtomicBool>,
    /// The member count asked for last (by `resize` or the autoscaler).
    pub(super) target: AtomicUsize,
    pub(super) group: Group,
    pub(super) counts: Counts,
    /// Builds members' states; called by the manager (and by `start`, for the first ones).
    pub(super) factory: Mutex<Factory<P>>,
}

/// The router's running totals ([`RouterStats`](super::RouterStats)).
#[derive(Default)]
pub(super) struct Counts {
    pub(super) buffered: AtomicU64,
    pub(super) redirected: AtomicU64,
    pub(super) overflowed: AtomicU64,
    pub(super) salvaged: AtomicU64,
    pub(super) restarts: AtomicU64,
    pub(super) resizes: AtomicU64,
}

/// The members, by index.
pub(super) struct Table<P: Handles<M>, M: Message> {
    pub(super) slots: Vec<Arc<Slot<P, M>>>,
    /// Each slot's `live` flag, in slot order: what a custom strategy sees.
    pub(super) live: Vec<Arc<AtomicBool>>,
    pub(super) ring: Ring,
}

impl<P: Handles<M>, M: Message> Table<P, M> {
    /// Rebuilds what is derived from the slots (the ring, the live flags).
    pub(super) fn reindex(&mut self, virtual_nodes: Option<usize>) {
        self.live = self.slots.iter().map(|s| Arc::clone(&s.live)).collect();
        if let Some(v) = virtual_nodes {
            self.ring = Ring::new(self.slots.len(), v);
        }
    }
}

/// One member position: its current incarnation and the messages waiting for it.
pub(super) struct Slot<P: Handles<M>, M: Message> {
    /// Tells this slot from one that later takes its index.
    pub(super) uid: u64,
    /// Mirrors `SlotState::live`, readable without the lock.
    pub(super) live: Arc<AtomicBool>,
    pub(super) state: Mutex<SlotState<P, M>>,
}

pub(super) struct SlotState<P: Handles<M>, M: Message> {
    /// The current incarnation (kept after it ends, until it is replaced).
    pub(super) member: Option<Addr<P>>,
    /// Which incarnation: 0 for the first, one more per restart.
    pub(super) generation: u64,
    /// Posts go straight to `member`.
    pub(super) live: bool,
    /// The manager has seen the current incarnation end.
    pub(super) exited: bool,
    /// The slot is being removed (a shrink, or the router's stop).
    pub(super) retiring: bool,
    /// Messages waiting for the next incarnation, oldest first.
    pub(super) buffer: VecDeque<M>,
}

impl<P: Handles<M>, M: Message> Slot<P, M> {
    pub(super) fn new() -> Self {
        /// Unique across routers: the exit hook's inline catch compares it (`Inline`).
        static NEXT_UID: AtomicU64 = AtomicU64::new(0);
        Slot {
            uid: NEXT_UID.fetch_add(1, Ordering::Relaxed),
            live: Arc::new(AtomicBool::new(false)),
            state: Mutex::new(SlotState {
                member: None,
                generation: 0,
                live: false,
                exited: false,
                retiring: false,
                buffer: VecDeque::new(),
            }),
        }
    }

    pub(super) fn set_live(&self, state: &mut SlotState<P, M>, live: bool) {
        state.live = live;
        self.live.store(live, Ordering::Relaxed);
    }
}

thread_local! {
    /// The member a router is posting to on this thread, under its slot's lock: see
    /// [`post_inline`].
    static INLINE: std::cell::RefCell<Option<Inline>> = const { std::cell::RefCell::new(None) };
}

/// Messages caught on their way into a member that had just ended.
struct Inline {
    uid: u64,
    generation: u64,
    caught: Vec<QueuedMessage>,
}

/// Runs `post` (a post to incarnation `generation` of slot `uid`) and returns what it
/// returned, with the messages the member's exit hook caught meanwhile on this thread.
///
/// A post that checked the member was alive, then pushed after the member closed its inbox,
/// drains the inbox itself, on this thread, inside `post`, and the drain hands the message to
/// the exit hook. Sent on to the manager, it would reach the replacement after messages this
/// thread buffers next (the post returned `Ok`, so the slot still looks live). So the hook,
/// seeing that it runs inside a post to its own incarnation, leaves the messages here, and the
/// poster, which still holds the slot's lock, buffers them in their place.
pub(super) fn post_inline<R>(
    uid: u64,
    generation: u64,
    post: impl FnOnce() -> R,
) -> (R, Vec<QueuedMessage>) {
    let outer = INLINE.with(|i| {
        i.borrow_mut().replace(Inline {
            uid,
            generation,
            caught: Vec::new(),
        })
    });
    let result = post();
    let caught = INLINE.with(|i| std::mem::replace(&mut *i.borrow_mut(), outer));
    (result, caught.map(|i| i.caught).unwrap_or_default())
}

/// For the exit hook of incarnation `generation` of slot `uid`: if it runs inside a post to
/// that incarnation on this thread ([`post_inline`]), keeps `messages` for the poster and
/// returns `None`; else gives them back.
pub(super) fn catch_inline(
    uid: u64,
    generation: u64,
    messages: Vec<QueuedMessage>,
) -> Option<Vec<QueuedMessage>> {
    INLINE.with(|i| match &mut *i.borrow_mut() {
        Some(inline) if inline.uid == uid && inline.generation == generation => {
            inline.caught.extend(messages);
            None
        }
        _ => Some(messages),
    })
}

/// Buffers messages caught by [`post_inline`] at the front of the slot's buffer (they are
/// older than anything buffered), ahead of `rest` in order, and marks the slot restarting.
pub(super) fn requeue_caught<P: Handles<M>, M: Message>(
    slot: &Slot<P, M>,
    state: &mut SlotState<P, M>,
    caught: Vec<QueuedMessage>,
) -> usize {
    let mut n = 0;
    for message in caught.into_iter().rev() {
        if let Ok(msg) = message.downcast::<M>() {
            state.buffer.push_front(msg);
            n += 1;
        }
    }
    slot.set_live(state, false);
    n
}

/// How a message enters a member.
#[derive(Clone, Copy)]
pub(super) enum Entry<'a> {
    /// From a sender, on behalf of a principal or not: the member's group predicate weighs
    /// it, and a full buffer refuses it.
    Fresh(Option<&'a Principal>),
    /// Admitted before (it waited in a buffer or in a dead member's inbox): posted without
    /// the predicate, and buffered whatever the buffer holds (there is nobody to hand it to).
    Admitted,
}

/// Why a slot did not take a message.
enum Refused<M> {
    /// The slot is not live and was not asked to buffer.
    Down(M),
    /// The member's group rejected it, or the buffer is full.
    Post(PostError<M>),
}

impl<P, M> Inner<P, M>
where
    P: Handles<M>,
    M: Message,
{
    /// Offers `msg` to `slot`: to its member if it is live, else to its buffer if `buffer`.
    fn offer(
        &self,
        slot: &Slot<P, M>,
        msg: M,
        entry: Entry<'_>,
        buffer: bool,
    ) -> Result<(), Refused<M>> {
        let mut state = slot.state.lock();
        let mut msg = msg;
        if state.live {
            if let Some(member) = &state.member {
                let (posted, caught) = post_inline(slot.uid, state.generation, || match entry {
                    Entry::Fresh(principal) => member.deliver(msg, principal),
                    Entry::Admitted => member.post_moved(msg),
                });
                if !caught.is_empty() {
                    // Buffered behind what waits already: they were posted after it.
                    slot.set_live(&mut state, false);
                    for message in caught {
                        if let Ok(msg) = message.downcast::<M>() {
                            state.buffer.push_back(msg);
                            self.counts.buffered.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                match posted {
                    Ok(()) => return Ok(()),
                    Err(PostError::Terminated(back)) => {
                        // It ended and the manager has not heard yet: restarting from now on.
                        msg = back;
                        slot.set_live(&mut state, false);
                    }
                    Err(other) => return Err(Refused::Post(other)),
                }
            }
        }
        if !buffer {
            return Err(Refused::Down(msg));
        }
        if matches!(entry, Entry::Fresh(_)) && state.buffer.len() >= self.buffer_capacity {
            self.counts.overflowed.fetch_add(1, Ordering::Relaxed);
            return Err(Refused::Post(PostError::Rejected(msg)));
        }
        state.buffer.push_back(msg);
        self.counts.buffered.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Gives `slot` a message admitted before: to its member if live, else to its buffer.
    pub(super) fn offer_admitted(&self, slot: &Slot<P, M>, msg: M) -> Result<(), PostError<M>> {
        match self.offer(slot, msg, Entry::Admitted, true) {
            Ok(()) => Ok(()),
            Err(Refused::Post(e)) => Err(e),
            Err(Refused::Down(msg)) => Err(PostError::Rejected(msg)),
        }
    }

    /// Routes `msg` through `table`.
    pub(super) fn route(
        &self,
        table: &Table<P, M>,
        msg: M,
        entry: Entry<'_>,
    ) -> Result<(), PostError<M>> {
        let n = table.slots.len();
        if n == 0 {
            return Err(PostError::Terminated(msg));
        }
        if let Kind::Broadcast(clone) = &self.strategy.kind {
            let mut first_error = None;
            let (last, rest) = table.slots.split_last().expect("n > 0");
            for slot in rest {
                if let Err(e) = self.deliver(table, slot, 0, clone(&msg), entry, false) {
                    first_error.get_or_insert(e);
                }
            }
            return match (self.deliver(table, last, 0, msg, entry, false), first_error) {
                (Err(e), _) => Err(e),
                (Ok(()), Some(e)) => Err(e),
                (Ok(()), None) => Ok(()),
            };
        }
        let index = choose(&self.strategy, &msg, &table.live, &table.ring, &self.next);
        let may_move = self.strategy.may_move();
        self.deliver(table, &table.slots[index], index, msg, entry, may_move)
    }

    /// Delivers to the slot at `index`; if it is not live and `may_move`, to the next live
    /// slot after it; if none is live, into the first slot's buffer.
    fn deliver(
        &self,
        table: &Table<P, M>,
        slot: &Slot<P, M>,
        index: usize,
        msg: M,
        entry: Entry<'_>,
        may_move: bool,
    ) -> Result<(), PostError<M>> {
        let msg = match self.offer(slot, msg, entry, !may_move) {
            Ok(()) => return Ok(()),
            Err(Refused::Post(e)) => return Err(e),
            Err(Refused::Down(msg)) => msg,
        };
        let n = table.slots.len();
        let mut msg = msg;
        for step in 1..n {
            let other = &table.slots[(index + step) % n];
            match self.offer(other, msg, entry, false) {
                Ok(()) => {
                    self.counts.redirected.fetch_add(1, Ordering::Relaxed);
                    return Ok(());
                }
                Err(Refused::Post(e)) => return Err(e),
                Err(Refused::Down(back)) => msg = back,
            }
        }
        match self.offer(slot, msg, entry, true) {
            Ok(()) => Ok(()),
            Err(Refused::Post(e)) => Err(e),
            // `offer` with `buffer` never answers `Down`.
            Err(Refused::Down(msg)) => Err(PostError::Rejected(msg)),
        }
    }
}
