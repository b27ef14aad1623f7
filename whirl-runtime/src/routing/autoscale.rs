//! Autoscaling: when a router grows or shrinks on its own, read by its manager.

use std::time::Duration;

/// When a router grows or shrinks on its own ([`RouterBuilder::autoscale`](super::RouterBuilder::autoscale)),
/// between the builder's [`bounds`](super::RouterBuilder::bounds).
#[derive(Clone, Debug)]
pub struct Autoscale {
    pub(super) policy: Policy,
    pub(super) every: Duration,
}

#[derive(Clone, Debug)]
pub(super) enum Policy {
    FollowThreads { per_thread: usize },
    QueueLength { grow_above: u64, shrink_below: u64 },
}

impl Autoscale {
    /// As many members as the group has worker threads, times `per_thread`: the group's
    /// concurrency controller (the SEDA thread-pool controller, the Whirlwind default...)
    /// decides the pool size from the group's load, and the router follows it.
    pub fn follow_threads(per_thread: usize) -> Self {
        Autoscale {
            policy: Policy::FollowThreads {
                per_thread: per_thread.max(1),
            },
            every: Duration::from_millis(100),
        }
    }

    /// One member more when the group's queue holds more than `grow_above` messages per
    /// member, one fewer when it holds fewer than `shrink_below` per member. The queue is the
    /// whole group's ([`MessageCounts::queued`](crate::control::MessageCounts::queued)): give
    /// the router a group of its own.
    pub fn queue_length(grow_above: u64, shrink_below: u64) -> Self {
        Autoscale {
            policy: Policy::QueueLength {
                grow_above,
                shrink_below,
            },
            every: Duration::from_millis(100),
        }
    }

    /// How often the signal is read (default 100 ms).
    pub fn every(mut self, period: Duration) -> Self {
        self.every = period.max(Duration::from_millis(1));
        self
    }
}
