//! Message accounting, cheap enough to leave on.
//!
//! Every group counts what happens to the messages posted to its processes. Posts come from
//! any thread, so a single shared counter would bounce one cache line between cores on every
//! message; instead each group keeps a few cache-padded *stripes* and each thread adds to its
//! own. Reading sums the stripes.
//!
//! The identity that holds at every quiescent point (invariant I3):
//! `posted = handled + rejected + dead_lettered + moved + queued` (`moved`: messages handed
//! over with their process by `Addr::hand_over`, to be posted again elsewhere).

use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicBool, AtomicU64};

use crossbeam_utils::CachePadded;

const STRIPES: usize = 8;

#[derive(Default)]
struct Stripe {
    posted: AtomicU64,
    handled: AtomicU64,
    rejected: AtomicU64,
    dead_lettered: AtomicU64,
    moved: AtomicU64,
    activations: AtomicU64,
    deactivations: AtomicU64,
    spawned: AtomicU64,
    terminated: AtomicU64,
}

/// Which counter to bump.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Event {
    Posted,
    Handled,
    Rejected,
    DeadLettered,
    /// Handed over with its process (`Addr::hand_over`).
    Moved,
    /// A run without a message was requested: a process's start hook, a kill request.
    Activated,
    /// Such a run happened.
    Deactivated,
    Spawned,
    Terminated,
}

/// Stripes `0..OWNED` are each held by at most one thread at a time, which then updates them
/// with a plain load and store; threads that find none free share the last stripe and update it
/// with read-modify-writes. Why: a locked add per post waits for the thread's earlier stores
/// to leave its store buffer, and on the post path those are the previous message's slot
/// writes, whose cache line the receiving worker is reading: profiled on the counting
/// workload, the posted counter's `lock add` carried 83% of `deliver`'s samples.
const OWNED: usize = STRIPES - 1;

/// Which owned stripes are held (see [`OWNED`]), for all groups at once: a thread holding
/// index `i` is the only writer of stripe `i` of every group.
static HELD: [AtomicBool; OWNED] = [const { AtomicBool::new(false) }; OWNED];

/// A thread's stripe: an owned one while the thread lives (given back when it exits), or the
/// shared one.
struct Claim {
    index: usize,
}

impl Claim {
    fn take() -> Claim {
        let free = (0..OWNED).find(|&i| {
            HELD[i]
                .compare_exchange(false, true, Acquire, Relaxed)
                .is_ok()
        });
        Claim {
            index: free.unwrap_or(OWNED),
        }
    }

    fn owned(&self) -> bool {
        self.index < OWNED
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if self.owned() {
            // Release: this thread's last updates to the stripe happen before the next
            // holder's first.
            HELD[self.index].store(false, Release);
        }
    }
}

thread_local! {
    static CLAIM: Claim = Claim::take();
}

/// This thread's stripe, and whether the thread is its only writer. A thread whose
/// thread-locals are being torn down shares the last stripe.
#[inline]
fn my_stripe() -> (usize, bool) {
    CLAIM
        .try_with(|claim| (claim.index, claim.owned()))
        .unwrap_or((OWNED, false))
}

/// Adds `n` (wrapping) to a counter of this thread's stripe.
#[inline]
fn bump(counter: &AtomicU64, owned: bool, n: u64) {
    if owned {
        // The only writer: a load and a store keep every update, without a locked
        // instruction.
        counter.store(counter.load(Relaxed).wrapping_add(n), Relaxed);
    } else {
        counter.fetch_add(n, Relaxed);
    }
}

/// A group's counters.
pub(crate) struct Counters {
    stripes: [CachePadded<Stripe>; STRIPES],
}

impl Counters {
    pub(crate) fn new() -> Self {
        Counters {
            stripes: std::array::from_fn(|_| CachePadded::new(Stripe::default())),
        }
    }

    #[inline]
    pub(crate) fn add(&self, event: Event, n: u64) {
        let (stripe, owned) = my_stripe();
        let s = &self.stripes[stripe];
        let counter = match event {
            Event::Posted => &s.posted,
            Event::Handled => &s.handled,
            Event::Rejected => &s.rejected,
            Event::DeadLettered => &s.dead_lettered,
            Event::Moved => &s.moved,
            Event::Activated => &s.activations,
            Event::Deactivated => &s.deactivations,
            Event::Spawned => &s.spawned,
            Event::Terminated => &s.terminated,
        };
        bump(counter, owned, n);
    }

    /// Takes back `n` messages counted as moved that were dead-lettered instead (added to
    /// `dead_lettered` first, so a reader never sees them missing).
    pub(crate) fn sub_moved(&self, n: u64) {
        let (stripe, owned) = my_stripe();
        bump(&self.stripes[stripe].moved, owned, n.wrapping_neg());
    }

    fn sum(&self, f: fn(&Stripe) -> &AtomicU64) -> u64 {
        // Wrapping: a stripe's `moved` may go below zero (a message moved on one thread and
        // taken back on another); the sum over the stripes never does.
        self.stripes
            .iter()
            .fold(0u64, |sum, s| sum.wrapping_add(f(s).load(Relaxed)))
    }

    /// The counters of events that end something. Read these *before* [`Counters::read_started`]:
    /// every end event happens after its start event, so a pair of readings with
    /// `done == started` proves the group was quiescent at some instant in between.
    pub(crate) fn read_done(&self) -> DoneCounts {
        DoneCounts {
            handled: self.sum(|s| &s.handled),
            rejected: self.sum(|s| &s.rejected),
            dead_lettered: self.sum(|s| &s.dead_lettered),
            moved: self.sum(|s| &s.moved),
            deactivations: self.sum(|s| &s.deactivations),
            terminated: self.sum(|s| &s.terminated),
        }
    }

    pub(crate) fn read_started(&self) -> StartedCounts {
        StartedCounts {
            posted: self.sum(|s| &s.posted),
            activations: self.sum(|s| &s.activations),
            spawned: self.sum(|s| &s.spawned),
        }
    }

    /// `posted - handled - rejected - dead_lettered`, summed in one pass without a fence: a
    /// cheap, possibly slightly stale, queue length for admission thresholds.
    pub(crate) fn queued_estimate(&self) -> u64 {
        let (mut posted, mut done) = (0u64, 0u64);
        for s in &self.stripes {
            done = done
                .wrapping_add(s.handled.load(Relaxed))
                .wrapping_add(s.rejected.load(Relaxed))
                .wrapping_add(s.dead_lettered.load(Relaxed))
                .wrapping_add(s.moved.load(Relaxed));
            posted = posted.wrapping_add(s.posted.load(Relaxed));
        }
        posted.saturating_sub(done)
    }

    pub(crate) fn snapshot(&self) -> MessageCounts {
        let done = self.read_done();
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        let started = self.read_started();
        MessageCounts {
            posted: started.posted,
            handled: done.handled,
            rejected: done.rejected,
            dead_lettered: done.dead_lettered,
            moved: done.moved,
            spawned: started.spawned,
            terminated: done.terminated,
            pending_lifecycle_runs: started.activations.saturating_sub(done.deactivations),
        }
    }
}

pub(crate) struct DoneCounts {
    handled: u64,
    rejected: u64,
    dead_lettered: u64,
    moved: u64,
    deactivations: u64,
    terminated: u64,
}

pub(crate) struct StartedCounts {
    posted: u64,
    activations: u64,
    spawned: u64,
}

impl StartedCounts {
    pub(crate) fn is_quiescent_with(&self, done: &DoneCounts) -> bool {
        let _ = done.terminated;
        self.posted == done.handled + done.rejected + done.dead_lettered + done.moved
            && self.activations == done.deactivations
    }
}

/// A reading of message and process counters, for a group or the whole runtime.
///
/// At a quiescent point, `posted == handled + rejected + dead_lettered + moved + queued()`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct MessageCounts {
    /// Messages that passed the liveness check and were offered to a process (admitted or
    /// rejected by the group's predicate). Posts to already-terminated processes are not
    /// counted: they never entered the system and went straight back to the sender.
    pub posted: u64,
    /// Messages a handler finished with (successfully, with an error, or by panicking).
    pub handled: u64,
    /// Messages the group's predicate returned to their senders.
    pub rejected: u64,
    /// Messages left in the inbox of a terminated process, given to the dead-letter sink.
    pub dead_lettered: u64,
    /// Messages handed over with their process ([`Addr::hand_over`](crate::Addr::hand_over))
    /// to be posted again elsewhere (another node, after a migration).
    pub moved: u64,
    /// Processes spawned.
    pub spawned: u64,
    /// Processes terminated.
    pub terminated: u64,
    /// Start hooks and kill requests not yet carried out at the moment of reading (runs a
    /// process makes without a message; runs for messages show in [`MessageCounts::queued`]).
    pub pending_lifecycle_runs: u64,
}

impl MessageCounts {
    /// Messages still waiting in inboxes (or being handled) at the moment of reading.
    pub fn queued(&self) -> u64 {
        self.posted
            .saturating_sub(self.handled + self.rejected + self.dead_lettered + self.moved)
    }

    /// Processes alive at the moment of reading.
    pub fn live_processes(&self) -> u64 {
        self.spawned.saturating_sub(self.terminated)
    }

    /// Whether nothing is queued or being handled and no start hook or kill is pending.
    pub fn is_quiescent(&self) -> bool {
        self.queued() == 0 && self.pending_lifecycle_runs == 0
    }
}

/// Sums readings, e.g. of several groups.
impl std::ops::Add for MessageCounts {
    type Output = MessageCounts;

    fn add(self, other: MessageCounts) -> MessageCounts {
        MessageCounts {
            posted: self.posted + other.posted,
            handled: self.handled + other.handled,
            rejected: self.rejected + other.rejected,
            dead_lettered: self.dead_lettered + other.dead_lettered,
            moved: self.moved + other.moved,
            spawned: self.spawned + other.spawned,
            terminated: self.terminated + other.terminated,
            pending_lifecycle_runs: self.pending_lifecycle_runs + other.pending_lifecycle_runs,
        }
    }
}

impl std::iter::Sum for MessageCounts {
    fn sum<I: Iterator<Item = MessageCounts>>(iter: I) -> MessageCounts {
        iter.fold(MessageCounts::default(), |a, b| a + b)
    }
}

// SAFETY: a snapshot of numbers (invariant I8).
#[diagnostic::do_not_recommend]
unsafe impl crate::isolation::Isolated for MessageCounts {}
