//! Timers: `post_after` and `post_every`, driven by one thread per runtime that sleeps until
//! the earliest deadline. Started on first use.
//!
//! A cancelled timer stays in the heap until its deadline would have come, where the thread
//! skips it. So that cancelled entries cannot pile up (a loop of `timeout(1 h, ask(..))` whose
//! asks answer at once cancels a one-hour timer per iteration), cancellations are counted, and
//! every [`SWEEP_MIN`]th one looks at the heap: if cancellations since the last sweep outnumber
//! half of it, the canceller sweeps them out. Each entry is swept at most once and the heap is
//! looked at once per `SWEEP_MIN` cancellations, so both cost O(1) per cancellation, amortised.

use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

/// Fires the timer; returns `false` when its target is gone and it should not repeat.
type Action = Box<dyn FnMut() -> bool + Send>;

struct Entry {
    due: Instant,
    seq: u64,
    period: Option<Duration>,
    cancelled: Arc<AtomicBool>,
    action: Action,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == CmpOrdering::Equal
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    // Reversed: `BinaryHeap` is a max-heap and we want the earliest deadline on top.
    fn cmp(&self, other: &Self) -> CmpOrdering {
        (other.due, other.seq).cmp(&(self.due, self.seq))
    }
}

#[derive(Default)]
struct State {
    heap: BinaryHeap<Entry>,
    next_seq: u64,
    stopped: bool,
}

/// Cancellations between two looks at the heap (see the module docs).
pub(crate) const SWEEP_MIN: usize = 1024;

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    condvar: Condvar,
    /// Cancellations since the last sweep (an upper bound on the cancelled entries in the
    /// heap: a timer cancelled after it fired is counted too).
    cancellations: AtomicUsize,
}

impl Shared {
    fn cancelled_one(&self) {
        let n = self.cancellations.fetch_add(1, Ordering::Relaxed) + 1;
        if !n.is_multiple_of(SWEEP_MIN) {
            return;
        }
        let mut state = self.state.lock();
        if n > state.heap.len() / 2 {
            self.cancellations.store(0, Ordering::Relaxed);
            state.heap.retain(|e| !e.cancelled.load(Ordering::Acquire));
            // Give back the room a burst of timers needed (a reconnect storm arms and cancels
            // one per connection), keeping twice what is left.
            let keep = (state.heap.len() * 2).max(SWEEP_MIN);
            if state.heap.capacity() > 2 * keep {
                state.heap.shrink_to(keep);
            }
        }
    }
}

/// A handle to cancel a timer. Dropping it does not cancel.
#[derive(Clone)]
pub struct TimerHandle {
    cancelled: Arc<AtomicBool>,
    /// The timers it belongs to, told of the cancellation; `None` for a timer refused because
    /// its runtime had stopped.
    shared: Option<std::sync::Weak<Shared>>,
}

impl std::fmt::Debug for TimerHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TimerHandle")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

impl TimerHandle {
    /// Stops the timer; a message not yet posted will not be.
    pub fn cancel(&self) {
        if !self.cancelled.swap(true, Ordering::AcqRel) {
            if let Some(shared) = self.shared.as_ref().and_then(std::sync::Weak::upgrade) {
                shared.cancelled_one();
            }
        }
    }

    /// Whether `cancel` was called.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
    }
}

pub(crate) struct Timers {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Timers {
    pub(crate) fn new() -> Self {
        Timers {
            shared: Arc::default(),
            thread: Mutex::new(None),
        }
    }

    pub(crate) fn schedule(
        &self,
        delay: Duration,
        period: Option<Duration>,
        action: impl FnMut() -> bool + Send + 'static,
    ) -> TimerHandle {
        let cancelled = Arc::new(AtomicBool::new(false));
        // Whether the new timer is now the earliest: only then must the thread wake to wait for
        // it. A later one (an ask's 5 s timeout behind others) is found when the thread wakes
        // for the earliest, so arming it costs no wake-up and no context switch.
        let earliest = {
            let mut state = self.shared.state.lock();
            if state.stopped {
                cancelled.store(true, Ordering::Release);
                return TimerHandle {
                    cancelled,
                    shared: None,
                };
            }
            let seq = state.next_seq;
            state.next_seq += 1;
            state.heap.push(Entry {
                due: Instant::now() + delay,
                seq,
                period,
                cancelled: Arc::clone(&cancelled),
                action: Box::new(action),
            });
            state.heap.peek().is_some_and(|top| top.seq == seq)
        };
        self.ensure_thread();
        if earliest {
            self.shared.condvar.notify_one();
        }
        TimerHandle {
            cancelled,
            shared: Some(Arc::downgrade(&self.shared)),
        }
    }

    /// Entries in the heap, cancelled ones not yet swept included.
    #[cfg(test)]
    pub(crate) fn pending(&self) -> usize {
        self.shared.state.lock().heap.len()
    }

    fn ensure_thread(&self) {
        let mut thread = self.thread.lock();
        if thread.is_none() {
            let shared = Arc::clone(&self.shared);
            let spawned = std::thread::Builder::new()
                .name("whirl-timers".into())
                .spawn(move || run(&shared));
            match spawned {
                Ok(handle) => *thread = Some(handle),
                Err(e) => tracing::error!("cannot start the timer thread: {e}"),
            }
        }
    }

    /// Cancels every pending timer and joins the thread.
    pub(crate) fn stop(&self) {
        {
            let mut state = self.shared.state.lock();
            state.stopped = true;
            state.heap.clear();
        }
        self.shared.condvar.notify_all();
        if let Some(handle) = self.thread.lock().take() {
            let _ = handle.join();
        }
    }
}

fn run(shared: &Shared) {
    let mut state = shared.state.lock();
    loop {
        if state.stopped {
            return;
        }
        let now = Instant::now();
        match state.heap.peek().map(|e| e.due) {
            None => shared.condvar.wait(&mut state),
            Some(due) if due > now => {
                shared.condvar.wait_until(&mut state, due);
            }
            Some(_) => {
                let Some(mut entry) = state.heap.pop() else {
                    continue;
                };
                if entry.cancelled.load(Ordering::Acquire) {
                    continue;
                }
                // Fire without holding the lock: posting may run a dead-letter sink.
                drop(state);
                let alive = (entry.action)();
                state = shared.state.lock();
                if let (true, Some(period)) = (alive, entry.period) {
                    entry.due += period;
                    if entry.due < now {
                        entry.due = now + period;
                    }
                    state.heap.push(entry);
                }
            }
        }
    }
}

// SAFETY: a capability on one timer of the runtime: its only operation is `cancel`, a one-way
// flag the runtime's timer thread reads (and a count that may make the canceller sweep the
// runtime's timer heap, under its lock); it exposes no process's state, like an address
// (invariant I8).
#[diagnostic::do_not_recommend]
unsafe impl crate::isolation::Isolated for TimerHandle {}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{Timers, SWEEP_MIN};

    #[test]
    fn cancelled_timers_do_not_pile_up() {
        let timers = Timers::new();
        let hour = Duration::from_secs(3600);
        // A live timer that stays: sweeps must keep it.
        let kept = timers.schedule(hour, None, || false);
        for _ in 0..20 * SWEEP_MIN {
            timers.schedule(hour, None, || false).cancel();
        }
        assert!(
            timers.pending() <= SWEEP_MIN + 1,
            "{} entries left after cancelling {} one-hour timers",
            timers.pending(),
            20 * SWEEP_MIN
        );
        assert!(!kept.is_cancelled());
        kept.cancel();
        kept.cancel(); // a second cancel counts nothing
        timers.stop();
    }

    #[test]
    fn a_sweep_keeps_live_timers_firing() {
        let timers = Timers::new();
        let (tx, rx) = std::sync::mpsc::channel();
        let live = timers.schedule(Duration::from_millis(50), None, move || {
            let _ = tx.send(());
            false
        });
        for _ in 0..4 * SWEEP_MIN {
            timers
                .schedule(Duration::from_secs(3600), None, || false)
                .cancel();
        }
        assert!(rx.recv_timeout(Duration::from_secs(20)).is_ok());
        assert!(!live.is_cancelled());
        timers.stop();
    }
}
