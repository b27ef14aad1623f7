//! The asking side of a remote ask: a one-shot slot for its outcome, waited on by a thread or
//! awaited by a future.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use parking_lot::{Condvar, Mutex};

use crate::wire::BounceReason;

/// How a remote ask ended, before its payload is decoded.
#[derive(Debug)]
pub(crate) enum AskEnd {
    /// The handler answered with these bytes.
    Answered(Vec<u8>),
    /// The request was bounced; these are its bytes.
    Bounced(BounceReason, Vec<u8>),
    /// The handler failed or dropped the reply handle.
    NoReply,
    /// A remote spawn failed, for this reason.
    Failed(String),
    /// No answer within the time limit.
    Timeout,
    /// The node went Down (or this node shut down) first.
    NodeDown,
}

struct State {
    end: Option<AskEnd>,
    waker: Option<Waker>,
}

/// The slot one ask's end is put into, once.
pub(crate) struct AskSlot {
    state: Mutex<State>,
    ready: Condvar,
}

impl AskSlot {
    pub(crate) fn new() -> Arc<AskSlot> {
        Arc::new(AskSlot {
            state: Mutex::new(State {
                end: None,
                waker: None,
            }),
            ready: Condvar::new(),
        })
    }

    /// Puts the end in (the first one wins).
    pub(crate) fn complete(&self, end: AskEnd) {
        let mut state = self.state.lock();
        if state.end.is_some() {
            return;
        }
        state.end = Some(end);
        let waker = state.waker.take();
        drop(state);
        self.ready.notify_all();
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Blocks until the end is in, or `deadline` passes (then `Timeout`).
    pub(crate) fn wait(&self, deadline: Instant) -> AskEnd {
        let mut state = self.state.lock();
        loop {
            if let Some(end) = state.end.take() {
                return end;
            }
            if self.ready.wait_until(&mut state, deadline).timed_out() {
                return state.end.take().unwrap_or(AskEnd::Timeout);
            }
        }
    }
}

/// Awaits an [`AskSlot`].
pub(crate) struct AskFuture {
    pub(crate) slot: Arc<AskSlot>,
}

impl Future for AskFuture {
    type Output = AskEnd;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<AskEnd> {
        let mut state = self.slot.state.lock();
        if let Some(end) = state.end.take() {
            return Poll::Ready(end);
        }
        match &state.waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => state.waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}
