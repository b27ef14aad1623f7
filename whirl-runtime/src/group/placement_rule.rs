//! A group's automatic-grouping rule and the slow turns it has counted: the state the
//! slow-turn watchdog feeds. `placement.rs` sets the rule and moves the processes it picks;
//! this module only counts, so that the group's state (`shared.rs`) can hold it without
//! reaching the group builder. `T` is the target group (an `Arc<GroupShared>`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::lifecycle::ProcessId;

/// Processes remembered per group before the oldest are forgotten (bounds the memory a group
/// of many occasionally slow processes costs).
const MAX_WATCHED: usize = 4096;

/// A group's rule, if it has one, and the processes it has moved.
pub(crate) struct Placement<T> {
    state: Mutex<Option<Watching<T>>>,
    moved: AtomicU64,
}

struct Watching<T> {
    to: T,
    slow_turns: u32,
    window: Duration,
    /// Slow turns seen per process within the window: (count, first seen).
    seen: HashMap<ProcessId, (u32, Instant)>,
}

impl<T> Default for Placement<T> {
    fn default() -> Self {
        Placement {
            state: Mutex::new(None),
            moved: AtomicU64::new(0),
        }
    }
}

impl<T: Clone> Placement<T> {
    /// Sets the rule (forgetting what an earlier one saw): `slow_turns` slow turns within
    /// `window` move a process to `to`.
    pub(crate) fn watch(&self, to: T, slow_turns: u32, window: Duration) {
        *self.state.lock() = Some(Watching {
            to,
            slow_turns,
            window,
            seen: HashMap::new(),
        });
    }

    /// Removes the rule.
    pub(crate) fn clear(&self) {
        *self.state.lock() = None;
    }

    /// Counts a slow turn of `process` at `now`; the group it must move to if that makes
    /// enough within the window (and then forgets it).
    pub(crate) fn slow_turn(&self, process: ProcessId, now: Instant) -> Option<T> {
        let mut state = self.state.lock();
        let watching = state.as_mut()?;
        let window = watching.window;
        let entry = watching.seen.entry(process).or_insert((0, now));
        if now.duration_since(entry.1) > window {
            *entry = (0, now);
        }
        entry.0 += 1;
        if entry.0 < watching.slow_turns {
            if watching.seen.len() > MAX_WATCHED {
                watching
                    .seen
                    .retain(|_, (_, first)| now.duration_since(*first) <= window);
            }
            return None;
        }
        watching.seen.remove(&process);
        Some(watching.to.clone())
    }

    /// A process the rule picked has been asked to move.
    pub(crate) fn count_move(&self) {
        self.moved.fetch_add(1, Ordering::Relaxed);
    }

    /// Processes this group's rule has moved so far.
    pub(crate) fn moved(&self) -> u64 {
        self.moved.load(Ordering::Relaxed)
    }

    /// Slow turns counted for `process` in the current window (for tests).
    #[cfg(test)]
    pub(crate) fn seen(&self, process: ProcessId) -> Option<u32> {
        self.state
            .lock()
            .as_ref()
            .and_then(|w| w.seen.get(&process).map(|(n, _)| *n))
    }
}
