//! Addresses: how anyone, inside or outside the runtime, posts to a process.
//!
//! [`Addr`] and [`Recipient`] implement the request traits of `request.rs`: `post`, `call`,
//! `ask` and `request(msg)` with its options come from there.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use super::error::{CallError, PostError};
use super::model::{Answers, Handles, Process, ProcessCell};
use super::reply::reply_channel;
use super::request::{Answering, Ask, Deliver, Sender};
use crate::admission::Offer;
use crate::group::{observe, on_worker_thread, Holder, Runnable};
use crate::isolation::{Isolated, Message};
use crate::lifecycle::{ExitReason, ProcessId};
use crate::principal::Principal;

/// The typed address of a process. Cheap to clone; posting never blocks.
pub struct Addr<P: Process> {
    cell: Arc<ProcessCell<P>>,
}

impl<P: Process> Addr<P> {
    pub(crate) fn from_cell(cell: Arc<ProcessCell<P>>) -> Self {
        Addr { cell }
    }

    pub(crate) fn cell(&self) -> &Arc<ProcessCell<P>> {
        &self.cell
    }

    /// The process's id.
    pub fn id(&self) -> ProcessId {
        self.cell.id()
    }

    /// Whether the process has terminated. A `false` can be stale by the time you act on it;
    /// `post` is the authority.
    pub fn is_terminated(&self) -> bool {
        self.cell.has_terminated()
    }

    /// Asks the process to terminate with `reason` (Erlang's `exit(Pid, Reason)`), before it
    /// handles another message. A handler already running finishes first: processes are
    /// never interrupted mid-message. Its `terminated` hook runs, monitors are told `reason`,
    /// and messages left in its inbox go to the dead-letter sink. The first reason wins;
    /// asking a terminated process does nothing.
    pub fn exit(&self, reason: ExitReason) {
        Runnable::kill(Arc::clone(&self.cell), reason);
    }

    /// `post`, with `wrap` making the process's message once `msg` is admitted, and the
    /// predicate seeing `principal` if one is given (else the process's own).
    #[inline]
    fn post_with<M>(
        &self,
        msg: M,
        principal: Option<&Principal>,
        wrap: impl FnOnce(M) -> P::Message,
    ) -> Result<(), PostError<M>>
    where
        P: Handles<M>,
        M: Message,
    {
        let cell = &*self.cell;
        if Self::closed_to_caller(cell) {
            return self.post_closed(msg, principal, wrap);
        }
        let cost = P::cost(&msg);
        let admission = match <P as Handles<M>>::BYPASSES_ADMISSION {
            true => None,
            false => cell.group.admission(),
        };
        if let Some(predicate) = admission {
            let principal = principal.or(cell.principal.as_ref());
            let offer = Offer::new::<M>(cell.id(), principal, cost, &cell.group.counters);
            if !predicate.admit(&offer) {
                cell.group.count_rejected(principal);
                return Err(PostError::Rejected(msg));
            }
        }
        // Every posted message carries its enqueue time and cost: for the group's statistics
        // and for predicates that learn from completions.
        let meta = observe::stamp(cost);
        match principal {
            // Priority inheritance: only a group with a scheduler looks at priorities.
            Some(principal) if cell.group.scheduler.is_some() => {
                self.cell
                    .deliver_inheriting(wrap(msg), meta, principal.priority());
            }
            _ => self.cell.deliver(wrap(msg), meta),
        }
        Ok(())
    }

    /// Whether a post from this thread cannot go into `cell`: it has terminated or moved on,
    /// or the runtime is closing and the caller is outside it.
    #[inline]
    fn closed_to_caller(cell: &ProcessCell<P>) -> bool {
        cell.mailbox.is_closed() || (cell.group.kernel.is_closing() && !on_worker_thread())
    }

    /// `post` to a closed cell: on to where the process moved, if it moved to another group
    /// (what was queued in each cell passed is passed on first, so this sender's order holds),
    /// else back. A loop over the cells, not a recursion: an address taken before thousands of
    /// moves walks as many cells in one frame (a new frame only if the cell it found open
    /// closes before the post lands, a move made meanwhile).
    #[cold]
    #[inline(never)]
    fn post_closed<M>(
        &self,
        msg: M,
        principal: Option<&Principal>,
        wrap: impl FnOnce(M) -> P::Message,
    ) -> Result<(), PostError<M>>
    where
        P: Handles<M>,
        M: Message,
    {
        let mut at = self.clone();
        loop {
            match at.cell.settle_moved() {
                Some(next) => at = Addr::from_cell(next),
                None => return Err(PostError::Terminated(msg)),
            }
            if !Self::closed_to_caller(&at.cell) {
                // Open when looked at: `post_with` posts there. Should it have closed since, it
                // comes back here: one frame per move made meanwhile, none per move before.
                return at.post_with(msg, principal, wrap);
            }
        }
    }

    /// A type-erased handle that accepts `M`, for code that should not know the process type.
    pub fn recipient<M>(&self) -> Recipient<M>
    where
        P: Handles<M>,
        M: Message,
    {
        Recipient::from(self.clone())
    }
}

impl<P, M> Deliver<M> for Addr<P>
where
    P: Handles<M>,
    M: Message,
{
    type Error = PostError<M>;

    /// Posts `msg`, weighed as `principal`'s work if one is given.
    ///
    /// On failure the message comes back: [`PostError::Terminated`] if the process has
    /// terminated (or the runtime is shutting down and the caller is outside it),
    /// [`PostError::Rejected`] if the group's message predicate turned it away (never for a
    /// message that [bypasses admission](crate::Message::BYPASSES_ADMISSION)).
    #[inline]
    fn deliver(&self, msg: M, principal: Option<&Principal>) -> Result<(), PostError<M>> {
        self.post_with(msg, principal, P::into_message)
    }

    fn default_timeout(&self) -> Option<Duration> {
        self.cell.group.kernel.ask_timeout
    }
}

/// `call` and `ask` take the plain message and answer with the handler's return value (see
/// [`Answers`]).
impl<P, M> Answering<M> for Addr<P>
where
    P: Answers<M>,
    M: Message,
{
    type Reply = P::Reply;
    type CallError = CallError<M>;
    type Asking = Ask<P::Reply, M>;

    fn call_for(
        &self,
        msg: M,
        principal: Option<&Principal>,
        timeout: Option<Duration>,
    ) -> Result<P::Reply, CallError<M>> {
        if on_worker_thread() {
            return Err(CallError::WouldBlockWorker(msg));
        }
        let (reply, pending) = reply_channel();
        self.post_with(msg, principal, |msg| P::into_request(msg, reply))
            .map_err(CallError::Post)?;
        pending.wait(timeout)
    }

    fn ask_for(
        &self,
        msg: M,
        principal: Option<&Principal>,
        timeout: Option<Duration>,
    ) -> Ask<P::Reply, M> {
        let (reply, pending) = reply_channel();
        let posted = self.post_with(msg, principal, |msg| P::into_request(msg, reply));
        Ask::new(posted, pending, timeout)
    }
}

impl<M: Message> Deliver<M> for Recipient<M> {
    type Error = PostError<M>;

    /// Posts `msg` with the same guarantees and errors as an [`Addr`]'s post.
    #[inline]
    fn deliver(&self, msg: M, principal: Option<&Principal>) -> Result<(), PostError<M>> {
        self.target.deliver_erased(msg, principal)
    }

    fn default_timeout(&self) -> Option<Duration> {
        self.target.timeout()
    }
}

impl<P: Process> Sender for Addr<P> {}

impl<M: Message> Sender for Recipient<M> {}

impl<P: Process> Clone for Addr<P> {
    fn clone(&self) -> Self {
        Addr {
            cell: Arc::clone(&self.cell),
        }
    }
}

impl<P: Process> PartialEq for Addr<P> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.cell, &other.cell)
    }
}

impl<P: Process> Eq for Addr<P> {}

impl<P: Process> Hash for Addr<P> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.id().hash(state);
    }
}

impl<P: Process> fmt::Debug for Addr<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Addr<{}>({})", std::any::type_name::<P>(), self.id())
    }
}

/// "Anyone who handles `M`": an address with the process type erased.
pub struct Recipient<M> {
    target: Arc<dyn PostTarget<M>>,
}

impl<M: Message> Recipient<M> {
    /// The receiving process's id.
    pub fn id(&self) -> ProcessId {
        self.target.target_id()
    }

    /// Messages waiting in the receiving process's inbox (of every kind, not only `M`), as of
    /// its last finished turn: what a producer that must not outrun it checks.
    #[cfg_attr(not(feature = "net"), allow(dead_code))]
    pub(crate) fn queued(&self) -> u64 {
        self.target.queued()
    }
}

impl<M> Clone for Recipient<M> {
    fn clone(&self) -> Self {
        Recipient {
            target: Arc::clone(&self.target),
        }
    }
}

impl<M> fmt::Debug for Recipient<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Recipient<{}>({})",
            std::any::type_name::<M>(),
            self.target.target_id()
        )
    }
}

impl<P, M> From<Addr<P>> for Recipient<M>
where
    P: Handles<M>,
    M: Message,
{
    fn from(addr: Addr<P>) -> Self {
        Recipient {
            target: Arc::new(addr),
        }
    }
}

trait PostTarget<M>: Send + Sync {
    fn deliver_erased(&self, msg: M, principal: Option<&Principal>) -> Result<(), PostError<M>>;
    fn target_id(&self) -> ProcessId;
    fn timeout(&self) -> Option<Duration>;
    fn queued(&self) -> u64;
}

impl<P, M> PostTarget<M> for Addr<P>
where
    P: Handles<M>,
    M: Message,
{
    fn deliver_erased(&self, msg: M, principal: Option<&Principal>) -> Result<(), PostError<M>> {
        self.deliver(msg, principal)
    }

    fn target_id(&self) -> ProcessId {
        self.id()
    }

    fn timeout(&self) -> Option<Duration> {
        self.default_timeout()
    }

    fn queued(&self) -> u64 {
        self.cell.queued()
    }
}

// SAFETY: a process address. Posting through it moves the message into the inbox; it grants
// no access to the process's state (invariant I8).
unsafe impl<P: Process> Isolated for Addr<P> {}
impl<P: Process> crate::isolation::Reply for Addr<P> {}

// SAFETY: a type-erased process address, as above. `M: Message` because only messages can be
// posted (a `Recipient` of anything else could never be built, and must not be named either). (I8)
unsafe impl<M: Message> Isolated for Recipient<M> {}
impl<M: Message> crate::isolation::Reply for Recipient<M> {}

/// An address is what the name registry holds (`group/names.rs`).
impl<P: Process> Holder for Addr<P> {
    fn id(&self) -> ProcessId {
        self.cell.id()
    }

    fn is_terminated(&self) -> bool {
        self.cell.has_terminated()
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Never implemented: the bound that makes serializing an [`Addr`] or a [`Recipient`] (a
/// remote message holding one) a compile error saying what to send instead. An address is a
/// pointer into this runtime; another node cannot use it.
#[cfg(feature = "serde")]
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "a process address (`Addr`, `Recipient`) cannot be sent to another node: it points into this runtime",
    label = "a message for another node holds a local process address",
    note = "send the process's cluster-wide `whirl_dist::Pid` instead: `node.export(&addr).accept::<M>().build()?` gives one, and the receiving node makes an address of it with `node.remote::<M>(pid)`"
)]
pub trait LocalOnly {}

#[cfg(feature = "serde")]
impl<P: Process + LocalOnly> serde::Serialize for Addr<P> {
    fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
        Err(serde::ser::Error::custom(
            "a process address cannot be serialized",
        ))
    }
}

#[cfg(feature = "serde")]
impl<'de, P: Process + LocalOnly> serde::Deserialize<'de> for Addr<P> {
    fn deserialize<D: serde::Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
        Err(serde::de::Error::custom(
            "a process address cannot be deserialized",
        ))
    }
}

#[cfg(feature = "serde")]
impl<M: Message + LocalOnly> serde::Serialize for Recipient<M> {
    fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
        Err(serde::ser::Error::custom(
            "a process address cannot be serialized",
        ))
    }
}

#[cfg(feature = "serde")]
impl<'de, M: Message + LocalOnly> serde::Deserialize<'de> for Recipient<M> {
    fn deserialize<D: serde::Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
        Err(serde::de::Error::custom(
            "a process address cannot be deserialized",
        ))
    }
}
