//! What the controller thread keeps per controller between two samples of a group: the
//! cumulative readings a [`GroupSample`](super::GroupSample) is the difference of.

use std::time::{Duration, Instant};

use super::ConcurrencyController;

/// A controller with what it saw last time.
pub(crate) struct Entry {
    pub(crate) controller: Box<dyn ConcurrencyController>,
    pub(crate) next_due: Instant,
    pub(crate) last: Reading,
}

impl Entry {
    pub(crate) fn new(controller: Box<dyn ConcurrencyController>) -> Self {
        Entry {
            controller,
            next_due: Instant::now(),
            last: Reading::default(),
        }
    }

    pub(crate) fn controller(&self) -> &dyn ConcurrencyController {
        self.controller.as_ref()
    }
}

/// Cumulative figures of a group at one instant; a sample is the difference of two.
#[derive(Clone, Copy, Default)]
pub(crate) struct Reading {
    pub(crate) at: Option<Instant>,
    pub(crate) handled: u64,
    pub(crate) idle: Duration,
    pub(crate) queue_latency_micros: u64,
    pub(crate) queue_latency_count: u64,
    pub(crate) lock_wait_nanos: u64,
    pub(crate) lock_wait_count: u64,
}

pub(crate) fn mean(total: u64, count: u64, unit: fn(u64) -> Duration) -> Duration {
    total.checked_div(count).map_or(Duration::ZERO, unit)
}
