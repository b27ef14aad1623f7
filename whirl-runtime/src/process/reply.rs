//! One-shot reply handles for request/reply between code outside the runtime and processes.

use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::error::CallError;
use crate::isolation::{Isolated, Reply};
use crate::lifecycle::Failure;
use crate::lifecycle::{unanswered_now, Unanswered};

enum State<T> {
    Waiting(Option<Waker>),
    Answered(T),
    Dropped(Unanswered),
    /// The outcome was collected, or the caller stopped waiting.
    Taken,
}

struct Slot<T> {
    state: Mutex<State<T>>,
    condvar: Condvar,
}

impl<T> Slot<T> {
    fn complete(&self, next: State<T>) -> Result<(), State<T>> {
        let mut state = self.state.lock();
        let waker = match &mut *state {
            State::Waiting(w) => w.take(),
            _ => return Err(next),
        };
        *state = next;
        drop(state);
        self.condvar.notify_all();
        if let Some(w) = waker {
            w.wake();
        }
        Ok(())
    }
}

/// The answering side of a request: send one value, once. Dropping it unanswered tells the
/// caller [`CallError::NoReply`], with the reason ([`Unanswered`]).
pub struct ReplyTo<T> {
    slot: Option<Arc<Slot<T>>>,
}

impl<T> ReplyTo<T> {
    /// A handle nobody waits on: what a message posted with `post` instead of `ask` carries
    /// to a handler that answers ([`Answers`](crate::Answers)). Sending on it gives the value
    /// back.
    #[doc(hidden)]
    pub fn __nobody() -> Self {
        ReplyTo { slot: None }
    }

    /// Whether someone waits for the answer (a caller of `ask` or `call` that has not given
    /// up).
    pub fn is_awaited(&self) -> bool {
        self.slot
            .as_ref()
            .is_some_and(|slot| matches!(*slot.state.lock(), State::Waiting(_)))
    }

    /// Answers the request. Gives the value back if the caller has stopped waiting.
    pub fn send(mut self, value: T) -> Result<(), T> {
        match self.slot.take() {
            Some(slot) => slot.complete(State::Answered(value)).map_err(|s| match s {
                State::Answered(v) => v,
                _ => unreachable!("complete returns the state it was given"),
            }),
            None => Err(value),
        }
    }
}

impl<T> ReplyTo<T> {
    /// Tells the caller that no answer will come, and why.
    pub(crate) fn refuse(mut self, why: Unanswered) {
        if let Some(slot) = self.slot.take() {
            let _ = slot.complete(State::Dropped(why));
        }
    }
}

impl<T> Drop for ReplyTo<T> {
    /// Unanswered: the caller gets [`CallError::NoReply`] with why. A handle dropped while its
    /// handler panics says [`Unanswered::HandlerFailed`]; one the runtime drops for a known
    /// reason (with the dead letters of a terminated process, at shutdown) says that reason
    /// ([`Unanswered::Terminated`], [`Unanswered::ShutDown`]); any other was dropped by whoever
    /// held it ([`Unanswered::Dropped`]).
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            let _ = slot.complete(State::Dropped(unanswered_now()));
        }
    }
}

impl<T> fmt::Debug for ReplyTo<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ReplyTo<{}>", std::any::type_name::<T>())
    }
}

/// The waiting side: block on it, or `.await` it.
pub(crate) struct Pending<T> {
    slot: Arc<Slot<T>>,
}

pub(crate) fn reply_channel<T>() -> (ReplyTo<T>, Pending<T>) {
    let slot = Arc::new(Slot {
        state: Mutex::new(State::Waiting(None)),
        condvar: Condvar::new(),
    });
    (
        ReplyTo {
            slot: Some(Arc::clone(&slot)),
        },
        Pending { slot },
    )
}

impl<T> Pending<T> {
    fn take_outcome<M>(state: &mut State<T>) -> Option<Result<T, CallError<M>>> {
        match std::mem::replace(state, State::Taken) {
            State::Answered(v) => Some(Ok(v)),
            State::Dropped(why) => Some(Err(CallError::NoReply(why))),
            State::Taken => Some(Err(CallError::NoReply(Unanswered::Dropped))),
            waiting @ State::Waiting(_) => {
                *state = waiting;
                None
            }
        }
    }

    pub(crate) fn wait<M>(self, timeout: Option<Duration>) -> Result<T, CallError<M>> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut state = self.slot.state.lock();
        loop {
            if let Some(outcome) = Self::take_outcome(&mut state) {
                return outcome;
            }
            match deadline {
                None => self.slot.condvar.wait(&mut state),
                Some(d) => {
                    if self.slot.condvar.wait_until(&mut state, d).timed_out() {
                        return Self::take_outcome(&mut state).unwrap_or(Err(CallError::Timeout));
                    }
                }
            }
        }
    }
}

impl<T> Drop for Pending<T> {
    /// The caller stopped waiting (timed out, or dropped the future): a later `send` must
    /// hand its value back instead of reporting success.
    fn drop(&mut self) {
        let mut state = self.slot.state.lock();
        if matches!(*state, State::Waiting(_)) {
            *state = State::Taken;
        }
    }
}

impl<T> Pending<T> {
    /// The outcome, if it has come; else registers `cx`'s waker for it.
    pub(crate) fn poll_outcome<M>(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<T, CallError<M>>> {
        let mut state = self.slot.state.lock();
        if let Some(outcome) = Self::take_outcome(&mut state) {
            return Poll::Ready(outcome);
        }
        if let State::Waiting(w) = &mut *state {
            match w {
                Some(existing) if existing.will_wake(cx.waker()) => {}
                _ => *w = Some(cx.waker().clone()),
            }
        }
        Poll::Pending
    }
}

// SAFETY: a one-shot channel back to a waiting caller; the answer is moved through it, so it
// must itself be isolated (invariant I8).
unsafe impl<T: Isolated> Isolated for ReplyTo<T> {}

/// What a handler may return, and the answer it carries: `()` answers nothing,
/// `Result<T, E>` answers `T` or fails the process with `E`, and a [`Reply`] answers itself.
/// Used by the code `#[process]` generates.
///
/// The impl for `Result` asks nothing of `T` and `E`: [`answer`] does (`T: Isolated`,
/// `E: Into<Failure>`). So a `Result` always selects that impl, and a refused answer is
/// reported as the inner type that fails (`RwLock<u8>` in `Result<Vec<Arc<RwLock<u8>>>, _>`),
/// not as a return type of the wrong shape.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "a handler must return `()`, `Result<T, E>` where `E` converts into `Failure`, or a reply, not `{Self}`",
    label = "not a handler result",
    note = "a type of your own becomes a reply with `#[derive(Isolated)]`; `Failure::new(\"why\")` makes a failure, and any `std::error::Error` converts into one with `?`"
)]
pub trait HandlerOutput {
    /// The answer.
    type Reply;
    /// What fails the process.
    type Error;

    /// The answer, or the error that terminates the process.
    fn into_outcome(self) -> Result<Self::Reply, Self::Error>;
}

impl HandlerOutput for () {
    type Reply = ();
    type Error = Failure;

    #[inline]
    fn into_outcome(self) -> Result<(), Failure> {
        Ok(())
    }
}

impl<T, E> HandlerOutput for Result<T, E> {
    type Reply = T;
    type Error = E;

    #[inline]
    fn into_outcome(self) -> Result<T, E> {
        self
    }
}

impl<T: Reply> HandlerOutput for T {
    type Reply = T;
    type Error = Failure;

    #[inline]
    fn into_outcome(self) -> Result<T, Failure> {
        Ok(self)
    }
}

/// Sends a handler's answer to whoever asked (nobody, for a message that was posted) and
/// turns its result into what `Process::handle` returns. On a failure the caller gets
/// [`CallError::NoReply`] with [`Unanswered::HandlerFailed`].
#[doc(hidden)]
#[inline]
pub fn answer<O: HandlerOutput>(output: O, reply: ReplyTo<O::Reply>) -> Result<(), Failure>
where
    O::Reply: Isolated,
    O::Error: Into<Failure>,
{
    let value = match output.into_outcome() {
        Ok(value) => value,
        Err(e) => {
            reply.refuse(Unanswered::HandlerFailed);
            return Err(e.into());
        }
    };
    if reply.slot.is_some() {
        // A caller that stopped waiting gets nothing; the handler's work is done either way.
        let _ = reply.send(value);
    }
    Ok(())
}

/// What a `#[started]` hook may return: `()` or `Result<(), E>`. Used by the code `#[process]`
/// generates.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "a hook must return `()` or `Result<(), E>` where `E` converts into `Failure`, not `{Self}`",
    label = "not a hook result",
    note = "`Failure::new(\"why\")` makes a failure; any `std::error::Error` converts into one with `?`"
)]
pub trait HookOutput {
    /// The result in the form `Process::started` returns.
    fn into_hook_result(self) -> Result<(), Failure>;
}

impl HookOutput for () {
    #[inline]
    fn into_hook_result(self) -> Result<(), Failure> {
        Ok(())
    }
}

impl<E: Into<Failure>> HookOutput for Result<(), E> {
    #[inline]
    fn into_hook_result(self) -> Result<(), Failure> {
        self.map_err(Into::into)
    }
}

/// A hook's result, as `Process::started` returns it.
#[doc(hidden)]
#[inline]
pub fn into_handler_result<O: HookOutput>(output: O) -> Result<(), Failure> {
    output.into_hook_result()
}
