//! How a group runs its concurrency controllers: read its cumulative figures, turn two
//! readings into a [`GroupSample`], ask each due controller for an [`Adjustment`], apply it.
//! The controller thread (`control_thread.rs`) ticks every group it watches: first the group's
//! slow-turn watchdog (`watchdog.rs`), if a look is due, so that the samples taken right after
//! carry a fresh count of blocked workers; then the controllers that are due.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::control_thread::Controlled;
use super::pool;
use super::shared::GroupShared;
use crate::control::{mean, Adjustment, Controls, GroupSample, Reading};

impl Controlled for GroupShared {
    fn tick(self: Arc<Self>, now: Instant) -> Option<Instant> {
        // Cloned out of the lock: the watchdog's warnings run the user's tracing subscriber,
        // which may well read the group's statistics.
        let slots = || self.pool.slots.read().clone();
        let look = self.watchdog.check(now, slots, &self.name, |process| {
            super::placement::slow_turn(&self, process, now)
        });
        let controllers = self.run_due(now);
        match (look, controllers) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

impl GroupShared {
    fn read(&self, now: Instant) -> (Reading, Duration) {
        let since_epoch = pool::now();
        let mut reading = Reading {
            at: Some(now),
            handled: self.counters.snapshot().handled,
            ..Reading::default()
        };
        let mut spells = Vec::new();
        for slot in self.pool.slots.read().iter() {
            let s = &slot.stats;
            let (idle, current) = s.idle_total(since_epoch);
            reading.idle += idle;
            spells.push(current);
            reading.queue_latency_micros += s.sums.queue_latency_micros.load(Relaxed);
            reading.queue_latency_count += s.sums.queue_latency_count.load(Relaxed);
            reading.lock_wait_nanos += s.sums.lock_wait_nanos.load(Relaxed);
            reading.lock_wait_count += s.sums.lock_wait_count.load(Relaxed);
        }
        // Most idle first. On shared workers a group has a slot per worker but may use only
        // `limit` of them: one place of its capacity has been idle for as long as the
        // `workers - limit + 1`th most idle slot (with its own threads, every slot is a place).
        spells.sort_unstable_by(|a, b| b.cmp(a));
        let unusable = self.unusable_slots();
        let longest_idle = spells.get(unusable).copied().unwrap_or_default();
        (reading, longest_idle)
    }

    /// Slots the group cannot use: on shared workers, those beyond its concurrency limit.
    fn unusable_slots(&self) -> usize {
        match &self.domain {
            Some(domain) => domain.workers.count.saturating_sub(self.pool.target()),
            None => 0,
        }
    }

    fn sample(&self, last: &Reading, now: &Reading, longest_idle: Duration) -> GroupSample {
        let interval = match (last.at, now.at) {
            (Some(a), Some(b)) => b.saturating_duration_since(a),
            _ => Duration::ZERO,
        };
        GroupSample {
            interval,
            threads: self.pool.live(),
            min_threads: self.pool.range.min(),
            max_threads: self.pool.range.max(),
            budget: self.budget(),
            queue_length: self.counters.queued_estimate(),
            handled: now.handled.saturating_sub(last.handled),
            // Idle capacity: what the slots beyond the concurrency limit sat out does not count.
            idle_time: now
                .idle
                .saturating_sub(last.idle)
                .saturating_sub(interval.saturating_mul(self.unusable_slots() as u32)),
            longest_idle,
            queue_latency: mean(
                now.queue_latency_micros
                    .saturating_sub(last.queue_latency_micros),
                now.queue_latency_count
                    .saturating_sub(last.queue_latency_count),
                Duration::from_micros,
            ),
            lock_latency: mean(
                now.lock_wait_nanos.saturating_sub(last.lock_wait_nanos),
                now.lock_wait_count.saturating_sub(last.lock_wait_count),
                Duration::from_nanos,
            ),
            blocked_workers: self.watchdog.blocked(),
        }
    }

    /// Runs the controllers that are due; returns when the next one is.
    fn run_due(self: &Arc<Self>, now: Instant) -> Option<Instant> {
        let mut entries = self.controllers.lock();
        let mut next: Option<Instant> = None;
        let mut panicked = Vec::new();
        for (i, entry) in entries.iter_mut().enumerate() {
            if entry.next_due <= now {
                let (reading, longest_idle) = self.read(now);
                // The first reading only sets the baseline.
                if entry.last.at.is_some() {
                    let sample = self.sample(&entry.last, &reading, longest_idle);
                    let controller = &mut entry.controller;
                    match catch_unwind(AssertUnwindSafe(|| controller.adjust(&sample))) {
                        Ok(adjustment) => self.apply(controller.controls(), adjustment),
                        Err(_) => panicked.push(i),
                    }
                }
                entry.last = reading;
                entry.next_due = now + entry.controller.period().max(Duration::from_millis(1));
            }
            next = Some(next.map_or(entry.next_due, |n| n.min(entry.next_due)));
        }
        for i in panicked.into_iter().rev() {
            let gone = entries.remove(i);
            tracing::error!(
                group = %self.name,
                controller = gone.controller.describe().name,
                "a concurrency controller panicked; it is removed from the group"
            );
        }
        next
    }

    fn apply(self: &Arc<Self>, controls: Controls, adjustment: Adjustment) {
        match (controls, adjustment) {
            (
                Controls::Threads,
                Adjustment {
                    threads: Some(n), ..
                },
            ) if n != self.pool.target() => {
                let target = self.resize(n);
                tracing::debug!(group = %self.name, threads = target, "pool resized");
            }
            (
                Controls::Budget,
                Adjustment {
                    budget: Some(b), ..
                },
            ) => self.set_budget(b),
            _ => {}
        }
    }
}
