//! A clock cheap enough to read on every post.

use std::fmt;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicU32, AtomicU64};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use super::Clock;

struct Ticks {
    origin: Instant,
    elapsed_nanos: AtomicU64,
    resolution: Duration,
    /// Whether this is the shared clock, which also keeps [`MILLIS`] current.
    shared: bool,
}

/// The shared clock's time in milliseconds (wrapping), for the message stamp on every post:
/// a plain static, so reading it is one load with no initialisation check. Zero until the
/// shared clock starts (the runtime starts it when it is built).
static MILLIS: AtomicU32 = AtomicU32::new(0);

/// The shared clock's time in milliseconds, not wrapping: what a process's last turn is
/// stamped with (`control/processes.rs`).
static MILLIS_WIDE: AtomicU64 = AtomicU64::new(0);

/// The shared clock's last tick in milliseconds, modulo 2^32.
#[inline]
pub(crate) fn shared_millis() -> u32 {
    MILLIS.load(Relaxed)
}

/// The shared clock's last tick in milliseconds since it started.
#[inline]
pub(crate) fn shared_millis_wide() -> u64 {
    MILLIS_WIDE.load(Relaxed)
}

/// A monotonic clock read from memory: a background thread stores the time every
/// `resolution`, so [`now`](Clock::now) is one atomic load instead of a system call (about
/// 40 ns on some virtual machines, as much as the rest of `post`). It lags the real time by
/// at most about `resolution`.
///
/// The time-dependent predicates ([`TokenBucket`](crate::admission::TokenBucket),
/// [`ResponseTime`](crate::admission::ResponseTime), [`ClassResponseTime`](crate::admission::ClassResponseTime))
/// use the process-wide [`CoarseClock::shared`] (1 ms) by default. Its thread starts on first
/// use and lives as long as the process; a clock made with [`CoarseClock::new`] stops its
/// thread when the last clone is dropped.
///
/// ```
/// use std::time::Duration;
/// use whirl::time::{Clock, CoarseClock};
///
/// let clock = CoarseClock::shared();
/// let a = clock.now();
/// assert!(clock.now() >= a);
/// assert_eq!(clock.resolution(), Duration::from_millis(1));
/// ```
#[derive(Clone)]
pub struct CoarseClock {
    ticks: Arc<Ticks>,
}

impl CoarseClock {
    /// A clock of its own, updated every `resolution` (at least 50 µs) by a thread that ends
    /// when the last clone of the clock is dropped.
    pub fn new(resolution: Duration) -> Self {
        CoarseClock::start(resolution, false)
    }

    fn start(resolution: Duration, shared: bool) -> Self {
        let resolution = resolution.max(Duration::from_micros(50));
        let ticks = Arc::new(Ticks {
            origin: Instant::now(),
            elapsed_nanos: AtomicU64::new(0),
            resolution,
            shared,
        });
        let weak = Arc::downgrade(&ticks);
        let spawned = std::thread::Builder::new()
            .name("whirl-coarse-clock".into())
            .spawn(move || {
                while let Some(ticks) = weak.upgrade() {
                    let nanos =
                        u64::try_from(ticks.origin.elapsed().as_nanos()).unwrap_or(u64::MAX);
                    ticks.elapsed_nanos.store(nanos, Release);
                    if ticks.shared {
                        MILLIS.store((nanos / 1_000_000) as u32, Relaxed);
                        MILLIS_WIDE.store(nanos / 1_000_000, Relaxed);
                    }
                    let pause = ticks.resolution;
                    drop(ticks);
                    std::thread::sleep(pause);
                }
            });
        if let Err(e) = spawned {
            // Without its thread the clock would stand still: say so loudly.
            tracing::error!("cannot start the coarse clock's thread: {e}");
        }
        CoarseClock { ticks }
    }

    /// The process-wide 1 ms clock (started on first use).
    pub fn shared() -> Self {
        shared_clock().clone()
    }

    /// How often the time is refreshed.
    pub fn resolution(&self) -> Duration {
        self.ticks.resolution
    }
}

/// The process-wide 1 ms clock, by reference (no reference-count traffic).
#[inline]
pub(crate) fn shared_clock() -> &'static CoarseClock {
    static SHARED: OnceLock<CoarseClock> = OnceLock::new();
    SHARED.get_or_init(|| CoarseClock::start(Duration::from_millis(1), true))
}

impl Default for CoarseClock {
    fn default() -> Self {
        CoarseClock::shared()
    }
}

impl Clock for CoarseClock {
    #[inline]
    fn now(&self) -> Instant {
        self.ticks.origin + Duration::from_nanos(self.ticks.elapsed_nanos.load(Acquire))
    }

    #[inline]
    fn nanos(&self) -> u64 {
        self.ticks.elapsed_nanos.load(Acquire)
    }
}

impl fmt::Debug for CoarseClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CoarseClock")
            .field("resolution", &self.ticks.resolution)
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn is_monotonic_and_the_thread_ends_with_the_clock() {
        let clock = CoarseClock::new(Duration::from_millis(1));
        let weak = Arc::downgrade(&clock.ticks);
        let a = clock.now();
        let b = clock.clone().now();
        assert!(b >= a);
        assert!(clock.now() <= Instant::now());
        drop(clock);
        // The ticker holds a strong reference only while it stores a tick.
        assert!(weak.strong_count() <= 1);
    }
}
