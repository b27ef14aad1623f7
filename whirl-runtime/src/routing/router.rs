//! The router: one address in front of a pool of processes of one type.
//!
//! A [`Router`] holds a table of member slots. Posting picks a slot with the router's
//! [`Strategy`] and posts to the slot's current member under the slot's lock, so the messages
//! one sender routes to one slot reach it in order. A slot whose member has terminated is
//! *restarting*: what is routed to it waits in the slot's bounded buffer (round robin and
//! random try another live member first), and the router's manager process spawns the
//! replacement and hands it the buffer, oldest first, before anything new. The messages that
//! were still queued in the dead member's inbox are not dead-lettered: the member was spawned
//! with an exit hook (`process/cell.rs`) that hands them to the manager, which puts them at
//! the front of the buffer. So a crash loses nothing that was waiting, and a consistent-hash
//! key keeps its order across the restart.
//!
//! Table changes (members added or retired) take the table's write lock; posts take its read
//! lock. Locks are taken in the order table, then slot; the exit hook takes none (it posts to
//! the manager), so a post that drains a member which ended under it cannot deadlock.

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use parking_lot::{Mutex, RwLock};

use super::manager::{Command, Manager, ManagerMsg};
use super::strategy::{choose, Kind, Ring, Strategy};
use crate::group::{on_worker_thread, Group};
use crate::isolation::{Isolated, Message};
use crate::lifecycle::{ProcessId, QueuedMessage};
use crate::process::{reply_channel, Addr, CallError, Handles, PostError, ReplyTo};

/// Messages a restarting member's buffer holds by default
/// ([`RouterBuilder::buffer`]).
pub const DEFAULT_BUFFER: usize = 1024;

/// Builds the state of member `index`: a function pointer and its arguments, so that no
/// closure can smuggle shared mutable state into the members (as
/// [`ChildSpec::worker_with`](crate::supervision::ChildSpec::worker_with)).
pub(super) type Factory<P> = Box<dyn Fn(usize) -> P + Send>;

/// A pool of processes of type `P` behind one address that takes `M`.
///
/// Built with [`Router::builder`]; cheap to clone, and [`Isolated`]: processes hold it in
/// their state and pass it in messages like an [`Addr`].
///
/// ```
/// use whirl::prelude::*;
/// use whirl::routing::{Router, Strategy};
///
/// #[derive(Message)]
/// struct Square(u64, ReplyTo<u64>);
///
/// #[process]
/// struct Worker;
/// #[process]
/// impl Worker {
///     #[handle]
///     fn square(&mut self, Square(n, reply): Square) {
///         let _ = reply.send(n * n);
///     }
/// }
///
/// let rt = Runtime::new();
/// let pool = Router::builder(rt.default_group(), |_index, _: &()| Worker, ())
///     .strategy(Strategy::round_robin())
///     .members(4)
///     .start();
/// assert_eq!(pool.call_with(|reply| Square(7, reply)).unwrap(), 49);
/// rt.shutdown_graceful();
/// ```
pub struct Router<P, M>
where
    P: Handles<M>,
    M: Message,
{
    inner: Arc<Inner<P, M>>,
}

/// What the router's handles and its manager share.
pub(super) struct Inner<P, M>
where
    P: Handles<M>,
    M: Message,
{
    pub(super) table: RwLock<Table<P, M>>,
    pub(super) strategy: Strategy<M>,
    next: AtomicUsize,
    buffer_capacity: usize,
    pub(super) manager: OnceLock<Addr<Manager<P, M>>>,
    /// Set by [`Router::stop`]: posts are refused, members are not restarted.
    pub(super) stopped: Arc<AtomicBool>,
    /// The member count asked for last (by `resize` or the autoscaler).
    pub(super) target: AtomicUsize,
    pub(super) group: Group,
    pub(super) counts: Counts,
    /// Builds members' states; called by the manager (and by `start`, for the first ones).
    pub(super) factory: Mutex<Factory<P>>,
}

/// The router's running totals ([`RouterStats`]).
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
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Entry {
    /// From a sender: the member's group predicate weighs it, and a full buffer refuses it.
    Fresh,
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
        entry: Entry,
        buffer: bool,
    ) -> Result<(), Refused<M>> {
        let mut state = slot.state.lock();
        let mut msg = msg;
        if state.live {
            if let Some(member) = &state.member {
                let (posted, caught) = post_inline(slot.uid, state.generation, || match entry {
                    Entry::Fresh => member.post(msg),
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
        if entry == Entry::Fresh && state.buffer.len() >= self.buffer_capacity {
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
    pub(super) fn route(&self, table: &Table<P, M>, msg: M, entry: Entry) -> Result<(), PostError<M>> {
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
        entry: Entry,
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

impl<P, M> Router<P, M>
where
    P: Handles<M>,
    M: Message,
{
    /// Starts building a router whose members run in `group`. Member `index` is built by
    /// `start(index, &args)`, for the first incarnation and for every restart (the index is
    /// the member's position, stable across its restarts).
    pub fn builder<A: Isolated>(
        group: &Group,
        start: fn(usize, &A) -> P,
        args: A,
    ) -> RouterBuilder<P, M> {
        RouterBuilder {
            group: group.clone(),
            factory: Box::new(move |index| start(index, &args)),
            strategy: Strategy::round_robin(),
            members: 1,
            bounds: (1, usize::MAX),
            buffer: DEFAULT_BUFFER,
            autoscale: None,
            restarts: (10, Duration::from_secs(1)),
            backoff: Duration::from_millis(100),
        }
    }

    /// Posts `msg` to the member the strategy picks. Never blocks.
    ///
    /// The errors are [`Addr::post`]'s, with the message inside:
    /// [`PostError::Rejected`] if the member's group predicate turned it away, or if the
    /// member is restarting and its buffer is full; [`PostError::Terminated`] if the router
    /// was stopped. A member that has terminated is not an error: the message goes to
    /// another live member (round robin, random) or waits for the member's replacement. For
    /// broadcast, `Err` means at least one member did not get its copy; the copy comes back.
    pub fn post(&self, msg: M) -> Result<(), PostError<M>> {
        if self.inner.stopped.load(Ordering::Acquire) {
            return Err(PostError::Terminated(msg));
        }
        let table = self.inner.table.read();
        // Again under the lock: `stop` takes it for writing after setting the flag, so no
        // post can buffer into a stopped router's slots.
        if self.inner.stopped.load(Ordering::Acquire) {
            return Err(PostError::Terminated(msg));
        }
        self.inner.route(&table, msg, Entry::Fresh)
    }

    /// Sends a request built by `make` around a fresh reply handle, and blocks until a member
    /// answers through it: [`Addr::call_with`] through the router. Inside a handler it
    /// returns [`CallError::WouldBlockWorker`]; an `async` handler awaits
    /// [`ask_with`](Self::ask_with).
    pub fn call_with<R: Isolated>(
        &self,
        make: impl FnOnce(ReplyTo<R>) -> M,
    ) -> Result<R, CallError<M>> {
        self.call_within(make, None)
    }

    /// Like [`call_with`](Self::call_with), giving up after `timeout` ([`CallError::Timeout`]).
    pub fn call_with_timeout<R: Isolated>(
        &self,
        make: impl FnOnce(ReplyTo<R>) -> M,
        timeout: Duration,
    ) -> Result<R, CallError<M>> {
        self.call_within(make, Some(timeout))
    }

    fn call_within<R: Isolated>(
        &self,
        make: impl FnOnce(ReplyTo<R>) -> M,
        timeout: Option<Duration>,
    ) -> Result<R, CallError<M>> {
        let (reply, pending) = reply_channel();
        let request = make(reply);
        if on_worker_thread() {
            return Err(CallError::WouldBlockWorker(request));
        }
        self.post(request).map_err(CallError::Post)?;
        pending.wait(timeout)
    }

    /// The asynchronous [`call_with`](Self::call_with): posts now; the future resolves with
    /// the answer sent through the [`ReplyTo`]. Works on any executor.
    pub fn ask_with<R: Isolated>(
        &self,
        make: impl FnOnce(ReplyTo<R>) -> M,
    ) -> impl Future<Output = Result<R, CallError<M>>> + Send + 'static {
        let (reply, pending) = reply_channel();
        let posted = self.post(make(reply));
        async move {
            match posted {
                Err(e) => Err(CallError::Post(e)),
                Ok(()) => pending.await.map_err(|_| CallError::NoReply),
            }
        }
    }

    /// Asks for `members` members (at least 1). Growing spawns them at once; shrinking
    /// retires the last ones: each is stopped before its next message, and what was queued
    /// for it is routed to the others (in order, so a consistent-hash key keeps its order),
    /// nothing lost. Does not wait: [`size`](Self::size) says what was asked, and
    /// [`stats`](Self::stats) what is running.
    pub fn resize(&self, members: usize) -> Result<(), RouterError> {
        self.command(Command::Resize(members.max(1)))
    }

    /// Stops the router: posts are refused from now on ([`PostError::Terminated`]), and the
    /// members are stopped before their next message. What was still waiting for them, in
    /// their inboxes or in buffers, goes to the dead-letter sink.
    pub fn stop(&self) -> Result<(), RouterError> {
        self.inner.stopped.store(true, Ordering::Release);
        self.command(Command::Stop)
    }

    fn command(&self, command: Command<M>) -> Result<(), RouterError> {
        let manager = self.inner.manager.get().ok_or(RouterError::Stopped)?;
        manager
            .post(ManagerMsg(command))
            .map_err(|_| RouterError::Stopped)
    }

    /// The member count last asked for (by [`RouterBuilder::members`], [`resize`](Self::resize)
    /// or the autoscaler).
    pub fn size(&self) -> usize {
        self.inner.target.load(Ordering::Relaxed)
    }

    /// The current members, in index order; `None` for a member that has not been spawned
    /// yet. An address may be of an incarnation that has just ended.
    pub fn members(&self) -> Vec<Option<Addr<P>>> {
        let table = self.inner.table.read();
        table
            .slots
            .iter()
            .map(|slot| slot.state.lock().member.clone())
            .collect()
    }

    /// The ids of the current members' incarnations, in index order.
    pub fn member_ids(&self) -> Vec<Option<ProcessId>> {
        self.members()
            .iter()
            .map(|m| m.as_ref().map(Addr::id))
            .collect()
    }

    /// A snapshot of the router's counters.
    pub fn stats(&self) -> RouterStats {
        let table = self.inner.table.read();
        let mut live = 0;
        let mut waiting = 0;
        for slot in &table.slots {
            let state = slot.state.lock();
            live += usize::from(state.live);
            waiting += state.buffer.len();
        }
        let c = &self.inner.counts;
        RouterStats {
            strategy: self.inner.strategy.name(),
            members: table.slots.len(),
            live,
            waiting,
            buffered: c.buffered.load(Ordering::Relaxed),
            redirected: c.redirected.load(Ordering::Relaxed),
            overflowed: c.overflowed.load(Ordering::Relaxed),
            salvaged: c.salvaged.load(Ordering::Relaxed),
            restarts: c.restarts.load(Ordering::Relaxed),
            resizes: c.resizes.load(Ordering::Relaxed),
        }
    }

    /// The group the members run in.
    pub fn group(&self) -> &Group {
        &self.inner.group
    }
}

impl<P: Handles<M>, M: Message> Clone for Router<P, M> {
    fn clone(&self) -> Self {
        Router {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<P: Handles<M>, M: Message> fmt::Debug for Router<P, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Router")
            .field("process", &std::any::type_name::<P>())
            .field("message", &std::any::type_name::<M>())
            .field("strategy", &self.inner.strategy)
            .field("size", &self.size())
            .finish()
    }
}

// SAFETY: a router is a set of process addresses and the runtime's bookkeeping about them (the
// slot table, buffers of messages that move in and out whole, counters), all behind its own
// locks and atomics; like an `Addr`, it grants no access to any process's state. The only
// code it holds is the strategy's (`Fn + Send + Sync`, called by posters) and nothing in it is
// reachable as mutable state from a process. (I8)
unsafe impl<P: Handles<M>, M: Message> Isolated for Router<P, M> {}

/// Why a router could not take a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RouterError {
    /// The router was stopped, or its manager process has ended (the runtime shut down).
    #[error("the router is stopped")]
    Stopped,
}

/// A router's counters ([`Router::stats`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RouterStats {
    /// The strategy's name.
    pub strategy: &'static str,
    /// Members (slots) in the table now, retiring ones included.
    pub members: usize,
    /// Members that take posts directly now (the others are restarting).
    pub live: usize,
    /// Messages waiting in buffers now, for members restarting.
    pub waiting: usize,
    /// Messages that ever waited in a buffer.
    pub buffered: u64,
    /// Messages that went to another member because theirs was restarting.
    pub redirected: u64,
    /// Posts refused because a restarting member's buffer was full.
    pub overflowed: u64,
    /// Messages taken from the inboxes of members that ended, and routed again.
    pub salvaged: u64,
    /// Members restarted.
    pub restarts: u64,
    /// Resizes carried out.
    pub resizes: u64,
}

/// When a router grows or shrinks on its own ([`RouterBuilder::autoscale`]), between the
/// builder's [`bounds`](RouterBuilder::bounds).
#[derive(Clone, Debug)]
pub struct Autoscale {
    pub(super) policy: Policy,
    pub(super) every: Duration,
}

#[derive(Clone, Debug)]
pub(super) enum Policy {
    FollowThreads { per_thread: usize },
    QueueLength { grow_above: u64, shrink_below: u64 },
}

impl Autoscale {
    /// As many members as the group has worker threads, times `per_thread`: the group's
    /// concurrency controller (the SEDA thread-pool controller, the Whirlwind default...)
    /// decides the pool size from the group's load, and the router follows it.
    pub fn follow_threads(per_thread: usize) -> Self {
        Autoscale {
            policy: Policy::FollowThreads {
                per_thread: per_thread.max(1),
            },
            every: Duration::from_millis(100),
        }
    }

    /// One member more when the group's queue holds more than `grow_above` messages per
    /// member, one fewer when it holds fewer than `shrink_below` per member. The queue is the
    /// whole group's ([`MessageCounts::queued`](crate::control::MessageCounts::queued)): give
    /// the router a group of its own.
    pub fn queue_length(grow_above: u64, shrink_below: u64) -> Self {
        Autoscale {
            policy: Policy::QueueLength {
                grow_above,
                shrink_below,
            },
            every: Duration::from_millis(100),
        }
    }

    /// How often the signal is read (default 100 ms).
    pub fn every(mut self, period: Duration) -> Self {
        self.every = period.max(Duration::from_millis(1));
        self
    }
}

/// Configures a [`Router`] ([`Router::builder`]); [`start`](Self::start) spawns it.
pub struct RouterBuilder<P: Handles<M>, M: Message> {
    group: Group,
    factory: Factory<P>,
    strategy: Strategy<M>,
    members: usize,
    bounds: (usize, usize),
    buffer: usize,
    autoscale: Option<Autoscale>,
    restarts: (usize, Duration),
    backoff: Duration,
}

impl<P: Handles<M>, M: Message> RouterBuilder<P, M> {
    /// How members are picked (default: [`Strategy::round_robin`]).
    pub fn strategy(mut self, strategy: Strategy<M>) -> Self {
        self.strategy = strategy;
        self
    }

    /// The initial member count (default 1, at least 1; kept within the bounds).
    pub fn members(mut self, members: usize) -> Self {
        self.members = members.max(1);
        self
    }

    /// The range the autoscaler keeps the member count in (default 1 to unbounded). A manual
    /// [`Router::resize`] is not bound by it.
    pub fn bounds(mut self, bounds: std::ops::RangeInclusive<usize>) -> Self {
        let min = (*bounds.start()).max(1);
        self.bounds = (min, (*bounds.end()).max(min));
        self
    }

    /// How many messages a restarting member's buffer holds (default [`DEFAULT_BUFFER`]);
    /// a post beyond it is [`PostError::Rejected`], the message back.
    pub fn buffer(mut self, capacity: usize) -> Self {
        self.buffer = capacity;
        self
    }

    /// Grows and shrinks the router on its own, following `autoscale`'s signal.
    pub fn autoscale(mut self, autoscale: Autoscale) -> Self {
        self.autoscale = Some(autoscale);
        self
    }

    /// Restarts beyond `max` within `period` (across the members; default 10 in 1 s) are
    /// delayed by `backoff` (default 100 ms) each, so a member that fails at once is not
    /// restarted in a hot loop. Messages wait in its buffer meanwhile.
    pub fn restart_limit(mut self, max: usize, period: Duration, backoff: Duration) -> Self {
        self.restarts = (max, period);
        self.backoff = backoff;
        self
    }

    /// Spawns the router's manager process in the group, which spawns the members.
    pub fn start(self) -> Router<P, M> {
        let members = self.members.clamp(self.bounds.0, self.bounds.1);
        let inner = Arc::new(Inner {
            table: RwLock::new(Table {
                slots: Vec::new(),
                live: Vec::new(),
                ring: Ring::default(),
            }),
            strategy: self.strategy,
            next: AtomicUsize::new(0),
            buffer_capacity: self.buffer,
            manager: OnceLock::new(),
            stopped: Arc::new(AtomicBool::new(false)),
            target: AtomicUsize::new(members),
            group: self.group.clone(),
            counts: Counts::default(),
            factory: Mutex::new(self.factory),
        });
        let manager = Manager::new(
            Arc::clone(&inner),
            self.bounds,
            self.autoscale,
            self.restarts,
            self.backoff,
        );
        let addr = self.group.spawn(manager);
        let _ = inner.manager.set(addr);
        // The first members are spawned here, before anyone can post, so the router takes
        // posts at once; the manager restarts and resizes them from then on.
        {
            let mut table = inner.table.write();
            for index in 0..members {
                let slot = Arc::new(Slot::new());
                inner.start_member(&slot, index);
                table.slots.push(slot);
            }
            table.reindex(inner.strategy.virtual_nodes());
        }
        Router { inner }
    }
}
