//! Which workers of a group sleep, and whom to wake when work arrives.
//!
//! The design follows what tokio's scheduler learned: waking a worker costs a system call, so
//! a post wakes one only when no worker is already *searching* for work (a searching worker
//! will find the new task). The protocol has two halves that together rule out lost
//! wake-ups:
//!
//! * **Notifier** (after pushing a task to a shared queue): a `SeqCst` fence, then read the
//!   state word; if nobody is searching and somebody sleeps, pop a sleeper, count it as
//!   searching, and unpark it.
//! * **Worker going to sleep**: register as sleeping (and stop searching) in the state word,
//!   a `SeqCst` fence, then look at every queue once more. If work shows up, un-register and
//!   search again; otherwise park.
//!
//! Either the notifier's read sees the sleeper (and wakes someone), or the sleeper's re-check
//! sees the task. A searcher that finds work and was the last searcher wakes one more worker,
//! because notifications were suppressed while it searched. `tests/loom_idle.rs` explores all
//! interleavings.

use std::sync::atomic::Ordering::SeqCst;

use super::park::Unparker;
use crate::sync::{fence, lock, AtomicUsize, Mutex};

const SEARCHING_ONE: usize = 1;
const SLEEPING_ONE: usize = 1 << 16;
const SEARCHING_MASK: usize = SLEEPING_ONE - 1;

pub(crate) struct Idle {
    /// Low 16 bits: searching workers. The rest: sleeping workers.
    state: AtomicUsize,
    sleepers: Mutex<Vec<usize>>,
    unparkers: Mutex<Vec<Option<Unparker>>>,
}

/// How a worker that tried to sleep left [`Idle::prepare_to_sleep`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum SleepDecision {
    /// Work appeared during the re-check: the worker is searching again.
    Search,
    /// The worker is registered as sleeping and must park.
    Park,
}

impl Idle {
    pub(crate) fn new() -> Self {
        Idle {
            state: AtomicUsize::new(0),
            sleepers: Mutex::new(Vec::new()),
            unparkers: Mutex::new(Vec::new()),
        }
    }

    /// Registers a worker's waking handle under `index`.
    pub(crate) fn register(&self, index: usize, unparker: Unparker) {
        let mut all = lock(&self.unparkers);
        if all.len() <= index {
            all.resize(index + 1, None);
        }
        all[index] = Some(unparker);
    }

    /// Called after new work was pushed to a queue other workers can see.
    pub(crate) fn notify_one(&self) {
        fence(SeqCst);
        let state = self.state.load(SeqCst);
        if state & SEARCHING_MASK != 0 || state < SLEEPING_ONE {
            return;
        }
        self.wake_one();
    }

    fn wake_one(&self) {
        let woken = {
            let mut sleepers = lock(&self.sleepers);
            let state = self.state.load(SeqCst);
            if state & SEARCHING_MASK != 0 {
                return;
            }
            match sleepers.pop() {
                Some(index) => {
                    // The woken worker starts out searching.
                    self.state.fetch_sub(SLEEPING_ONE - SEARCHING_ONE, SeqCst);
                    index
                }
                None => return,
            }
        };
        if let Some(Some(u)) = lock(&self.unparkers).get(woken) {
            u.unpark();
        }
    }

    /// Wakes every sleeper (shutdown, resize).
    pub(crate) fn notify_all(&self) {
        let woken: Vec<usize> = {
            let mut sleepers = lock(&self.sleepers);
            let n = sleepers.len();
            self.state
                .fetch_sub(n * (SLEEPING_ONE - SEARCHING_ONE), SeqCst);
            sleepers.drain(..).collect()
        };
        let unparkers = lock(&self.unparkers);
        for index in woken {
            if let Some(Some(u)) = unparkers.get(index) {
                u.unpark();
            }
        }
    }

    /// A worker with nothing local starts looking elsewhere.
    pub(crate) fn start_searching(&self) {
        self.state.fetch_add(SEARCHING_ONE, SeqCst);
    }

    /// A searching worker found work. If it was the last searcher, another worker is woken:
    /// posts were not waking anyone while it searched, and there may be more work.
    pub(crate) fn stop_searching_found_work(&self) {
        let prev = self.state.fetch_sub(SEARCHING_ONE, SeqCst);
        if prev & SEARCHING_MASK == 1 {
            self.notify_one();
        }
    }

    /// A searching worker leaves the pool. If it was the last searcher, another worker is
    /// woken, as in [`Idle::stop_searching_found_work`].
    pub(crate) fn stop_searching_retired(&self) {
        self.stop_searching_found_work();
    }

    /// A searching worker found nothing: register it as sleeping, then re-check with
    /// `has_work`. The caller parks only on [`SleepDecision::Park`].
    pub(crate) fn prepare_to_sleep(
        &self,
        index: usize,
        has_work: impl Fn() -> bool,
    ) -> SleepDecision {
        {
            let mut sleepers = lock(&self.sleepers);
            sleepers.push(index);
            self.state.fetch_add(SLEEPING_ONE - SEARCHING_ONE, SeqCst);
        }
        fence(SeqCst);
        if !has_work() {
            return SleepDecision::Park;
        }
        // Either we take ourselves off the list, or a notifier already did (and counted us
        // as searching); its unpark then leaves a token that only makes a later park return
        // early, which the worker treats as a spurious wake-up. Searching, either way.
        self.unregister(index);
        SleepDecision::Search
    }

    /// Takes `index` off the sleeper list if it is still there, making it a searcher again.
    pub(crate) fn unregister(&self, index: usize) -> bool {
        let mut sleepers = lock(&self.sleepers);
        match sleepers.iter().position(|&i| i == index) {
            Some(pos) => {
                sleepers.swap_remove(pos);
                self.state.fetch_sub(SLEEPING_ONE - SEARCHING_ONE, SeqCst);
                true
            }
            None => false,
        }
    }

    /// Puts sleeping worker `index` last in line to be woken: it sleeps in the I/O poll
    /// (`workers.rs`), which it would leave unwatched, and events wake it anyway.
    #[cfg(feature = "net")]
    pub(crate) fn wake_last(&self, index: usize) {
        let mut sleepers = lock(&self.sleepers);
        if let Some(pos) = sleepers.iter().position(|&i| i == index) {
            let me = sleepers.remove(pos);
            sleepers.insert(0, me);
        }
    }

    /// After a park returned: whether the worker is still on the sleeper list (a spurious or
    /// timed-out wake-up) rather than woken by a notifier.
    pub(crate) fn is_sleeping(&self, index: usize) -> bool {
        lock(&self.sleepers).contains(&index)
    }
}
