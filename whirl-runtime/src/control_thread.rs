//! The runtime's controller thread: samples every group that has
//! [concurrency controllers](crate::controller) at each controller's period, and applies what
//! they decide.
//!
//! It starts with the first group built with a controller and stops at shutdown. A
//! controller that panics is logged and dropped from its group; the others keep running.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::controller::{Adjustment, ConcurrencyController, Controls, GroupSample};
use crate::group::GroupShared;
use crate::runtime::RuntimeShared;

/// Longest the thread sleeps without looking for new groups or a stop request.
const MAX_NAP: Duration = Duration::from_secs(1);

/// A controller with what it saw last time.
pub(crate) struct Entry {
    controller: Box<dyn ConcurrencyController>,
    next_due: Instant,
    last: Reading,
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
struct Reading {
    at: Option<Instant>,
    handled: u64,
    idle: Duration,
    queue_latency_micros: u64,
    queue_latency_count: u64,
    lock_wait_nanos: u64,
    lock_wait_count: u64,
}

fn mean(total: u64, count: u64, unit: fn(u64) -> Duration) -> Duration {
    total.checked_div(count).map_or(Duration::ZERO, unit)
}

impl GroupShared {
    fn read(&self, now: Instant) -> (Reading, Duration) {
        let since_epoch = self.pool.now();
        let mut reading = Reading {
            at: Some(now),
            handled: self.counters.snapshot().handled,
            ..Reading::default()
        };
        let mut longest_idle = Duration::ZERO;
        for slot in self.pool.slots.read().iter() {
            let s = &slot.stats;
            let (idle, current) = s.idle_total(since_epoch);
            reading.idle += idle;
            longest_idle = longest_idle.max(current);
            reading.queue_latency_micros += s.sums.queue_latency_micros.load(Relaxed);
            reading.queue_latency_count += s.sums.queue_latency_count.load(Relaxed);
            reading.lock_wait_nanos += s.sums.lock_wait_nanos.load(Relaxed);
            reading.lock_wait_count += s.sums.lock_wait_count.load(Relaxed);
        }
        (reading, longest_idle)
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
            idle_time: now.idle.saturating_sub(last.idle),
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
        }
    }

    /// Runs the controllers that are due; returns when the next one is.
    fn run_controllers(self: &Arc<Self>, now: Instant) -> Option<Instant> {
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

#[derive(Default)]
struct State {
    stop: bool,
    handle: Option<JoinHandle<()>>,
}

/// The runtime's handle on its controller thread.
#[derive(Default)]
pub(crate) struct ControlThread {
    state: Mutex<State>,
    wake: Condvar,
}

impl ControlThread {
    /// Starts the thread if it is not running.
    pub(crate) fn ensure_running(&self, runtime: &Arc<RuntimeShared>) {
        let mut state = self.state.lock();
        if state.handle.is_some() || state.stop {
            return;
        }
        let weak = Arc::downgrade(runtime);
        let spawned = std::thread::Builder::new()
            .name("whirl-controller".into())
            .spawn(move || control_loop(weak));
        match spawned {
            Ok(handle) => state.handle = Some(handle),
            Err(e) => tracing::error!("cannot start the controller thread: {e}"),
        }
    }

    /// Stops the thread and waits for it (it never runs user code for long: a controller's
    /// `adjust`).
    pub(crate) fn stop(&self) {
        let handle = {
            let mut state = self.state.lock();
            state.stop = true;
            state.handle.take()
        };
        self.wake.notify_all();
        if let Some(handle) = handle {
            let _ = handle.join();
        }
    }
}

fn control_loop(runtime: Weak<RuntimeShared>) {
    loop {
        let Some(rt) = runtime.upgrade() else {
            return;
        };
        let now = Instant::now();
        let mut next = now + MAX_NAP;
        for group in rt.groups() {
            if let Some(due) = group.run_controllers(now) {
                next = next.min(due);
            }
        }
        // Not holding the runtime alive while asleep.
        let control = Arc::clone(&rt.control);
        drop(rt);
        let mut state = control.state.lock();
        if state.stop {
            return;
        }
        let _ = control.wake.wait_until(&mut state, next);
        if state.stop {
            return;
        }
    }
}
