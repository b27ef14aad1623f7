//! How an idle worker sleeps: a one-token parker.
//!
//! `unpark` before `park` leaves the token set, so the next `park` returns at once; that is
//! what makes the idle protocol in `idle.rs` free of lost wake-ups.

use std::sync::Arc;
use std::time::Duration;

use crate::sync::{lock, Condvar, Mutex};

#[derive(Default)]
struct Inner {
    token: Mutex<bool>,
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
        let mut token = lock(&self.inner.token);
        while !*token {
            match timeout {
                None => {
                    token = match self.inner.condvar.wait(token) {
                        Ok(g) => g,
                        Err(p) => p.into_inner(),
                    }
                }
                #[cfg(not(loom))]
                Some(t) => {
                    token = match self.inner.condvar.wait_timeout(token, t) {
                        Ok((g, _)) => g,
                        Err(p) => p.into_inner().0,
                    };
                    break;
                }
                #[cfg(loom)]
                Some(_) => break,
            }
        }
        *token = false;
    }
}

impl Unparker {
    pub(crate) fn unpark(&self) {
        *lock(&self.inner.token) = true;
        self.inner.condvar.notify_one();
    }
}
