//! The router's handle: [`Router`], its builder, its counters.
//!
//! A [`Router`] is a handle on the shared table (`table.rs`) and on the manager process
//! (`manager.rs`) that restarts and resizes its members. Posting goes through the table
//! without the manager; resizing and stopping are commands to the manager.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use parking_lot::{Mutex, RwLock};

use super::autoscale::Autoscale;
use super::manager::Manager;
use super::strategy::{Ring, Strategy};
use super::table::{Command, Counts, Entry, Factory, Inner, ManagerMsg, Slot, Table};
use crate::group::Group;
use crate::isolation::{Isolated, Message};
use crate::lifecycle::ProcessId;
use crate::principal::Principal;
use crate::process::{Addr, Deliver, Handles, PostError, Sender};

/// Messages a restarting member's buffer holds by default
/// ([`RouterBuilder::buffer`]).
pub const DEFAULT_BUFFER: usize = 1024;

/// A pool of processes of type `P` behind one address that takes `M`.
///
/// Built with [`Router::builder`]; cheap to clone, and [`Isolated`]: processes hold it in
/// their state and pass it in messages like an [`Addr`]. The members and the router's manager
/// process live until [`Router::stop`] or the runtime's shutdown: dropping the handles does
/// not stop them.
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
/// assert_eq!(pool.request_with(|reply| Square(7, reply)).call().unwrap(), 49);
/// rt.shutdown_graceful();
/// ```
pub struct Router<P, M>
where
    P: Handles<M>,
    M: Message,
{
    inner: Arc<Inner<P, M>>,
}

impl<P, M> Router<P, M>
where
    P: Handles<M>,
    M: Message,
{
    /// Starts building a router whose members run in `group`. Member `index` is built by
    /// `start(index, &args)`, for the first incarnation and for every restart (the index is
    /// the member's position, stable across its restarts).
    // One line, so that rustc's note on a capturing closure shows `args` beside `start`.
    pub fn builder<A>(group: &Group, start: fn(usize, &A) -> P, args: A) -> RouterBuilder<P, M>
    where
        A: Isolated,
    {
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

/// `post`, `request` and `request_with` (`call` and `ask` with a message carrying its own
/// [`ReplyTo`](crate::ReplyTo)) send to the member the strategy picks. Never blocks.
///
/// The errors are an [`Addr`]'s, with the message inside: [`PostError::Rejected`] if the
/// member's group predicate turned it away, or if the member is restarting and its buffer is
/// full; [`PostError::Terminated`] if the router was stopped. A member that has terminated is
/// not an error: the message goes to another live member (round robin, random) or waits for
/// the member's replacement. For broadcast, `Err` means at least one member did not get its
/// copy; the copy comes back. A message sent [on behalf](crate::request::Request::on_behalf)
/// of a principal is weighed as that principal's work by the member's group; one that waits
/// in a buffer for a restarting member was admitted already and is delivered as it is.
impl<P: Handles<M>, M: Message> Sender for Router<P, M> {}

impl<P, M> Deliver<M> for Router<P, M>
where
    P: Handles<M>,
    M: Message,
{
    type Error = PostError<M>;

    fn deliver(&self, msg: M, principal: Option<&Principal>) -> Result<(), PostError<M>> {
        if self.inner.stopped.load(Ordering::Acquire) {
            return Err(PostError::Terminated(msg));
        }
        let table = self.inner.table.read();
        // Again under the lock: `stop` takes it for writing after setting the flag, so no
        // post can buffer into a stopped router's slots.
        if self.inner.stopped.load(Ordering::Acquire) {
            return Err(PostError::Terminated(msg));
        }
        self.inner.route(&table, msg, Entry::Fresh(principal))
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
// code it holds is the strategy's, called by posters: `fn` pointers, which capture nothing,
// and the `Isolated + Sync` state of `Strategy::custom_with`, read only (`strategy.rs`), so no
// poster can write memory another reaches through it. (I8)
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
        let _ = inner.manager.set(addr.recipient());
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
