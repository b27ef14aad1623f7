//! A group's worker pool: how many threads it may have, starting them, and retiring them.
//!
//! The pool has a *target* size, set at build and by the group's thread controller, and a
//! *live* count. Growing starts threads at once. Shrinking lowers the target and wakes the
//! sleepers; a worker retires when it sees `live > target` while looking for work, or every
//! few dozen turns while busy (so a pool that never idles still shrinks), after handing its
//! queued processes to the injector. A retiring worker leaves its slot (index, statistics) for
//! the next worker started.

use std::ops::RangeInclusive;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed};
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};

use super::probe::TurnProbe;
use crate::control::SlotStats;
use crate::time::{shared_clock, Clock};

/// How many worker threads a group may have: a fixed number, or a range its
/// [thread controller](crate::control) moves in.
///
/// ```
/// use whirl::ThreadRange;
///
/// assert_eq!(ThreadRange::from(4), ThreadRange::new(4, 4));
/// assert_eq!(ThreadRange::from(1..=8), ThreadRange::new(1, 8));
/// // At least one thread, and max >= min.
/// assert_eq!(ThreadRange::new(0, 0), ThreadRange::new(1, 1));
/// assert_eq!(ThreadRange::from(5..=2), ThreadRange::new(5, 5));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadRange {
    min: usize,
    max: usize,
}

impl ThreadRange {
    /// From `min` to `max` threads (at least 1; `max` at least `min`).
    pub fn new(min: usize, max: usize) -> Self {
        let min = min.max(1);
        ThreadRange {
            min,
            max: max.max(min),
        }
    }

    /// The fewest threads.
    pub fn min(&self) -> usize {
        self.min
    }

    /// The most threads.
    pub fn max(&self) -> usize {
        self.max
    }

    /// Whether the size can change.
    pub fn is_fixed(&self) -> bool {
        self.min == self.max
    }

    fn clamp(&self, n: usize) -> usize {
        n.clamp(self.min, self.max)
    }
}

impl From<usize> for ThreadRange {
    fn from(n: usize) -> Self {
        ThreadRange::new(n, n)
    }
}

impl From<RangeInclusive<usize>> for ThreadRange {
    fn from(range: RangeInclusive<usize>) -> Self {
        ThreadRange::new(*range.start(), *range.end())
    }
}

/// The time for idle stamps and statistics: the shared coarse clock (one load; spells shorter
/// than its 1 ms tick are measured as 0 or 1 tick, right on average).
#[inline]
pub(crate) fn now() -> Duration {
    Duration::from_nanos(shared_clock().nanos())
}

/// One place in the pool: an index and the statistics of the workers that held it.
pub(crate) struct Slot {
    occupied: AtomicBool,
    pub(crate) stats: SlotStats,
    /// What the slot's worker is running now.
    pub(crate) probe: TurnProbe,
}

pub(crate) struct Pool {
    pub(crate) range: ThreadRange,
    target: AtomicUsize,
    live: AtomicUsize,
    pub(crate) slots: RwLock<Vec<Arc<Slot>>>,
    handles: Mutex<Vec<JoinHandle<()>>>,
}

impl Pool {
    pub(crate) fn new(range: ThreadRange, initial: usize) -> Self {
        Pool {
            range,
            target: AtomicUsize::new(range.clamp(initial)),
            live: AtomicUsize::new(0),
            slots: RwLock::new(Vec::new()),
            handles: Mutex::new(Vec::new()),
        }
    }

    /// Threads running now.
    pub(crate) fn live(&self) -> usize {
        self.live.load(Acquire)
    }

    pub(crate) fn target(&self) -> usize {
        self.target.load(Relaxed)
    }

    /// Whether a worker should retire now; if so, it is counted out and must exit.
    #[inline]
    pub(crate) fn try_retire(&self) -> bool {
        let mut live = self.live.load(Relaxed);
        while live > self.target.load(Relaxed) {
            match self
                .live
                .compare_exchange_weak(live, live - 1, AcqRel, Relaxed)
            {
                Ok(_) => return true,
                Err(now) => live = now,
            }
        }
        false
    }

    /// A retired worker gives its slot back.
    pub(crate) fn vacate(&self, index: usize) {
        if let Some(slot) = self.slots.read().get(index) {
            slot.stats.idle_since.store(0, Relaxed);
            slot.occupied.store(false, Relaxed);
        }
    }

    /// Takes a free slot (or makes one).
    fn occupy(&self) -> (usize, Arc<Slot>) {
        let mut slots = self.slots.write();
        if let Some(i) = slots.iter().position(|s| !s.occupied.load(Relaxed)) {
            slots[i].occupied.store(true, Relaxed);
            return (i, Arc::clone(&slots[i]));
        }
        let slot = Arc::new(Slot {
            occupied: AtomicBool::new(true),
            stats: SlotStats::new(),
            probe: TurnProbe::default(),
        });
        slots.push(Arc::clone(&slot));
        (slots.len() - 1, slot)
    }

    /// A group on shared workers: `workers` slots, one per shared worker (what each runs of
    /// this group, and its statistics), every one idle from now.
    pub(crate) fn shared_slots(&self, workers: usize) -> Vec<Arc<Slot>> {
        let since = now().as_nanos() as u64 + 1;
        (0..workers)
            .map(|_| {
                let (_, slot) = self.occupy();
                slot.stats.idle_since.store(since, Relaxed);
                slot
            })
            .collect()
    }

    /// A group on shared workers: sets its concurrency limit (clamped to the range), which
    /// is both its target and its live count, as no thread is started or retired. Returns
    /// the limit.
    pub(crate) fn set_limit(&self, limit: usize) -> usize {
        let limit = self.range.clamp(limit);
        self.target.store(limit, Relaxed);
        self.live.store(limit, Relaxed);
        limit
    }

    /// The slot whose statistics a stepped runtime's turns record into: the first.
    pub(crate) fn stepping_slot(&self) -> Arc<Slot> {
        if let Some(slot) = self.slots.read().first() {
            return Arc::clone(slot);
        }
        self.occupy().1
    }

    /// Join handles of every worker started and not yet collected.
    pub(crate) fn take_handles(&self) -> Vec<JoinHandle<()>> {
        std::mem::take(&mut *self.handles.lock())
    }

    /// Moves the pool toward `threads` (clamped to the range): starts the missing workers now
    /// with `start` (given a slot's index and the slot; it returns the thread, or the error
    /// that kept it from starting, having undone its own part), or lets the surplus retire.
    /// Stops starting when `stopped` says the group stopped. Returns the new target.
    pub(crate) fn resize(
        &self,
        threads: usize,
        stopped: impl Fn() -> bool,
        mut start: impl FnMut(usize, Arc<Slot>) -> std::io::Result<JoinHandle<()>>,
    ) -> usize {
        let target = self.range.clamp(threads);
        // One resize at a time, so two cannot both start the missing workers.
        let mut handles = self.handles.lock();
        self.target.store(target, Relaxed);
        handles.retain(|h| !h.is_finished());
        while self.live() < target && !stopped() {
            let (index, slot) = self.occupy();
            self.live.fetch_add(1, AcqRel);
            match start(index, slot) {
                Ok(handle) => handles.push(handle),
                Err(e) => {
                    tracing::error!("cannot start a worker: {e}");
                    self.live.fetch_sub(1, AcqRel);
                    self.vacate(index);
                    break;
                }
            }
        }
        target
    }
}

/// Worker threads of a group whose builder does not say: the machine's cores.
pub(crate) fn default_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
}
