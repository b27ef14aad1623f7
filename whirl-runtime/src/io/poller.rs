//! The poller: one thread per runtime waiting on `mio::Poll`, turning each readiness event into
//! a call of the callback registered for its token (which posts a message to the owning
//! process). No thread per connection, and no user code on this thread beyond a post.

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use mio::event::Source;
use mio::{Events, Interest, Poll, Registry, Token, Waker};
use parking_lot::{Mutex, RwLock};

use super::readiness::Readiness;

/// The token of the waker that stops the thread.
const WAKE: Token = Token(usize::MAX);
/// Events taken per `poll` call.
const EVENTS_PER_POLL: usize = 1024;

type Callback = Arc<dyn Fn(Readiness) + Send + Sync>;

struct Shared {
    registry: Registry,
    waker: Waker,
    callbacks: RwLock<HashMap<usize, Callback>>,
    next_token: AtomicUsize,
    stopping: AtomicBool,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// A handle on a runtime's poller; cheap to clone. Get one with
/// [`Runtime::net`](crate::Runtime::net) or [`Ctx::net`](crate::Ctx::net).
#[derive(Clone)]
pub struct Net {
    shared: Arc<Shared>,
}

impl Net {
    /// Starts a poller thread.
    pub(crate) fn start() -> io::Result<Net> {
        let mut poll = Poll::new()?;
        let registry = poll.registry().try_clone()?;
        let waker = Waker::new(poll.registry(), WAKE)?;
        let shared = Arc::new(Shared {
            registry,
            waker,
            callbacks: RwLock::new(HashMap::new()),
            next_token: AtomicUsize::new(0),
            stopping: AtomicBool::new(false),
            thread: Mutex::new(None),
        });
        let for_thread = Arc::clone(&shared);
        let handle = std::thread::Builder::new()
            .name("whirl-poller".into())
            .spawn(move || poll_loop(&mut poll, &for_thread))?;
        *shared.thread.lock() = Some(handle);
        Ok(Net { shared })
    }

    /// Registers `source` for `interest`; `on_ready` runs on the poller thread for each
    /// readiness event (mio's edge-triggered semantics: read or write until `WouldBlock`
    /// before waiting for the next event). It must be quick and must not block: post a
    /// message and return.
    ///
    /// The registration lasts until the returned [`Registration`] is dropped (closing the
    /// source also removes it from the poll set).
    ///
    /// `on_ready` is not process state: it is kept in the poller's table of callbacks, shared
    /// (behind an `Arc`) by the thread that registers it, the poller thread that calls it and
    /// whichever worker drops the [`Registration`]. Hence the bounds of a value shared between
    /// threads, `Send + Sync + 'static`, and not [`Isolated`](crate::Isolated): it never runs
    /// as, or inside, a process, so it cannot break a process's isolation, and `Sync` checks
    /// that what it captures may soundly be used from the poller thread. The intended body
    /// posts a message to the owning process through an `Addr` it captured, and touches no
    /// process's state.
    pub(crate) fn register<S: Source + ?Sized>(
        &self,
        source: &mut S,
        interest: Interest,
        on_ready: impl Fn(Readiness) + Send + Sync + 'static,
    ) -> io::Result<Registration> {
        let token = self.shared.next_token.fetch_add(1, Ordering::Relaxed);
        if token == WAKE.0 {
            return Err(io::Error::other("poller tokens exhausted"));
        }
        self.shared
            .callbacks
            .write()
            .insert(token, Arc::new(on_ready));
        if let Err(e) = self
            .shared
            .registry
            .register(source, Token(token), interest)
        {
            self.shared.callbacks.write().remove(&token);
            return Err(e);
        }
        Ok(Registration {
            token: Token(token),
            net: self.clone(),
        })
    }

    /// Removes `source` from the poll set now (dropping its [`Registration`] afterwards
    /// forgets the callback).
    pub(crate) fn deregister<S: Source + ?Sized>(&self, source: &mut S) -> io::Result<()> {
        self.shared.registry.deregister(source)
    }

    /// Sources registered now.
    pub fn registrations(&self) -> usize {
        self.shared.callbacks.read().len()
    }

    /// Stops the poller thread and waits for it.
    pub(crate) fn stop(&self) {
        self.shared.stopping.store(true, Ordering::Release);
        if let Err(e) = self.shared.waker.wake() {
            tracing::error!("cannot wake the poller to stop it: {e}");
        }
        if let Some(handle) = self.shared.thread.lock().take() {
            let _ = handle.join();
        }
        self.shared.callbacks.write().clear();
    }
}

impl std::fmt::Debug for Net {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Net")
            .field("registrations", &self.registrations())
            .finish()
    }
}

/// A source's place in the poll set. Dropping it forgets the callback, so no more events
/// reach the process.
pub(crate) struct Registration {
    token: Token,
    net: Net,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.net.shared.callbacks.write().remove(&self.token.0);
    }
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration")
            .field("token", &self.token.0)
            .finish()
    }
}

fn poll_loop(poll: &mut Poll, shared: &Shared) {
    let mut events = Events::with_capacity(EVENTS_PER_POLL);
    loop {
        if let Err(e) = poll.poll(&mut events, None) {
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            tracing::error!("the poller failed: {e}; sockets no longer get readiness events");
            return;
        }
        if shared.stopping.load(Ordering::Acquire) {
            return;
        }
        for event in events.iter() {
            if event.token() == WAKE {
                continue;
            }
            let callback = shared.callbacks.read().get(&event.token().0).cloned();
            if let Some(callback) = callback {
                callback(Readiness::of(event));
            }
        }
    }
}

// SAFETY: a handle on the runtime's I/O poller, a service of the runtime (like an address): it
// registers sockets and forwards readiness as messages; it reaches no process's state
// (invariant I8).
#[diagnostic::do_not_recommend]
unsafe impl crate::isolation::Isolated for Net {}

// SAFETY: an owned registration with that poller (dropping it deregisters the socket); as above.
// (I8)
unsafe impl crate::isolation::Isolated for Registration {}
