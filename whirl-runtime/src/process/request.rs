//! One way to send: the [`Sender`] verbs every kind of address has, the [`Request`] builder
//! that combines every option with every verb, and the [`Deliver`] and [`Answering`] traits
//! through which each kind of address implements them.
//!
//! ```
//! # use std::time::Duration;
//! # use whirl::prelude::*;
//! # #[derive(Message)] struct Add(u64);
//! # #[process] struct Sum { total: u64 }
//! # #[process] impl Sum { #[handle] fn add(&mut self, m: Add) -> u64 { self.total += m.0; self.total } }
//! # let rt = Runtime::new();
//! # let sum = rt.spawn(Sum { total: 0 });
//! # let alice = Principal::builder(1).priority(3).build().expect("a valid principal");
//! sum.post(Add(1))?;                                   // never blocks
//! assert_eq!(sum.call(Add(1))?, 2);                    // blocks, at most the default timeout
//! let total = sum
//!     .request(Add(1))                                 // any options, then one verb
//!     .on_behalf(&alice)
//!     .timeout(Duration::from_secs(1))
//!     .call()?;
//! assert_eq!(total, 3);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! * `post` sends and returns at once; `call` blocks until the answer; `ask` returns a future
//!   of it, for `async` handlers and any executor.
//! * A request carries options: [`on_behalf`](Request::on_behalf) (the receiving group's
//!   predicate weighs it as that principal's work), [`timeout`](Request::timeout) and
//!   [`no_timeout`](Request::no_timeout). `call` and `ask` give up after the runtime's default
//!   timeout ([`RuntimeBuilder::ask_timeout`](crate::RuntimeBuilder::ask_timeout), 5 s unless
//!   set) unless told otherwise, as Erlang's `gen_server:call` does.
//! * A message that carries its own [`ReplyTo`] (a handler that answers later, or hands the
//!   request on) is built around a fresh reply handle by
//!   [`request_with`](Sender::request_with).
//!
//! A caller that gives up (timed out, or dropped its future) does not recall its request: the
//! process still handles it, and the answer is discarded ([`ReplyTo::send`] gives it back;
//! [`ReplyTo::is_awaited`] says whether anyone still waits).
//!
//! `Addr`, `Recipient` and `Router` implement the traits here; whirl-dist's `RemoteAddr` does
//! too, with its own error types. Each implements one way to deliver a message (and, where the
//! answer's type is known, one way to ask); the verbs and options are written once, here.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use super::error::{CallError, PostError};
use super::reply::{reply_channel, Pending, ReplyTo};
use crate::group::on_worker_thread;
use crate::isolation::{Isolated, Message};
use crate::principal::Principal;
use crate::time::Sleep;

/// How long `call` and `ask` wait when neither the request nor the runtime says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// How an address sends messages `M`: an [`Addr`](crate::Addr) of a process that handles
/// `M`, a [`Recipient<M>`](crate::Recipient), a [`Router`](crate::routing::Router), or a
/// remote address. An address implements [`deliver`](Deliver::deliver); callers use the
/// verbs of [`Sender`].
pub trait Deliver<M> {
    /// What a send that did not go returns, with the message inside.
    type Error;

    /// Sends `msg`, weighed as `principal`'s work if one is given. Never blocks.
    ///
    /// The one method an address implements; callers use [`Sender`]'s verbs.
    fn deliver(&self, msg: M, principal: Option<&Principal>) -> Result<(), Self::Error>;

    /// How long a `call` or `ask` through this address waits by default (`None`: forever).
    fn default_timeout(&self) -> Option<Duration> {
        Some(DEFAULT_TIMEOUT)
    }
}

/// A [`Deliver`] that knows the answer to `M`: an [`Addr`](crate::Addr) of a process whose
/// handler for `M` returns one ([`Answers`](crate::Answers)), or a remote address of a
/// request type. `call` and `ask` take the plain message.
pub trait Answering<M>: Deliver<M> {
    /// The answer.
    type Reply;
    /// Why no answer came, with the message inside if it was not sent.
    type CallError;
    /// The future `ask` returns.
    type Asking: Future<Output = Result<Self::Reply, Self::CallError>> + Send + 'static;

    /// Sends `msg` as a request and blocks until the answer, at most `timeout`.
    fn call_for(
        &self,
        msg: M,
        principal: Option<&Principal>,
        timeout: Option<Duration>,
    ) -> Result<Self::Reply, Self::CallError>;

    /// Sends `msg` as a request now; the future resolves with the answer, or an error after
    /// `timeout`.
    fn ask_for(
        &self,
        msg: M,
        principal: Option<&Principal>,
        timeout: Option<Duration>,
    ) -> Self::Asking;
}

/// The verbs every address has: `post`, `call`, `ask`, and `request`/`request_with` for a
/// request with options. Implemented by [`Addr`](crate::Addr), [`Recipient`](crate::Recipient),
/// [`Router`](crate::routing::Router) and whirl-dist's `RemoteAddr`, each through its
/// [`Deliver`] (and [`Answering`]) impls; the prelude brings it into scope.
pub trait Sender {
    /// Posts `msg`: never blocks, never waits for the receiver. On failure the message comes
    /// back inside the error.
    #[inline]
    fn post<M, E>(&self, msg: M) -> Result<(), E>
    where
        Self: Deliver<M, Error = E>,
    {
        self.deliver(msg, None)
    }

    /// Sends `msg` and blocks until the answer, at most the default timeout
    /// ([`RuntimeBuilder::ask_timeout`](crate::RuntimeBuilder::ask_timeout)). For code outside
    /// processes (tests, `main`, blocking threads); inside a handler it fails at once instead
    /// of stalling a worker (an `async` handler awaits [`ask`](Sender::ask)).
    #[inline]
    fn call<M, R, E>(&self, msg: M) -> Result<R, E>
    where
        Self: Answering<M, Reply = R, CallError = E> + Sized,
    {
        self.request(msg).call()
    }

    /// Sends `msg` now; the future resolves with the answer, or an error after the default
    /// timeout. Never blocks a thread: await it in an `async` handler, in tokio code, or on
    /// any executor.
    #[inline]
    fn ask<M, F>(&self, msg: M) -> F
    where
        Self: Answering<M, Asking = F> + Sized,
    {
        self.request(msg).ask()
    }

    /// A request carrying `msg`, to give options and then send with `post`, `call` or `ask`.
    #[inline]
    fn request<M>(&self, msg: M) -> Request<'_, Self, Plain<M>>
    where
        Self: Deliver<M> + Sized,
    {
        Request::new(self, Plain(msg))
    }

    /// A request whose message carries its own reply handle: `make` builds it around a fresh
    /// [`ReplyTo`], and `call` or `ask` wait for what the process sends through it.
    #[inline]
    fn request_with<M, R, F>(&self, make: F) -> Request<'_, Self, WithReply<F, R>>
    where
        Self: Deliver<M> + Sized,
        F: FnOnce(ReplyTo<R>) -> M,
        R: Isolated,
    {
        Request::new(self, WithReply(make, PhantomData))
    }
}

/// A request's timeout, as given.
#[derive(Clone, Copy, Debug)]
enum Wait {
    Default,
    For(Duration),
    Forever,
}

/// A message on its way to a [`Deliver`], with its options: give them, then send it with one
/// verb. Made by [`Sender::request`] and [`Sender::request_with`].
#[must_use = "a request does nothing until it is sent with `post`, `call` or `ask`"]
pub struct Request<'a, T, B> {
    target: &'a T,
    body: B,
    principal: Option<&'a Principal>,
    wait: Wait,
}

/// The body of a request made by [`Sender::request`]: the message itself.
#[derive(Debug)]
pub struct Plain<M>(M);

/// The body of a request made by [`Sender::request_with`]: how to make the message around a
/// reply handle.
pub struct WithReply<F, R>(F, PhantomData<fn() -> R>);

impl<'a, T, B> Request<'a, T, B> {
    fn new(target: &'a T, body: B) -> Self {
        Request {
            target,
            body,
            principal: None,
            wait: Wait::Default,
        }
    }

    /// Sends on behalf of `principal`: the receiving group's admission predicate weighs the
    /// message as that principal's work (its priority, class, utility and estimates) instead
    /// of the receiving process's own. For messages that arrive carrying the principal they
    /// serve, such as a request forwarded from another node; the process still runs under its
    /// own principal.
    ///
    /// In a group with a [scheduler](crate::scheduler), the receiving process also *inherits*
    /// the principal's priority while the message is queued ([`Ready::inherited_priority`]),
    /// so a low-priority process holding an important principal's message runs as early as
    /// that principal's own processes would.
    ///
    /// [`Ready::inherited_priority`]: crate::scheduler::Ready::inherited_priority
    #[inline]
    pub fn on_behalf(mut self, principal: &'a Principal) -> Self {
        self.principal = Some(principal);
        self
    }

    /// Gives up waiting for the answer after `timeout` (`call` and `ask`; a `post` does not
    /// wait). The request is not recalled: see the [module docs](crate::request).
    #[inline]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.wait = Wait::For(timeout);
        self
    }

    /// Waits for the answer as long as it takes.
    #[inline]
    pub fn no_timeout(mut self) -> Self {
        self.wait = Wait::Forever;
        self
    }
}

impl<T, B> Request<'_, T, B> {
    /// The timeout this request waits at most.
    fn resolve_timeout<M>(&self) -> Option<Duration>
    where
        T: Deliver<M>,
    {
        match self.wait {
            Wait::Default => self.target.default_timeout(),
            Wait::For(d) => Some(d),
            Wait::Forever => None,
        }
    }
}

// The verbs' bounds are on the methods, not on the impls: a request that cannot be sent
// with a verb is then reported as the bound that fails (the process does not handle the
// message, its handler returns nothing...), not as a method that does not exist.
impl<T, M> Request<'_, T, Plain<M>> {
    /// Sends the message: never blocks, never waits for the receiver.
    #[inline]
    pub fn post<E>(self) -> Result<(), E>
    where
        T: Deliver<M, Error = E>,
    {
        self.target.deliver(self.body.0, self.principal)
    }

    /// Sends the request and blocks until the answer, or the timeout. For code outside
    /// processes; inside a handler it fails at once instead of stalling a worker.
    #[inline]
    pub fn call<R, E>(self) -> Result<R, E>
    where
        T: Answering<M, Reply = R, CallError = E>,
    {
        let timeout = self.resolve_timeout::<M>();
        self.target.call_for(self.body.0, self.principal, timeout)
    }

    /// Sends the request now; the future resolves with the answer, or an error after the
    /// timeout.
    #[inline]
    pub fn ask<F>(self) -> F
    where
        T: Answering<M, Asking = F>,
    {
        let timeout = self.resolve_timeout::<M>();
        self.target.ask_for(self.body.0, self.principal, timeout)
    }
}

impl<T, F, R> Request<'_, T, WithReply<F, R>> {
    /// Sends the message built around a fresh reply handle, and blocks until the process
    /// answers through it, or the timeout. For code outside processes; inside a handler it
    /// returns [`CallError::WouldBlockWorker`] instead of stalling a worker.
    pub fn call<M>(self) -> Result<R, CallError<M>>
    where
        T: Deliver<M, Error = PostError<M>>,
        F: FnOnce(ReplyTo<R>) -> M,
        M: Message,
    {
        let timeout = self.resolve_timeout::<M>();
        let (reply, pending) = reply_channel();
        let request = (self.body.0)(reply);
        if on_worker_thread() {
            return Err(CallError::WouldBlockWorker(request));
        }
        self.target
            .deliver(request, self.principal)
            .map_err(CallError::Post)?;
        pending.wait(timeout)
    }

    /// Sends the message built around a fresh reply handle now; the future resolves with
    /// what the process sends through it, or an error after the timeout.
    pub fn ask<M>(self) -> Ask<R, M>
    where
        T: Deliver<M, Error = PostError<M>>,
        F: FnOnce(ReplyTo<R>) -> M,
        M: Message,
    {
        let timeout = self.resolve_timeout::<M>();
        let (reply, pending) = reply_channel();
        let posted = self.target.deliver((self.body.0)(reply), self.principal);
        Ask::new(posted, pending, timeout)
    }
}

/// The answer to a local `ask`: resolves with the process's answer, or why none came.
#[must_use = "an ask's answer is lost unless the future is awaited"]
pub struct Ask<R, M> {
    state: AskState<R, M>,
    deadline: Option<Sleep>,
}

enum AskState<R, M> {
    Waiting(Pending<R>),
    Refused(PostError<M>),
    Done,
}

impl<R, M> Ask<R, M> {
    pub(crate) fn new(
        posted: Result<(), PostError<M>>,
        pending: Pending<R>,
        timeout: Option<Duration>,
    ) -> Self {
        match posted {
            Ok(()) => Ask {
                state: AskState::Waiting(pending),
                deadline: timeout.map(crate::time::sleep),
            },
            Err(e) => Ask {
                state: AskState::Refused(e),
                deadline: None,
            },
        }
    }
}

// Nothing in an `Ask` is pinned in place: its pending reply and sleep are polled by reference
// and can move between polls.
impl<R, M> Unpin for Ask<R, M> {}

impl<R, M> Future for Ask<R, M> {
    type Output = Result<R, CallError<M>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let outcome = match &mut this.state {
            AskState::Waiting(pending) => match pending.poll_outcome(cx) {
                Poll::Ready(outcome) => outcome,
                Poll::Pending => match this.deadline.as_mut().map(|d| Pin::new(d).poll(cx)) {
                    Some(Poll::Ready(())) => Err(CallError::Timeout),
                    _ => return Poll::Pending,
                },
            },
            AskState::Refused(_) => match std::mem::replace(&mut this.state, AskState::Done) {
                AskState::Refused(e) => Err(CallError::Post(e)),
                _ => unreachable!("matched as refused above"),
            },
            AskState::Done => panic!("an `Ask` polled after it completed"),
        };
        this.state = AskState::Done;
        Poll::Ready(outcome)
    }
}

impl<R, M> std::fmt::Debug for Ask<R, M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ask")
            .field("reply", &std::any::type_name::<R>())
            .finish_non_exhaustive()
    }
}
