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
        self.slot.poll_end(cx, None)
    }
}

impl AskSlot {
    /// The end if it is in (or, past `deadline`, a deadline and the time now, `Timeout`); otherwise `cx`'s waker is kept
    /// for [`complete`](AskSlot::complete).
    fn poll_end(&self, cx: &mut Context<'_>, deadline: Option<(Instant, Instant)>) -> Poll<AskEnd> {
        let mut state = self.state.lock();
        if let Some(end) = state.end.take() {
            return Poll::Ready(end);
        }
        if deadline.is_some_and(|(deadline, now)| now >= deadline) {
            return Poll::Ready(AskEnd::Timeout);
        }
        match &state.waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => state.waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}

/// Awaits an [`AskSlot`] until `deadline`, then ends as [`AskEnd::Timeout`]: a future that a
/// simulator can poll step by step, and that [`block_on`] waits for on a thread exactly as
/// [`AskSlot::wait`] would.
pub(crate) struct Until {
    pub(crate) slot: Arc<AskSlot>,
    pub(crate) deadline: Instant,
    /// The clock the deadline is on (the node's).
    pub(crate) clock: Arc<dyn whirl::time::Clock>,
}

impl Future for Until {
    type Output = AskEnd;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<AskEnd> {
        let end = self
            .slot
            .poll_end(cx, Some((self.deadline, self.clock.now())));
        if end.is_ready() {
            return end;
        }
        WAKE_BY.with(|by| {
            let earliest = by.get().map_or(self.deadline, |d| d.min(self.deadline));
            by.set(Some(earliest));
        });
        Poll::Pending
    }
}

thread_local! {
    /// The earliest deadline a pending [`Until`] polled on this thread has: when
    /// [`block_on`] must poll again even if nothing wakes it.
    static WAKE_BY: std::cell::Cell<Option<Instant>> = const { std::cell::Cell::new(None) };
}

/// Wakes the thread blocked in [`block_on`].
struct ThreadWaker(std::thread::Thread);

impl std::task::Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Runs `future` to its end on this thread, parking between polls until it is woken or the
/// deadline of an [`Until`] it waits on passes.
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        WAKE_BY.with(|by| by.set(None));
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        match WAKE_BY.with(|by| by.take()) {
            Some(deadline) => {
                std::thread::park_timeout(deadline.saturating_duration_since(Instant::now()))
            }
            None => std::thread::park(),
        }
    }
}

/// The outcome of a hand-over, put in by the runtime's callback and awaited by a migration.
pub(crate) struct Handoff<T> {
    state: Mutex<HandoffState<T>>,
}

struct HandoffState<T> {
    value: Option<T>,
    /// The callback was dropped without being called.
    abandoned: bool,
    waker: Option<Waker>,
}

impl<T> Handoff<T> {
    pub(crate) fn new() -> Arc<Handoff<T>> {
        Arc::new(Handoff {
            state: Mutex::new(HandoffState {
                value: None,
                abandoned: false,
                waker: None,
            }),
        })
    }

    /// The sending half, for the callback: it puts the value in, or marks the hand-over
    /// abandoned when it is dropped unused.
    pub(crate) fn sender(self: &Arc<Self>) -> HandoffSender<T> {
        HandoffSender(Some(Arc::clone(self)))
    }

    fn finish(&self, value: Option<T>) {
        let mut state = self.state.lock();
        match value {
            Some(value) => state.value = Some(value),
            None => state.abandoned = true,
        }
        let waker = state.waker.take();
        drop(state);
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

/// Puts a hand-over's outcome in ([`Handoff::sender`]).
pub(crate) struct HandoffSender<T>(Option<Arc<Handoff<T>>>);

impl<T> HandoffSender<T> {
    pub(crate) fn send(mut self, value: T) {
        if let Some(handoff) = self.0.take() {
            handoff.finish(Some(value));
        }
    }
}

impl<T> Drop for HandoffSender<T> {
    fn drop(&mut self) {
        if let Some(handoff) = self.0.take() {
            handoff.finish(None);
        }
    }
}

impl<T> Future for &Handoff<T> {
    /// The value, or `None` if the callback was dropped unused.
    type Output = Option<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let mut state = self.state.lock();
        if let Some(value) = state.value.take() {
            return Poll::Ready(Some(value));
        }
        if state.abandoned {
            return Poll::Ready(None);
        }
        state.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}
