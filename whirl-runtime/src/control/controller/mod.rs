//! Concurrency controllers: what sizes a group's worker pool (and run budget) while it runs.
//!
//! A group built with a thread range ([`GroupBuilder::threads`](crate::GroupBuilder::threads)
//! given `min..=max`) and a controller is sampled by the runtime's controller thread every
//! [`period`](ConcurrencyController::period); the controller answers with an [`Adjustment`],
//! which the runtime applies: new workers start at once, surplus workers retire when they are
//! next idle (never in the middle of a turn). A group on the shared workers, built with a
//! range of [`concurrency`](crate::GroupBuilder::concurrency), is controlled the same way: its
//! "threads" are its concurrency limit, raising it lets more shared workers run its turns at
//! once, and its idle time is its unused capacity under that limit.
//!
//! The library:
//!
//! * [`FixedConcurrency`]: keeps the pool where it is.
//! * [`AdaptiveConcurrency`]: the Whirlwind default (the paper's figure 1): idle time, queue
//!   latency and lock latency.
//! * [`SedaThreadPool`]: SEDA's thread-pool controller (queue threshold, idle removal,
//!   throughput-peak thrashing detection with a random drop).
//! * [`SedaBatching`]: SEDA's batching controller, for the run budget.
//!
//! # Controllers do not fight
//!
//! * A thread controller owns the thread count, a batching controller owns the budget: a
//!   group may have one of each, and each changes only what it owns.
//! * Admission control waits for the pool: in a group with both a controller that can still
//!   add threads and a [`MessagePredicate`](crate::admission::MessagePredicate), the
//!   predicate is not consulted (every message is admitted) until the pool has reached its
//!   maximum, as SEDA suggests — adding a thread is a cheaper answer to load than refusing
//!   work. Once at the maximum, the predicate decides; when the pool shrinks again, it stands
//!   down.

use std::fmt;
use std::time::Duration;

mod adaptive;
mod fixed;
mod seda_batching;
mod seda_pool;

pub use adaptive::AdaptiveConcurrency;
pub use fixed::FixedConcurrency;
pub use seda_batching::SedaBatching;
pub use seda_pool::SedaThreadPool;

/// What a controller sees of its group at the end of a sampling period.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct GroupSample {
    /// How long the period was.
    pub interval: Duration,
    /// Worker threads now (on shared workers: the concurrency limit).
    pub threads: usize,
    /// The least and most threads (or limit) the group may have.
    pub min_threads: usize,
    /// See `min_threads`.
    pub max_threads: usize,
    /// The run budget now (messages per turn).
    pub budget: usize,
    /// Messages queued (posted, not yet handled, rejected or dead-lettered) now.
    pub queue_length: u64,
    /// Messages handled during the period.
    pub handled: u64,
    /// Time the group's workers spent waiting for a process to run (searching or parked),
    /// summed over the workers, during the period.
    pub idle_time: Duration,
    /// The longest time any current worker has been continuously idle, now.
    pub longest_idle: Duration,
    /// Mean time a message handled during the period spent queued (1 ms resolution; zero if
    /// nothing was measured).
    pub queue_latency: Duration,
    /// Mean time handlers reported waiting for locks during the period (see
    /// [`Ctx::lock_timed`](crate::Ctx::lock_timed)); zero if none was reported.
    pub lock_latency: Duration,
    /// Workers whose current turn has held them longer than the group's slow-turn threshold
    /// ([`GroupBuilder::slow_turn_threshold`](crate::GroupBuilder::slow_turn_threshold)), now:
    /// threads the group has but cannot use until their handlers return. Zero when the group
    /// does not watch for slow turns.
    pub blocked_workers: usize,
}

impl GroupSample {
    /// Messages handled per second during the period.
    pub fn throughput(&self) -> f64 {
        let secs = self.interval.as_secs_f64();
        if secs > 0.0 {
            self.handled as f64 / secs
        } else {
            0.0
        }
    }

    /// The fraction of the workers' time spent idle during the period, in `0.0..=1.0`.
    pub fn idle_fraction(&self) -> f64 {
        let capacity = self.interval.as_secs_f64() * self.threads as f64;
        if capacity > 0.0 {
            (self.idle_time.as_secs_f64() / capacity).clamp(0.0, 1.0)
        } else {
            0.0
        }
    }
}

/// What a controller wants changed. `None` leaves a setting alone; thread counts are clamped
/// to the group's range and budgets to at least 1 by the runtime.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Adjustment {
    /// The new number of worker threads.
    pub threads: Option<usize>,
    /// The new run budget.
    pub budget: Option<usize>,
}

impl Adjustment {
    /// Change nothing.
    pub const NONE: Adjustment = Adjustment {
        threads: None,
        budget: None,
    };

    /// Set the thread count.
    pub fn threads(threads: usize) -> Self {
        Adjustment {
            threads: Some(threads),
            budget: None,
        }
    }

    /// Set the run budget.
    pub fn budget(budget: usize) -> Self {
        Adjustment {
            threads: None,
            budget: Some(budget),
        }
    }
}

/// What a controller owns: see "Controllers do not fight" in the [module docs](crate::control).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Controls {
    /// The worker thread count of a group with threads of its own; for a group on the shared
    /// workers, its concurrency limit (how many of them may run it at once).
    Threads,
    /// The run budget.
    Budget,
}

/// Sizes a group while it runs. See the [module docs](crate::control).
///
/// `adjust` runs on the runtime's controller thread, one call per period, never concurrently
/// with itself; it may keep state in `self`. `Send + 'static`, not
/// [`Isolated`](crate::Isolated): a controller belongs to the runtime, not to a process, and
/// may share state with whoever observes it.
pub trait ConcurrencyController: Send + 'static {
    /// What this controller adjusts; a group takes at most one controller of each kind.
    fn controls(&self) -> Controls {
        Controls::Threads
    }

    /// How often the group is sampled.
    fn period(&self) -> Duration;

    /// Looks at a sample and says what to change. Only the setting named by
    /// [`controls`](ConcurrencyController::controls) is applied.
    fn adjust(&mut self, sample: &GroupSample) -> Adjustment;

    /// A short description of the controller and its state, for
    /// [`GroupStats`](crate::control::GroupStats).
    fn describe(&self) -> ControllerState;
}

/// A controller's self-description: its name and what it currently believes.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct ControllerState {
    /// The controller's name (`"adaptive"`, `"seda-thread-pool"`...).
    pub name: &'static str,
    /// Its state in words (`"optimal 4 threads at 12000 msgs/s"`...).
    pub detail: String,
}

impl ControllerState {
    /// The description of the controller `name` whose state is `detail`.
    pub fn new(name: &'static str, detail: impl Into<String>) -> Self {
        ControllerState {
            name,
            detail: detail.into(),
        }
    }
}

impl fmt::Display for ControllerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.detail.is_empty() {
            f.write_str(self.name)
        } else {
            write!(f, "{}: {}", self.name, self.detail)
        }
    }
}

// SAFETY: a controller's state as reported: a static name and owned text. (I8)
unsafe impl crate::isolation::Isolated for ControllerState {}
impl crate::isolation::Reply for ControllerState {}
