//! The poller: `mio::Poll` for every socket of a runtime, turning each readiness event into a
//! call of the callback registered for its token (which posts a message to the owning
//! process). No thread per connection, and no user code beyond a post.
//!
//! Who waits on the poll: on a runtime with shared workers, the workers themselves (started
//! with [`Net::start_driven`]). A worker about to sleep takes the poll if no other worker has
//! it ([`Net::try_drive`]) and sleeps in it instead, so the process a readiness event makes
//! ready runs on the worker that saw the event, with no thread woken in between; busy workers
//! look at it without waiting every few dozen turns, and a worker that has it is woken from
//! it by [`Net::wake_driver`]. Otherwise (a stepped runtime, which has no shared workers) a
//! thread of its own waits on it ([`Net::start`]).

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use mio::event::Source;
use mio::{Events, Interest, Poll, Registry, Token, Waker};
use parking_lot::{Mutex, MutexGuard, RwLock};

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
    /// The poller thread, if the poll has one.
    thread: Mutex<Option<JoinHandle<()>>>,
    /// The poll, for the worker that drives it now (`None`: a thread has it).
    driven: Mutex<Option<Polling>>,
}

/// The poll and the buffer its events are read into.
struct Polling {
    poll: Poll,
    events: Events,
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
        let (mut poll, shared) = Self::open()?;
        let for_thread = Arc::clone(&shared);
        let handle = std::thread::Builder::new()
            .name("whirl-poller".into())
            .spawn(move || poll_loop(&mut poll, &for_thread))?;
        *shared.thread.lock() = Some(handle);
        Ok(Net { shared })
    }

    /// A poll with no thread: the caller's workers drive it ([`Net::try_drive`]).
    pub(crate) fn start_driven() -> io::Result<Net> {
        let (poll, shared) = Self::open()?;
        *shared.driven.lock() = Some(Polling {
            poll,
            events: Events::with_capacity(EVENTS_PER_POLL),
        });
        Ok(Net { shared })
    }

    fn open() -> io::Result<(Poll, Arc<Shared>)> {
        let poll = Poll::new()?;
        let registry = poll.registry().try_clone()?;
        let waker = Waker::new(poll.registry(), WAKE)?;
        let shared = Arc::new(Shared {
            registry,
            waker,
            callbacks: RwLock::new(HashMap::new()),
            next_token: AtomicUsize::new(0),
            stopping: AtomicBool::new(false),
            thread: Mutex::new(None),
            driven: Mutex::new(None),
        });
        Ok((poll, shared))
    }

    /// The poll, if the workers drive it and none has it now.
    pub(crate) fn try_drive(&self) -> Option<Driver<'_>> {
        let polling = self.shared.driven.try_lock()?;
        polling.as_ref()?;
        Some(Driver {
            polling,
            shared: &self.shared,
        })
    }

    /// Makes the poll a worker waits in return (or the next one, if none waits now).
    pub(crate) fn wake_driver(&self) {
        if let Err(e) = self.shared.waker.wake() {
            tracing::error!("cannot wake the worker waiting on the poller: {e}");
        }
    }

    /// Registers `source` for `interest`; `on_ready` runs on the thread polling (the poller
    /// thread, or the shared worker driving the poll) for each readiness event (mio's edge-triggered semantics: read or write until `WouldBlock`
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
    /// that what it captures may soundly be used from the polling thread. The intended body
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

    /// Stops the poller thread and waits for it (or, driven by workers, stops calling back).
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

/// The poll, held by the worker driving it.
pub(crate) struct Driver<'a> {
    polling: MutexGuard<'a, Option<Polling>>,
    shared: &'a Shared,
}

impl Driver<'_> {
    /// Waits up to `timeout` (`None`: until an event or [`Net::wake_driver`]) for readiness,
    /// then calls the callback of each event; returns how many it called, or the poll's
    /// error (logged; an interrupted wait is no error).
    pub(crate) fn poll(&mut self, timeout: Option<Duration>) -> io::Result<usize> {
        let Some(Polling { poll, events }) = self.polling.as_mut() else {
            return Ok(0);
        };
        if let Err(e) = poll.poll(events, timeout) {
            if e.kind() == io::ErrorKind::Interrupted {
                return Ok(0);
            }
            tracing::error!("polling for readiness failed: {e}");
            return Err(e);
        }
        if self.shared.stopping.load(Ordering::Acquire) {
            return Ok(0);
        }
        Ok(dispatch(events, self.shared))
    }
}

/// Calls the callback of each event; returns how many it called.
fn dispatch(events: &Events, shared: &Shared) -> usize {
    let mut called = 0;
    for event in events.iter() {
        if event.token() == WAKE {
            continue;
        }
        let callback = shared.callbacks.read().get(&event.token().0).cloned();
        if let Some(callback) = callback {
            callback(Readiness::of(event));
            called += 1;
        }
    }
    called
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
        dispatch(&events, shared);
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
