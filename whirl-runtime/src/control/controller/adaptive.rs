//! [`AdaptiveConcurrency`]: the Whirlwind default controller (the paper's figure 1).

use std::time::Duration;

use super::{Adjustment, ConcurrencyController, ControllerState, GroupSample};

/// The Whirlwind default concurrency controller: the pseudocode of figure 1 of the Whirlwind
/// paper ("Adaptive Concurrency Level", section III-F):
///
/// ```text
/// if idleTime > idleTimeThreshold
///     if threadCount > minThreadCount
///         threadCount--
/// else if threadCount < maxThreadCount
///     if queueLatency > queueLatencyThreshold
///     if lockLatency < lockLatencyThreshold
///         threadCount++
/// ```
///
/// One step per period: a thread fewer when the workers are idle, a thread more when
/// messages wait in the queue (or workers are blocked in slow turns while messages wait) and
/// handlers are not waiting for locks.
///
/// # How the paper's measures map onto a [`GroupSample`]
///
/// * **Idle time.** The paper's *idleTime* is "the average time a thread waits for the
///   scheduler to supply a process". A sample carries the idle time summed over the workers
///   for the period, so this controller compares the **idle fraction**
///   ([`GroupSample::idle_fraction`]: idle time over threads × interval) with a threshold,
///   by default `0.5`: when the workers spent more than half their time waiting for work,
///   the pool shrinks.
/// * **Queue latency.** The paper's *queueLatency*, "the average time a message spends in the
///   queue", is [`GroupSample::queue_latency`] (default threshold 10 ms). That measure has
///   1 ms resolution and is only taken when a message is finally handled, so a group whose
///   workers are all stuck in blocking handlers reports nothing for the messages piling up
///   behind them. So a **backlog with no idle worker** also counts as queue-latency evidence:
///   a queue longer than a threshold (default 100 messages) while the workers had no idle
///   time at all.
/// * **Blocked workers.** A worker stuck in a slow turn
///   ([`GroupSample::blocked_workers`]: a handler that has held it longer than the group's
///   [slow-turn threshold](crate::GroupBuilder::slow_turn_threshold)) is a thread the group
///   has but cannot use. With messages queued, that counts as queue-latency evidence at once,
///   before any latency is measured: **a blocking group gets a thread**. (The queue length
///   counts the message a blocked handler is handling until its turn ends, so "messages
///   queued" means more of them than there are blocked workers.) Unless the workers that are
///   *not* blocked had time to spare — idle more than the idle threshold of their own time
///   during the period: then the queued messages are ones no free worker could take (most
///   often the blocked process's own inbox, which only it can handle), and another thread
///   would only wait beside them.
/// * **Lock latency.** The paper's *lockLatency* is [`GroupSample::lock_latency`] (default
///   threshold 1 ms). When handlers already wait for locks, another thread mostly adds
///   another waiter: more contention, not more throughput — so the pool does not grow.
///
/// The default period is 250 ms. Answers stay within the sample's `min_threads..=max_threads`.
///
/// ```
/// use whirl::control::{AdaptiveConcurrency, ConcurrencyController, GroupSample};
/// use std::time::Duration;
///
/// let mut adaptive = AdaptiveConcurrency::new();
/// let mut sample = GroupSample::default();
/// sample.interval = Duration::from_millis(250);
/// sample.threads = 4;
/// sample.min_threads = 1;
/// sample.max_threads = 16;
/// sample.queue_latency = Duration::from_millis(40); // messages wait: grow
/// assert_eq!(adaptive.adjust(&sample).threads, Some(5));
///
/// sample.lock_latency = Duration::from_millis(5); // ...unless handlers wait for locks
/// assert_eq!(adaptive.adjust(&sample).threads, None);
///
/// sample.idle_time = Duration::from_millis(800); // 80% of 4 × 250 ms idle: shrink
/// assert_eq!(adaptive.adjust(&sample).threads, Some(3));
///
/// // The only worker is stuck in a slow turn and messages wait: grow before latency shows.
/// let mut stuck = GroupSample::default();
/// stuck.interval = Duration::from_millis(250);
/// stuck.threads = 1;
/// stuck.min_threads = 1;
/// stuck.max_threads = 4;
/// stuck.blocked_workers = 1;
/// stuck.queue_length = 3;
/// assert_eq!(adaptive.adjust(&stuck).threads, Some(2));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct AdaptiveConcurrency {
    period: Duration,
    idle_threshold: f64,
    queue_latency_threshold: Duration,
    lock_latency_threshold: Duration,
    queue_length_threshold: u64,
    /// The thread count seen last and what was decided about it.
    last: Option<(usize, &'static str)>,
}

impl AdaptiveConcurrency {
    /// Default period: 250 ms.
    pub const DEFAULT_PERIOD: Duration = Duration::from_millis(250);
    /// Default idle threshold: workers idle more than half the time → shrink.
    pub const DEFAULT_IDLE_THRESHOLD: f64 = 0.5;
    /// Default queue-latency threshold: 10 ms.
    pub const DEFAULT_QUEUE_LATENCY_THRESHOLD: Duration = Duration::from_millis(10);
    /// Default lock-latency threshold: 1 ms.
    pub const DEFAULT_LOCK_LATENCY_THRESHOLD: Duration = Duration::from_millis(1);
    /// Default backlog threshold: 100 messages.
    pub const DEFAULT_QUEUE_LENGTH_THRESHOLD: u64 = 100;

    /// The controller with the defaults above.
    pub fn new() -> Self {
        AdaptiveConcurrency {
            period: Self::DEFAULT_PERIOD,
            idle_threshold: Self::DEFAULT_IDLE_THRESHOLD,
            queue_latency_threshold: Self::DEFAULT_QUEUE_LATENCY_THRESHOLD,
            lock_latency_threshold: Self::DEFAULT_LOCK_LATENCY_THRESHOLD,
            queue_length_threshold: Self::DEFAULT_QUEUE_LENGTH_THRESHOLD,
            last: None,
        }
    }

    /// Sets the sampling period.
    pub fn period(mut self, period: Duration) -> Self {
        self.period = period;
        self
    }

    /// Sets the idle fraction (`0.0..=1.0`) above which the pool shrinks.
    pub fn idle_threshold(mut self, fraction: f64) -> Self {
        self.idle_threshold = fraction;
        self
    }

    /// Sets the mean queue latency above which the pool may grow.
    pub fn queue_latency_threshold(mut self, latency: Duration) -> Self {
        self.queue_latency_threshold = latency;
        self
    }

    /// Sets the mean lock latency at or above which the pool does not grow.
    pub fn lock_latency_threshold(mut self, latency: Duration) -> Self {
        self.lock_latency_threshold = latency;
        self
    }

    /// Sets the queue length above which, with no idle time, the backlog counts as queue
    /// latency.
    pub fn queue_length_threshold(mut self, messages: u64) -> Self {
        self.queue_length_threshold = messages;
        self
    }

    fn decide(&self, s: &GroupSample) -> (Option<usize>, &'static str) {
        let (t, min, max) = (s.threads, s.min_threads, s.max_threads.max(s.min_threads));
        if s.idle_fraction() > self.idle_threshold {
            if t > min {
                return (Some((t - 1).clamp(min, max)), "idle: shrink");
            }
            return (None, "idle at minimum");
        }
        if t >= max {
            return (None, "at maximum");
        }
        let backlog = s.queue_length > self.queue_length_threshold && s.idle_time.is_zero();
        let queued = s.queue_latency > self.queue_latency_threshold || backlog;
        if !queued && !self.blocked_with_work(s) {
            return (None, "steady");
        }
        if s.lock_latency >= self.lock_latency_threshold {
            return (None, "queued but lock-bound");
        }
        let why = if queued {
            "queued: grow"
        } else {
            "blocked with work queued: grow"
        };
        (Some((t + 1).clamp(min, max)), why)
    }

    /// Whether workers are blocked in slow turns while messages wait that the other workers
    /// had no time for (see "Blocked workers" above).
    fn blocked_with_work(&self, s: &GroupSample) -> bool {
        // Each blocked worker's own message is still counted in the queue.
        let waiting = s.queue_length.saturating_sub(s.blocked_workers as u64);
        if s.blocked_workers == 0 || waiting == 0 {
            return false;
        }
        let free = s.threads.saturating_sub(s.blocked_workers);
        let capacity = s.interval.as_secs_f64() * free as f64;
        // No free worker at all, or the free ones were busy.
        capacity <= 0.0 || s.idle_time.as_secs_f64() / capacity <= self.idle_threshold
    }
}

impl Default for AdaptiveConcurrency {
    fn default() -> Self {
        Self::new()
    }
}

impl ConcurrencyController for AdaptiveConcurrency {
    fn period(&self) -> Duration {
        self.period
    }

    fn adjust(&mut self, sample: &GroupSample) -> Adjustment {
        let (threads, why) = self.decide(sample);
        self.last = Some((threads.unwrap_or(sample.threads), why));
        match threads {
            Some(n) if n != sample.threads => Adjustment::threads(n),
            _ => Adjustment::NONE,
        }
    }

    fn describe(&self) -> ControllerState {
        let detail = match self.last {
            Some((threads, why)) => format!("{threads} threads ({why})"),
            None => String::new(),
        };
        ControllerState {
            name: "adaptive",
            detail,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn sample(threads: usize) -> GroupSample {
        GroupSample {
            interval: ms(250),
            threads,
            min_threads: 2,
            max_threads: 8,
            budget: 64,
            ..GroupSample::default()
        }
    }

    #[test]
    fn idle_shrinks_by_one() {
        let mut c = AdaptiveConcurrency::new();
        let s = GroupSample {
            idle_time: ms(600), // 60% of 4 × 250 ms
            queue_latency: ms(50),
            ..sample(4)
        };
        assert_eq!(c.adjust(&s), Adjustment::threads(3));
        assert_eq!(
            c.describe().to_string(),
            "adaptive: 3 threads (idle: shrink)"
        );
    }

    #[test]
    fn idle_at_minimum_holds() {
        let mut c = AdaptiveConcurrency::new();
        let s = GroupSample {
            idle_time: ms(500),
            ..sample(2)
        };
        assert_eq!(c.adjust(&s), Adjustment::NONE);
    }

    #[test]
    fn half_idle_is_not_idle() {
        let mut c = AdaptiveConcurrency::new();
        let s = GroupSample {
            idle_time: ms(500), // exactly 50%: not above the threshold
            ..sample(4)
        };
        assert_eq!(c.adjust(&s), Adjustment::NONE);
        let mut eager = AdaptiveConcurrency::new().idle_threshold(0.25);
        assert_eq!(eager.adjust(&s), Adjustment::threads(3));
    }

    #[test]
    fn queue_latency_grows_by_one() {
        let mut c = AdaptiveConcurrency::new();
        let s = GroupSample {
            queue_latency: ms(11),
            idle_time: ms(100),
            ..sample(4)
        };
        assert_eq!(c.adjust(&s), Adjustment::threads(5));
        let at_threshold = GroupSample {
            queue_latency: ms(10),
            ..s.clone()
        };
        assert_eq!(c.adjust(&at_threshold), Adjustment::NONE);
        let mut patient = AdaptiveConcurrency::new().queue_latency_threshold(ms(20));
        assert_eq!(patient.adjust(&s), Adjustment::NONE);
    }

    #[test]
    fn at_maximum_does_not_grow() {
        let mut c = AdaptiveConcurrency::new();
        let s = GroupSample {
            queue_latency: ms(100),
            ..sample(8)
        };
        assert_eq!(c.adjust(&s), Adjustment::NONE);
    }

    #[test]
    fn lock_contention_blocks_growth() {
        let mut c = AdaptiveConcurrency::new();
        let s = GroupSample {
            queue_latency: ms(100),
            queue_length: 10_000,
            lock_latency: ms(1),
            ..sample(4)
        };
        assert_eq!(c.adjust(&s), Adjustment::NONE);
        assert!(c.describe().detail.contains("lock-bound"));
        let mut tolerant = AdaptiveConcurrency::new().lock_latency_threshold(ms(5));
        assert_eq!(tolerant.adjust(&s), Adjustment::threads(5));
    }

    #[test]
    fn backlog_without_idle_counts_as_latency() {
        let mut c = AdaptiveConcurrency::new();
        let backlog = GroupSample {
            queue_length: 101,
            ..sample(4)
        };
        assert_eq!(c.adjust(&backlog), Adjustment::threads(5));
        // A short queue, or any idle time, is not that evidence.
        let short = GroupSample {
            queue_length: 100,
            ..sample(4)
        };
        assert_eq!(c.adjust(&short), Adjustment::NONE);
        let some_idle = GroupSample {
            idle_time: ms(1),
            ..backlog.clone()
        };
        assert_eq!(c.adjust(&some_idle), Adjustment::NONE);
        let mut long = AdaptiveConcurrency::new().queue_length_threshold(1_000);
        assert_eq!(long.adjust(&backlog), Adjustment::NONE);
    }

    #[test]
    fn blocked_workers_with_work_queued_grow_before_latency_shows() {
        let mut c = AdaptiveConcurrency::new();
        // One of four workers stuck in a slow turn, a single message waiting, no latency
        // measured yet, the other workers busy.
        let blocked = GroupSample {
            blocked_workers: 1,
            queue_length: 2,
            idle_time: ms(200), // 27% of the three free workers' 750 ms
            ..sample(4)
        };
        assert_eq!(c.adjust(&blocked), Adjustment::threads(5));
        assert!(c.describe().detail.contains("blocked"), "{}", c.describe());
        // A single thread, blocked: it gets company.
        let alone = GroupSample {
            min_threads: 1,
            max_threads: 3,
            blocked_workers: 1,
            queue_length: 3,
            ..sample(1)
        };
        assert_eq!(c.adjust(&alone), Adjustment::threads(2));
        // Nothing queued but the message the blocked handler holds: nothing another thread
        // could do.
        for queue_length in [0, 1] {
            let nothing_waits = GroupSample {
                queue_length,
                ..blocked.clone()
            };
            assert_eq!(c.adjust(&nothing_waits), Adjustment::NONE);
        }
        // Up to the maximum only.
        let at_max = GroupSample {
            blocked_workers: 8,
            ..sample(8)
        };
        assert_eq!(c.adjust(&at_max), Adjustment::NONE);
        // Handlers waiting for locks still hold growth back.
        let lock_bound = GroupSample {
            lock_latency: ms(2),
            ..blocked.clone()
        };
        assert_eq!(c.adjust(&lock_bound), Adjustment::NONE);
    }

    #[test]
    fn blocked_workers_do_not_grow_a_group_whose_free_workers_idle() {
        let mut c = AdaptiveConcurrency::new();
        // Three free workers idle 60% of their time: the queued messages are ones they cannot
        // take (the blocked process's own), so another thread would only idle too. The group
        // as a whole is 45% idle, not enough to shrink.
        let s = GroupSample {
            blocked_workers: 1,
            queue_length: 5,
            idle_time: ms(450),
            ..sample(4)
        };
        assert_eq!(c.adjust(&s), Adjustment::NONE);
        // Two threads, one blocked, the other idle all period: steady, not 2 → 3 → 2.
        let pair = GroupSample {
            blocked_workers: 1,
            queue_length: 5,
            idle_time: ms(250),
            ..sample(2)
        };
        assert_eq!(c.adjust(&pair), Adjustment::NONE);
    }

    #[test]
    fn never_outside_min_max() {
        let mut c = AdaptiveConcurrency::new();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for _ in 0..10_000 {
            let min = next(4) as usize;
            let max = min + next(6) as usize;
            let threads = next(12) as usize;
            let s = GroupSample {
                interval: ms(250),
                threads,
                min_threads: min,
                max_threads: max,
                queue_length: next(300),
                idle_time: ms(next(3) * 250 * threads as u64 / 2),
                queue_latency: ms(next(30)),
                lock_latency: ms(next(3)),
                blocked_workers: next(3) as usize,
                ..GroupSample::default()
            };
            if let Some(n) = c.adjust(&s).threads {
                assert!((min..=max).contains(&n), "{n} outside {min}..={max}: {s:?}");
                assert_ne!(n, threads);
            }
        }
    }

    #[test]
    fn blocked_group_grows_one_thread_per_period_to_max() {
        // Every worker is stuck in a blocking handler: nothing handled, nothing measured,
        // no idle time, and the queue grows.
        let mut c = AdaptiveConcurrency::new();
        let mut threads = 2;
        let mut seen = vec![threads];
        for period in 0..20u64 {
            let s = GroupSample {
                queue_length: 50 * (period + 1),
                handled: 0,
                ..sample(threads)
            };
            if let Some(n) = c.adjust(&s).threads {
                threads = n;
            }
            seen.push(threads);
        }
        // Queue length passes 100 at period 2; then one thread per period up to 8.
        assert_eq!(&seen[..9], &[2, 2, 2, 3, 4, 5, 6, 7, 8]);
        assert!(seen[9..].iter().all(|&t| t == 8));
    }
}
