//! Time as the runtime's controllers see it, injectable so that tests of anything that
//! depends on time (restart intensity, token buckets, response-time controllers) are
//! deterministic: no sleeps-and-hope.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// A source of monotonic time.
///
/// `Send + Sync + 'static`, not [`Isolated`](crate::Isolated): a clock is a policy the runtime
/// consults, never process state, and it may share state on purpose (a test's
/// [`ManualClock`] is advanced by the test while supervisors and predicates read it).
pub trait Clock: Send + Sync + 'static {
    /// The current instant.
    fn now(&self) -> Instant;

    /// Nanoseconds on this clock from an origin of its own: only the difference of two
    /// readings means anything. For code that reads the time on every post (token buckets),
    /// where `Instant` arithmetic would cost as much as the rest of the admission.
    ///
    /// The default measures [`now`](Clock::now) from a process-wide origin set on the first
    /// call, so a clock whose instants may lie before that must override it (as the clocks
    /// of this crate do, by returning the counter they keep).
    fn nanos(&self) -> u64 {
        static ORIGIN: OnceLock<Instant> = OnceLock::new();
        let origin = *ORIGIN.get_or_init(Instant::now);
        u64::try_from(self.now().saturating_duration_since(origin).as_nanos()).unwrap_or(u64::MAX)
    }
}

/// The real monotonic clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// A clock that only moves when told to; clones share the same time.
///
/// ```
/// use std::time::Duration;
/// use whirl::time::{Clock, ManualClock};
///
/// let clock = ManualClock::new();
/// let start = clock.now();
/// clock.advance(Duration::from_secs(5));
/// assert_eq!(clock.now() - start, Duration::from_secs(5));
/// ```
#[derive(Clone)]
pub struct ManualClock {
    origin: Instant,
    elapsed_nanos: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock standing at the moment of its creation.
    pub fn new() -> Self {
        ManualClock {
            origin: Instant::now(),
            elapsed_nanos: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        let nanos = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        self.elapsed_nanos.fetch_add(nanos, Ordering::AcqRel);
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        ManualClock::new()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        self.origin + Duration::from_nanos(self.elapsed_nanos.load(Ordering::Acquire))
    }

    fn nanos(&self) -> u64 {
        self.elapsed_nanos.load(Ordering::Acquire)
    }
}

impl fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let elapsed = Duration::from_nanos(self.elapsed_nanos.load(Ordering::Acquire));
        f.debug_struct("ManualClock")
            .field("elapsed", &elapsed)
            .finish()
    }
}
