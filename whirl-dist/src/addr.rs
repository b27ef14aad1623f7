//! [`RemoteAddr`]: the typed address of a process on any node, and what its posts and asks
//! can return.
//!
//! A `RemoteAddr<M>` accepts one message type `M` (like whirl's `Recipient<M>`): the process
//! behind it was [exported](crate::Node::export) accepting `M`'s tag. Posting is the same
//! contract as a local post: it never blocks, and a message that cannot go comes straight back
//! ([`RemotePostError`]). A message the receiving node refuses later (its group's predicate,
//! a terminated process) comes back asynchronously as an [`Undelivered`] to the address's
//! bounce handler ([`RemoteAddr::on_bounce`]); without one it is logged and counted.
//!
//! Messages from one sender to one process arrive in the order they were posted (one Zenoh
//! link per pair of nodes, FIFO per priority, each link drained by one writer at a time).

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::{Duration, Instant};

use whirl::request::{Answering, Deliver, Sender};

use crate::ask::{AskEnd, AskFuture, AskSlot};
use crate::core::SendError;
use crate::core::{Core, RouteGuard};
use crate::link::Link;
use crate::remote::{Remote, Request, TagOf};
use crate::wire::{self, BounceReason, Header, WirePrincipal};
use crate::Pid;

/// The typed address of a process that may run on another node, accepting messages `M`.
/// Made by [`Node::remote`](crate::Node::remote); cheap to clone.
pub struct RemoteAddr<M> {
    core: Arc<Core>,
    pid: Pid,
    /// The link to the process's node; `None` if the node was already Down when the address
    /// was made, or the pid is on this node.
    link: Option<Arc<Link>>,
    route: Option<Arc<RouteGuard>>,
    _message: PhantomData<fn(M)>,
}

impl<M> Clone for RemoteAddr<M> {
    fn clone(&self) -> Self {
        RemoteAddr {
            core: Arc::clone(&self.core),
            pid: self.pid,
            link: self.link.clone(),
            route: self.route.clone(),
            _message: PhantomData,
        }
    }
}

// SAFETY: an address, like `whirl::Addr`: it reaches only this node's routing state and the
// link to the process's node (self-synchronising bookkeeping of whirl-dist, never a process's
// state), and what it sends is `M`, which `Remote` requires to be a message. Holding one in a
// process's state or a message shares no mutable memory between processes. (I8)
unsafe impl<M: 'static> whirl::Isolated for RemoteAddr<M> where RemoteAddr<M>: Send {}
impl<M: 'static> whirl::Reply for RemoteAddr<M> where RemoteAddr<M>: Send {}

impl<M> fmt::Debug for RemoteAddr<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "RemoteAddr<{}>({})",
            std::any::type_name::<M>(),
            self.pid
        )
    }
}

impl<M: Remote> RemoteAddr<M> {
    pub(crate) fn new(core: Arc<Core>, pid: Pid) -> Self {
        let link = match pid.node() == core.id() {
            true => None,
            false => core.link_to(pid.node()),
        };
        RemoteAddr {
            core,
            pid,
            link,
            route: None,
            _message: PhantomData,
        }
    }

    /// The link to the process's node: the one this address was made with, or, if its node
    /// was not Up then, the link now (a frame can only go to a node that is Up).
    fn link(&self) -> Option<std::borrow::Cow<'_, Arc<Link>>> {
        match &self.link {
            Some(link) => Some(std::borrow::Cow::Borrowed(link)),
            None if self.pid.node() == self.core.id() => None,
            None => self
                .core
                .link_to(self.pid.node())
                .map(std::borrow::Cow::Owned),
        }
    }

    /// The process's cluster-wide id.
    pub fn pid(&self) -> Pid {
        self.pid
    }

    /// This address, with `handler` called for each message posted through it (or its clones)
    /// that the receiving node gives back ([`Undelivered`]). The handler runs on a network
    /// thread: it must not block (post the message to a process, for example).
    pub fn on_bounce(mut self, handler: impl Fn(Undelivered<M>) + Send + Sync + 'static) -> Self {
        let pid = self.pid;
        self.route =
            Some(self.core.add_route(Arc::new(
                move |reason, payload| match wire::decode_payload::<M>(payload) {
                    Ok(msg) => {
                        handler(Undelivered {
                            to: pid,
                            reason,
                            msg,
                        });
                        true
                    }
                    Err(_) => false,
                },
            )));
        self
    }
}

/// `post` and `request(msg).on_behalf(&p).post()`: the message is on its way when `Ok`; the
/// receiving node delivers it, or gives it back to the [bounce handler](RemoteAddr::on_bounce).
/// On `Err` the message comes back now. A principal travels with the message (its id,
/// priority, class and utility): the receiving group's admission predicate weighs it as that
/// principal's work, as it does for a local post on behalf of one. Principals with an
/// estimator keep it at home: the receiving node knows only the travelling attributes.
impl<M: Remote> Sender for RemoteAddr<M> {}

impl<M: Remote> Deliver<M> for RemoteAddr<M> {
    type Error = RemotePostError<M>;

    fn deliver(
        &self,
        msg: M,
        principal: Option<&whirl::Principal>,
    ) -> Result<(), RemotePostError<M>> {
        let header = Header::Post {
            to: self.pid.local(),
            tag: TagOf::<M>::TAG,
            route: self.route.as_ref().map(|r| r.id()),
            principal: principal.map(WirePrincipal::of),
            trace: crate::trace::current(),
        };
        let link = self.link();
        self.core
            .send_data(
                link.as_deref().map(|l| &**l),
                self.pid.node(),
                &header,
                &msg,
            )
            .map_err(|e| post_error(e, msg))
    }
}

/// `call` and `ask` of a [`Request`] type: the handler's answer, or why none came (the node
/// gave the request back, went down, or the timeout passed).
impl<M: Request> Answering<M> for RemoteAddr<M>
where
    M::Reply: Send,
{
    type Reply = M::Reply;
    type CallError = RemoteCallError<M>;
    type Asking = RemoteAsk<M>;

    fn call_for(
        &self,
        msg: M,
        principal: Option<&whirl::Principal>,
        timeout: Option<Duration>,
    ) -> Result<M::Reply, RemoteCallError<M>> {
        let slot = self.start_ask(msg, principal, deadline(self.core.now(), timeout))?;
        // This thread waits on the system's clock (the node's may be a simulation's).
        finish_ask(slot.wait(deadline(Instant::now(), timeout)))
    }

    fn ask_for(
        &self,
        msg: M,
        principal: Option<&whirl::Principal>,
        timeout: Option<Duration>,
    ) -> RemoteAsk<M> {
        RemoteAsk {
            state: match self.start_ask(msg, principal, deadline(self.core.now(), timeout)) {
                Ok(slot) => AskState::Waiting(AskFuture { slot }),
                Err(e) => AskState::Refused(e),
            },
        }
    }
}

/// When a request made `now` with `timeout` gives up (`None`: a year from now, which is never
/// in practice, and keeps the node's deadline sweep one comparison).
fn deadline(now: Instant, timeout: Option<Duration>) -> Instant {
    let forever = Duration::from_secs(365 * 86_400);
    now.checked_add(timeout.unwrap_or(forever))
        .unwrap_or(now + forever)
}

impl<M: Request> RemoteAddr<M> {
    fn start_ask(
        &self,
        msg: M,
        principal: Option<&whirl::Principal>,
        deadline: Instant,
    ) -> Result<Arc<AskSlot>, RemoteCallError<M>> {
        let (to, tag) = (self.pid.local(), TagOf::<M>::TAG);
        let principal = principal.map(WirePrincipal::of);
        let trace = crate::trace::current();
        let link = self.link();
        self.core
            .start_request(
                link.as_deref().map(|l| &**l),
                self.pid.node(),
                |req| Header::Ask {
                    to,
                    tag,
                    req,
                    principal,
                    trace,
                },
                &msg,
                deadline,
            )
            .map_err(|e| RemoteCallError::Post(post_error(e, msg)))
    }
}

/// The answer to a remote `ask`: resolves with the handler's answer, or why none came.
#[must_use = "an ask's answer is lost unless the future is awaited"]
pub struct RemoteAsk<M> {
    state: AskState<M>,
}

enum AskState<M> {
    Waiting(AskFuture),
    Refused(RemoteCallError<M>),
    Done,
}

// Nothing in a `RemoteAsk` is pinned in place: the slot it waits on is shared.
impl<M> Unpin for RemoteAsk<M> {}

impl<M: Request> std::future::Future for RemoteAsk<M> {
    type Output = Result<M::Reply, RemoteCallError<M>>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        use std::task::Poll;
        let outcome = match &mut self.state {
            AskState::Waiting(future) => match std::pin::Pin::new(future).poll(cx) {
                Poll::Ready(end) => finish_ask(end),
                Poll::Pending => return Poll::Pending,
            },
            AskState::Refused(_) => match std::mem::replace(&mut self.state, AskState::Done) {
                AskState::Refused(e) => Err(e),
                _ => unreachable!("matched as refused above"),
            },
            AskState::Done => panic!("a `RemoteAsk` polled after it completed"),
        };
        self.state = AskState::Done;
        Poll::Ready(outcome)
    }
}

impl<M> fmt::Debug for RemoteAsk<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RemoteAsk<{}>", std::any::type_name::<M>())
    }
}

/// The error of a post that did not go, with its message.
fn post_error<M>(error: SendError, msg: M) -> RemotePostError<M> {
    match error {
        SendError::Full => RemotePostError::Rejected(msg),
        SendError::Down => RemotePostError::Terminated(msg),
        SendError::Encode(source) => RemotePostError::Encode { msg, source },
        SendError::TooLarge { size, limit } => RemotePostError::TooLarge { msg, size, limit },
    }
}

fn finish_ask<M: Request>(end: AskEnd) -> Result<M::Reply, RemoteCallError<M>> {
    match end {
        AskEnd::Answered(bytes) => {
            wire::decode_payload(&bytes).map_err(|_| RemoteCallError::Incompatible)
        }
        AskEnd::Bounced(reason, bytes) => match wire::decode_payload::<M>(&bytes) {
            Ok(msg) => Err(RemoteCallError::Bounced { reason, msg }),
            Err(_) => Err(RemoteCallError::Incompatible),
        },
        // `Failed` ends spawns only; an ask that meets one has no answer.
        AskEnd::NoReply | AskEnd::Failed(_) => Err(RemoteCallError::NoReply),
        AskEnd::Timeout => Err(RemoteCallError::Timeout),
        AskEnd::NodeDown => Err(RemoteCallError::NodeDown),
    }
}

/// A message the receiving node gave back, delivered to the address's
/// [bounce handler](RemoteAddr::on_bounce).
#[derive(Debug)]
#[non_exhaustive]
pub struct Undelivered<M> {
    /// Where it was going.
    pub to: Pid,
    /// Why it came back.
    pub reason: BounceReason,
    /// The message.
    pub msg: M,
}

/// Why a post to a [`RemoteAddr`] failed at once. The message comes back inside.
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum RemotePostError<M> {
    /// The credit window or the lane to the node is full: the network or the receiver is
    /// behind (overload at the sender's side). Try later or shed.
    #[error("the link to the receiving node is full")]
    Rejected(M),
    /// The node is Down (quarantined) or this node is shutting down.
    #[error("the receiving node is down")]
    Terminated(M),
    /// serde could not encode the message.
    #[error("the message cannot be encoded")]
    Encode {
        /// The message.
        msg: M,
        /// postcard's reason.
        #[source]
        source: postcard::Error,
    },
    /// The encoded message exceeds the node's frame limit
    /// ([`NodeConfig::max_frame`](crate::NodeConfig::max_frame)).
    #[error("the encoded message is {size} bytes, over the frame limit of {limit}")]
    TooLarge {
        /// The message.
        msg: M,
        /// Its encoded size, with the frame header.
        size: usize,
        /// The limit.
        limit: usize,
    },
}

impl<M> RemotePostError<M> {
    /// The message that could not be sent.
    pub fn into_message(self) -> M {
        match self {
            RemotePostError::Rejected(m)
            | RemotePostError::Terminated(m)
            | RemotePostError::Encode { msg: m, .. }
            | RemotePostError::TooLarge { msg: m, .. } => m,
        }
    }
}

impl<M> fmt::Debug for RemotePostError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = std::any::type_name::<M>();
        match self {
            RemotePostError::Rejected(_) => write!(f, "Rejected({name})"),
            RemotePostError::Terminated(_) => write!(f, "Terminated({name})"),
            RemotePostError::Encode { source, .. } => write!(f, "Encode({name}, {source:?})"),
            RemotePostError::TooLarge { size, limit, .. } => {
                write!(f, "TooLarge({name}, {size} > {limit})")
            }
        }
    }
}

/// Why a remote ask got no answer.
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum RemoteCallError<M> {
    /// The request could not be sent; it comes back inside.
    #[error("the request could not be sent: {0}")]
    Post(RemotePostError<M>),
    /// The receiving node gave the request back (its group rejected it, the process had
    /// terminated, ...).
    #[error("the request was given back: {reason}")]
    Bounced {
        /// Why.
        reason: BounceReason,
        /// The request.
        msg: M,
    },
    /// The handler failed, or dropped its reply handle, without answering.
    #[error("the process did not answer")]
    NoReply,
    /// No answer arrived within the time limit. The request may still be handled.
    #[error("no answer within the time limit")]
    Timeout,
    /// The receiving node went Down before answering. The request may have been handled.
    #[error("the receiving node went down before answering")]
    NodeDown,
    /// The answer (or the request given back) did not decode as its type: the two nodes
    /// disagree on its encoding.
    #[error("the answer does not decode as the reply type")]
    Incompatible,
}

impl<M> fmt::Debug for RemoteCallError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RemoteCallError::Post(e) => write!(f, "Post({e:?})"),
            RemoteCallError::Bounced { reason, .. } => write!(f, "Bounced({reason:?})"),
            RemoteCallError::NoReply => f.write_str("NoReply"),
            RemoteCallError::Timeout => f.write_str("Timeout"),
            RemoteCallError::NodeDown => f.write_str("NodeDown"),
            RemoteCallError::Incompatible => f.write_str("Incompatible"),
        }
    }
}
