//! Addresses: how anyone, inside or outside the runtime, posts to a process.

use std::fmt;
use std::future::Future;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use super::error::{CallError, PostError};
use super::model::{Answers, Handles, Process, ProcessCell};
use super::reply::{reply_channel, Pending, ReplyTo};
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

    /// Posts `msg`. Never blocks and never waits for the receiver.
    ///
    /// On failure the message comes back: [`PostError::Terminated`] if the process has
    /// terminated (or the runtime is shutting down and the caller is outside it),
    /// [`PostError::Rejected`] if the group's message predicate turned it away (never for a
    /// message that [bypasses admission](crate::Message::BYPASSES_ADMISSION)).
    #[inline]
    pub fn post<M>(&self, msg: M) -> Result<(), PostError<M>>
    where
        P: Handles<M>,
        M: Message,
    {
        self.post_with(msg, None, P::into_message)
    }

    /// Posts `msg` on behalf of `principal`: the group's admission predicate weighs it as
    /// work of that principal (its priority, class, utility and estimates) instead of the
    /// receiving process's own. For messages that arrive from elsewhere carrying the principal
    /// they serve, such as a request forwarded from another node; the process still runs
    /// under its own principal.
    ///
    /// In a group with a [scheduler](crate::scheduler), the process also *inherits* the
    /// principal's priority while the message is queued: its scheduling priority is the
    /// highest among its own principal's and those of the messages posted to it on behalf of
    /// one since its inbox last drained ([`Ready::inherited_priority`]), so a low-priority
    /// process holding an important principal's message runs as early as that principal's
    /// own processes would ([`PrincipalPriority`] uses it). Plain posts cost nothing extra.
    ///
    /// [`Ready::inherited_priority`]: crate::scheduler::Ready::inherited_priority
    /// [`PrincipalPriority`]: crate::scheduler::PrincipalPriority
    #[inline]
    pub fn post_on_behalf<M>(&self, msg: M, principal: &Principal) -> Result<(), PostError<M>>
    where
        P: Handles<M>,
        M: Message,
    {
        self.post_with(msg, Some(principal), P::into_message)
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

    /// Sends `msg` and blocks until the process's handler for it returns, with its answer
    /// (the handler's return value: see [`Answers`]).
    ///
    /// For code outside processes (tests, `main`, blocking threads). Inside a handler it
    /// returns [`CallError::WouldBlockWorker`] instead of stalling a worker: an `async`
    /// handler awaits [`Addr::ask`] instead.
    pub fn call<M, R>(&self, msg: M) -> Result<R, CallError<M>>
    where
        P: Answers<M, Reply = R>,
        M: Message,
    {
        self.call_within(msg, None)
    }

    /// Like [`Addr::call`], giving up after `timeout` ([`CallError::Timeout`]).
    pub fn call_timeout<M, R>(&self, msg: M, timeout: Duration) -> Result<R, CallError<M>>
    where
        P: Answers<M, Reply = R>,
        M: Message,
    {
        self.call_within(msg, Some(timeout))
    }

    fn call_within<M>(&self, msg: M, timeout: Option<Duration>) -> Result<P::Reply, CallError<M>>
    where
        P: Answers<M>,
        M: Message,
    {
        if on_worker_thread() {
            return Err(CallError::WouldBlockWorker(msg));
        }
        let (reply, pending) = reply_channel();
        self.post_with(msg, None, |msg| P::into_request(msg, reply))
            .map_err(CallError::Post)?;
        pending.wait(timeout)
    }

    /// The asynchronous request: posts `msg` now, and the returned future resolves with the
    /// process's answer (its handler's return value: see [`Answers`]). Await it in an `async`
    /// handler, in tokio code, or on any executor; it never blocks a thread.
    pub fn ask<M, R>(
        &self,
        msg: M,
    ) -> impl Future<Output = Result<R, CallError<M>>> + Send + 'static
    where
        P: Answers<M, Reply = R>,
        M: Message,
        R: Isolated,
    {
        self.ask_for(msg, None)
    }

    /// [`Addr::ask`] on behalf of `principal`: the group's admission predicate weighs the
    /// request as that principal's work (see [`Addr::post_on_behalf`]).
    pub fn ask_on_behalf<M, R>(
        &self,
        msg: M,
        principal: &Principal,
    ) -> impl Future<Output = Result<R, CallError<M>>> + Send + 'static
    where
        P: Answers<M, Reply = R>,
        M: Message,
        R: Isolated,
    {
        self.ask_for(msg, Some(principal))
    }

    /// `ask`, the predicate seeing `principal` if one is given.
    fn ask_for<M, R>(
        &self,
        msg: M,
        principal: Option<&Principal>,
    ) -> impl Future<Output = Result<R, CallError<M>>> + Send + 'static
    where
        P: Answers<M, Reply = R>,
        M: Message,
        R: Isolated,
    {
        let (reply, pending) = reply_channel();
        answer(
            self.post_with(msg, principal, |msg| P::into_request(msg, reply)),
            pending,
        )
    }

    /// Sends a request built by `make` around a fresh reply handle, and blocks until the
    /// process answers through it: for messages that carry their own [`ReplyTo`] (a handler
    /// that answers later, or hands the request on). A handler that simply returns its answer
    /// is called with [`Addr::call`].
    ///
    /// For code outside processes (tests, `main`, blocking threads). Inside a handler it
    /// returns [`CallError::WouldBlockWorker`] instead of stalling a worker.
    pub fn call_with<M, R>(&self, make: impl FnOnce(ReplyTo<R>) -> M) -> Result<R, CallError<M>>
    where
        P: Handles<M>,
        M: Message,
        R: Isolated,
    {
        call(|m| self.post(m), make, None)
    }

    /// Like [`Addr::call_with`], giving up after `timeout` ([`CallError::Timeout`]).
    pub fn call_with_timeout<M, R>(
        &self,
        make: impl FnOnce(ReplyTo<R>) -> M,
        timeout: Duration,
    ) -> Result<R, CallError<M>>
    where
        P: Handles<M>,
        M: Message,
        R: Isolated,
    {
        call(|m| self.post(m), make, Some(timeout))
    }

    /// The asynchronous [`Addr::call_with`]: posts now, and the returned future resolves with
    /// the answer sent through the [`ReplyTo`]. Works on any executor (an `async` handler,
    /// tokio, a hand-rolled `block_on`).
    pub fn ask_with<M, R>(
        &self,
        make: impl FnOnce(ReplyTo<R>) -> M,
    ) -> impl Future<Output = Result<R, CallError<M>>> + Send + 'static
    where
        P: Handles<M>,
        M: Message,
        R: Isolated,
    {
        let (reply, pending) = reply_channel();
        answer(self.post(make(reply)), pending)
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
    /// Posts `msg`, with the same guarantees and errors as [`Addr::post`].
    pub fn post(&self, msg: M) -> Result<(), PostError<M>> {
        self.target.post_erased(msg)
    }

    /// Request/reply through a [`ReplyTo`] in the message, blocking: as [`Addr::call_with`].
    pub fn call_with<R: Isolated>(
        &self,
        make: impl FnOnce(ReplyTo<R>) -> M,
    ) -> Result<R, CallError<M>> {
        call(|m| self.post(m), make, None)
    }

    /// Request/reply, blocking at most `timeout`: as [`Addr::call_with_timeout`].
    pub fn call_with_timeout<R: Isolated>(
        &self,
        make: impl FnOnce(ReplyTo<R>) -> M,
        timeout: Duration,
    ) -> Result<R, CallError<M>> {
        call(|m| self.post(m), make, Some(timeout))
    }

    /// Request/reply, asynchronous: as [`Addr::ask_with`].
    pub fn ask_with<R: Isolated>(
        &self,
        make: impl FnOnce(ReplyTo<R>) -> M,
    ) -> impl Future<Output = Result<R, CallError<M>>> + Send + 'static {
        let (reply, pending) = reply_channel();
        answer(self.post(make(reply)), pending)
    }

    /// The receiving process's id.
    pub fn id(&self) -> ProcessId {
        self.target.target_id()
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
    fn post_erased(&self, msg: M) -> Result<(), PostError<M>>;
    fn target_id(&self) -> ProcessId;
}

impl<P, M> PostTarget<M> for Addr<P>
where
    P: Handles<M>,
    M: Message,
{
    fn post_erased(&self, msg: M) -> Result<(), PostError<M>> {
        self.post(msg)
    }

    fn target_id(&self) -> ProcessId {
        self.id()
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

/// The blocking request/reply behind [`Addr::call`] and [`Recipient::call`]: builds the request
/// around a fresh reply handle, posts it with `post`, waits for the answer.
fn call<M: Message, R: Isolated>(
    post: impl FnOnce(M) -> Result<(), PostError<M>>,
    make: impl FnOnce(ReplyTo<R>) -> M,
    timeout: Option<Duration>,
) -> Result<R, CallError<M>> {
    let (reply, pending) = reply_channel();
    let request = make(reply);
    if on_worker_thread() {
        return Err(CallError::WouldBlockWorker(request));
    }
    post(request).map_err(CallError::Post)?;
    pending.wait(timeout)
}

/// The answer to an asynchronous request ([`Addr::ask`], [`Recipient::ask`]) whose post
/// returned `posted`.
async fn answer<M: Message, R: Isolated>(
    posted: Result<(), PostError<M>>,
    pending: Pending<R>,
) -> Result<R, CallError<M>> {
    match posted {
        Err(e) => Err(CallError::Post(e)),
        Ok(()) => pending.await.map_err(|_| CallError::NoReply),
    }
}

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
