//! Timers: `post_after` and `post_every`, driven by one thread per runtime that sleeps until
//! the earliest deadline. Started on first use.

use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, Ordering};
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

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    condvar: Condvar,
}

/// A handle to cancel a timer. Dropping it does not cancel.
#[derive(Clone, Debug)]
pub struct TimerHandle {
    cancelled: Arc<AtomicBool>,
}

impl TimerHandle {
    /// Stops the timer; a message not yet posted will not be.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Release);
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
        {
            let mut state = self.shared.state.lock();
            if state.stopped {
                cancelled.store(true, Ordering::Release);
                return TimerHandle { cancelled };
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
        }
        self.ensure_thread();
        self.shared.condvar.notify_one();
        TimerHandle { cancelled }
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
// flag the runtime's timer thread reads; it exposes no process's state, like an address
// (invariant I8).
#[diagnostic::do_not_recommend]
unsafe impl crate::isolation::Isolated for TimerHandle {}
