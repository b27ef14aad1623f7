//! What both sides of the benchmark share: the workloads they implement, their sizes, what a run
//! measures, and the countdown wait the harness reads a workload's end from.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::Serialize;

/// The sizes of the workloads.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Sizes {
    pub ping_pong_round_trips: u64,
    pub counting_posts: u64,
    pub fork_join_processes: u64,
    pub fork_join_per_process: u64,
    pub ring_processes: u64,
    pub ring_hops: u64,
    pub spawn_processes: u64,
}

impl Sizes {
    pub fn full() -> Self {
        Sizes {
            ping_pong_round_trips: 1_000_000,
            counting_posts: 10_000_000,
            fork_join_processes: 60,
            fork_join_per_process: 200_000,
            ring_processes: 1_000,
            ring_hops: 10_000_000,
            spawn_processes: 1_000_000,
        }
    }

    pub fn scaled(self, divisor: u64) -> Self {
        Sizes {
            ping_pong_round_trips: self.ping_pong_round_trips / divisor,
            counting_posts: self.counting_posts / divisor,
            fork_join_per_process: self.fork_join_per_process / divisor,
            ring_hops: self.ring_hops / divisor,
            spawn_processes: self.spawn_processes / divisor,
            ..self
        }
    }
}

/// What a workload run reports: how long it took and how many units of work it did.
pub struct Measured {
    pub elapsed: Duration,
    pub units: u64,
}

impl Measured {
    pub fn rate(&self) -> f64 {
        self.units as f64 / self.elapsed.as_secs_f64()
    }
}

/// The workloads both sides implement.
pub trait Workloads {
    fn ping_pong(&self, round_trips: u64) -> Measured;
    fn counting(&self, posts: u64) -> Measured;
    fn fork_join(&self, processes: u64, per_process: u64) -> Measured;
    fn ring(&self, size: u64, hops: u64) -> Measured;
}

/// Waits until `remaining` reaches zero, checking often enough not to distort the rate.
pub fn wait_for_zero(remaining: &AtomicU64) {
    while remaining.load(Ordering::Acquire) != 0 {
        std::thread::sleep(Duration::from_micros(50));
    }
}
