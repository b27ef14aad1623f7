//! How an idle worker sleeps: a one-token parker.
//!
//! `unpark` before `park` leaves the token set, so the next `park` returns at once; that is
//! what makes the idle protocol in `idle.rs` free of lost wake-ups.
//!
//! A worker may also sleep in something else that it knows how to interrupt (the I/O poll,
//! [`Parker::park_in`]): `unpark` then calls that interruption too.

use std::sync::Arc;
use std::time::Duration;

use crate::sync::{lock, Condvar, Mutex};

/// Interrupts what a worker sleeps in (see [`Parker::park_in`]).
pub(crate) type Interrupt = Arc<dyn Fn() + Send + Sync>;

#[derive(Default)]
struct State {
    token: bool,
    /// How to interrupt the sleep, while the worker sleeps in something other than the
    /// condition variable.
    sleeping_in: Option<Interrupt>,
}

#[derive(Default)]
struct Inner {
    state: Mutex<State>,
    condvar: Condvar,
}

/// The sleeping side, owned by one worker.
pub(crate) struct Parker {
    inner: Arc<Inner>,
}

/// The waking side; cheap to clone.
#[derive(Clone)]
pub(crate) struct Unparker {
    inner: Arc<Inner>,
}

impl Parker {
    pub(crate) fn new() -> (Parker, Unparker) {
        let inner = Arc::new(Inner::default());
        (
            Parker {
                inner: Arc::clone(&inner),
            },
            Unparker { inner },
        )
    }

    /// Sleeps until the token is set (possibly already), then consumes it. With a timeout, may
    /// also return when it expires.
    pub(crate) fn park(&self, timeout: Option<Duration>) {
        let mut state = lock(&self.inner.state);
        while !state.token {
            match timeout {
                None => {
                    state = match self.inner.condvar.wait(state) {
                        Ok(g) => g,
                        Err(p) => p.into_inner(),
                    }
                }
                #[cfg(not(loom))]
                Some(t) => {
                    state = match self.inner.condvar.wait_timeout(state, t) {
                        Ok((g, _)) => g,
                        Err(p) => p.into_inner().0,
                    };
                    break;
                }
                #[cfg(loom)]
                Some(_) => break,
            }
        }
        state.token = false;
    }

    /// Sleeps in `sleep` (which returns when `interrupt` is called, or earlier) instead of on
    /// the condition variable, unless the token is set already; consumes the token either
    /// way. An `unpark` from the moment this is called calls `interrupt`, so none is lost:
    /// one that comes before `sleep` waits makes it return at once.
    #[cfg(feature = "net")]
    pub(crate) fn park_in<R>(&self, interrupt: &Interrupt, sleep: impl FnOnce() -> R) -> Option<R> {
        {
            let mut state = lock(&self.inner.state);
            if std::mem::take(&mut state.token) {
                return None;
            }
            state.sleeping_in = Some(Arc::clone(interrupt));
        }
        let slept = sleep();
        let mut state = lock(&self.inner.state);
        state.sleeping_in = None;
        state.token = false;
        Some(slept)
    }
}

impl Unparker {
    pub(crate) fn unpark(&self) {
        let interrupt = {
            let mut state = lock(&self.inner.state);
            state.token = true;
            state.sleeping_in.clone()
        };
        self.inner.condvar.notify_one();
        if let Some(interrupt) = interrupt {
            interrupt();
        }
    }
}
