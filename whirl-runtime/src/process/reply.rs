//! One-shot reply handles for request/reply between code outside the runtime and processes.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::error::CallError;

enum State<T> {
    Waiting(Option<Waker>),
    Answered(T),
    Dropped,
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
/// caller [`CallError::NoReply`].
pub struct ReplyTo<T> {
    slot: Option<Arc<Slot<T>>>,
}

impl<T> ReplyTo<T> {
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

impl<T> Drop for ReplyTo<T> {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            let _ = slot.complete(State::Dropped);
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
            State::Dropped | State::Taken => Some(Err(CallError::NoReply)),
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

impl<T> Future for Pending<T> {
    type Output = Result<T, CallError<()>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
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
unsafe impl<T: crate::isolation::Isolated> crate::isolation::Isolated for ReplyTo<T> {}
