//! [`SedaThreadPool`]: SEDA's thread pool controller (Welsh's dissertation, chapter 5, §4.1).

use std::time::Duration;

use super::{Adjustment, ConcurrencyController, ControllerState, GroupSample};

/// SEDA's thread pool controller, as described in section 4.1 ("Thread pool controller") of
/// the resource-controller chapter of Matt Welsh's SEDA dissertation:
///
/// * **Queue threshold.** "The controller periodically samples the input queue (once per
///   second by default) and adds a thread when the queue length exceeds some threshold (100
///   events by default)": one thread per period, up to the group's maximum.
/// * **Idle removal.** "Threads are removed from a stage when they are idle for a specified
///   period of time (5 seconds by default)": when [`GroupSample::longest_idle`] exceeds the
///   idle timeout, one thread per period, not below the group's minimum.
/// * **Thrashing detection.** "The controller samples the throughput of each stage (requests
///   processed per second), maintaining a weighted moving average of the throughput samples.
///   The controller also remembers an estimate of the highest throughput delivered by the
///   stage, as well as the 'optimal' maximum thread pool size that corresponds to that
///   throughput." When the average is above the best by a margin (20% by default), it becomes
///   the new best, with the current pool size as the optimum; when it is below the best by
///   the margin, the pool is set back to the optimum minus "a random number of threads
///   (between 0 and 4 threads by default)", to "avoid local minima where the current estimate
///   of the optimal thread pool size is no longer accurate". The queue threshold then adds
///   threads back if they are needed.
///
/// # Choices the text leaves open
///
/// * **The moving average's weight.** The text gives none; this controller keeps
///   `average = 0.7 × average + 0.3 × throughput` (see [`smoothing`](Self::smoothing)): enough
///   memory to ride out one noisy period, little enough lag that a pool that has begun to
///   thrash is caught within a few periods.
/// * **Only a loaded stage is judged.** Throughput is averaged and compared only for samples
///   whose queue was non-empty. When the queue is empty, the stage handles what arrives, and
///   low throughput means low demand, not thrashing: judging it would record a false
///   "decline" and cut the pool just before the next burst.
/// * **Precedence.** In one period, a thrashing reset wins over the queue threshold, which
///   wins over idle removal: one change per period.
/// * **Randomness.** The random drop comes from a small xorshift generator seeded by
///   [`seed`](Self::seed) (a fixed default), so runs are reproducible.
///
/// ```
/// use whirl::control::{SedaThreadPool, ConcurrencyController, GroupSample};
/// use std::time::Duration;
///
/// let mut pool = SedaThreadPool::new();
/// let mut loaded = GroupSample::default();
/// loaded.interval = Duration::from_secs(1);
/// loaded.threads = 4;
/// loaded.min_threads = 1;
/// loaded.max_threads = 20;
/// loaded.queue_length = 500; // over the threshold of 100: add a thread
/// loaded.handled = 4_000;
/// assert_eq!(pool.adjust(&loaded).threads, Some(5));
///
/// let mut quiet = loaded.clone();
/// quiet.threads = 5;
/// quiet.queue_length = 0;
/// quiet.longest_idle = Duration::from_secs(6); // idle more than 5 s: remove a thread
/// assert_eq!(pool.adjust(&quiet).threads, Some(4));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct SedaThreadPool {
    period: Duration,
    queue_threshold: u64,
    idle_timeout: Duration,
    margin: f64,
    max_random_drop: usize,
    smoothing: f64,
    thrashing_detection: bool,
    rng: u64,
    /// Weighted moving average of the loaded samples' throughput.
    average: Option<f64>,
    /// The highest recorded average and the pool size it was recorded at.
    best: Option<(f64, usize)>,
}

impl SedaThreadPool {
    /// Default period: one second (SEDA: "once per second by default").
    pub const DEFAULT_PERIOD: Duration = Duration::from_secs(1);
    /// Default queue threshold: 100 messages (SEDA: "100 events by default").
    pub const DEFAULT_QUEUE_THRESHOLD: u64 = 100;
    /// Default idle timeout: 5 s (SEDA: "5 seconds by default").
    pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(5);
    /// Default thrashing margin: 20% (SEDA: "20% by default").
    pub const DEFAULT_MARGIN: f64 = 0.2;
    /// Default largest random drop: 4 threads (SEDA: "between 0 and 4 threads by default").
    pub const DEFAULT_MAX_RANDOM_DROP: usize = 4;
    /// Default weight of the old average in the moving average (our choice: 0.7).
    pub const DEFAULT_SMOOTHING: f64 = 0.7;
    /// Default random seed.
    pub const DEFAULT_SEED: u64 = 0x2545_f491_4f6c_dd1d;

    /// The controller with SEDA's defaults, thrashing detection on.
    pub fn new() -> Self {
        SedaThreadPool {
            period: Self::DEFAULT_PERIOD,
            queue_threshold: Self::DEFAULT_QUEUE_THRESHOLD,
            idle_timeout: Self::DEFAULT_IDLE_TIMEOUT,
            margin: Self::DEFAULT_MARGIN,
            max_random_drop: Self::DEFAULT_MAX_RANDOM_DROP,
            smoothing: Self::DEFAULT_SMOOTHING,
            thrashing_detection: true,
            rng: Self::DEFAULT_SEED,
            average: None,
            best: None,
        }
    }

    /// Sets the sampling period.
    pub fn period(mut self, period: Duration) -> Self {
        self.period = period;
        self
    }

    /// Sets the queue length above which a thread is added.
    pub fn queue_threshold(mut self, messages: u64) -> Self {
        self.queue_threshold = messages;
        self
    }

    /// Sets how long a worker must have been idle before a thread is removed.
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// Sets the thrashing margin, a fraction (`0.2` is 20%).
    pub fn margin(mut self, fraction: f64) -> Self {
        self.margin = fraction;
        self
    }

    /// Sets the largest number of threads removed below the optimum on a thrashing reset.
    pub fn max_random_drop(mut self, threads: usize) -> Self {
        self.max_random_drop = threads;
        self
    }

    /// Sets the weight of the old average in the throughput moving average (`0.0..1.0`;
    /// `0.0` uses each sample alone).
    pub fn smoothing(mut self, weight: f64) -> Self {
        self.smoothing = weight.clamp(0.0, 1.0);
        self
    }

    /// Seeds the random drop (zero is replaced by the default seed).
    pub fn seed(mut self, seed: u64) -> Self {
        self.rng = if seed == 0 { Self::DEFAULT_SEED } else { seed };
        self
    }

    /// Turns thrashing detection on (the default) or off.
    pub fn thrashing_detection(mut self, on: bool) -> Self {
        self.thrashing_detection = on;
        self
    }

    /// xorshift64: a random number in `0..=max`.
    fn random_up_to(&mut self, max: usize) -> usize {
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        (x % (max as u64 + 1)) as usize
    }

    /// Updates the average and the best; `Some(size)` when thrashing calls for a reset.
    fn detect_thrashing(&mut self, s: &GroupSample) -> Option<usize> {
        if !self.thrashing_detection || s.queue_length == 0 {
            return None;
        }
        let now = s.throughput();
        let average = match self.average {
            Some(old) => self.smoothing * old + (1.0 - self.smoothing) * now,
            None => now,
        };
        self.average = Some(average);
        match self.best {
            Some((best, optimal)) if average < best * (1.0 - self.margin) => {
                let drop = self.random_up_to(self.max_random_drop);
                Some(optimal.saturating_sub(drop))
            }
            Some((best, _)) if average <= best * (1.0 + self.margin) => None,
            _ => {
                self.best = Some((average, s.threads));
                None
            }
        }
    }
}

impl Default for SedaThreadPool {
    fn default() -> Self {
        Self::new()
    }
}

impl ConcurrencyController for SedaThreadPool {
    fn period(&self) -> Duration {
        self.period
    }

    fn adjust(&mut self, s: &GroupSample) -> Adjustment {
        let (t, min, max) = (s.threads, s.min_threads, s.max_threads.max(s.min_threads));
        let target = if let Some(reset) = self.detect_thrashing(s) {
            reset
        } else if s.queue_length > self.queue_threshold && t < max {
            t + 1
        } else if s.longest_idle > self.idle_timeout && t > min {
            t - 1
        } else {
            t
        };
        let target = target.clamp(min, max);
        if target == t {
            Adjustment::NONE
        } else {
            Adjustment::threads(target)
        }
    }

    fn describe(&self) -> ControllerState {
        let detail = match (self.best, self.average) {
            (Some((best, optimal)), Some(average)) => format!(
                "optimal {optimal} threads at {best:.0} msgs/s, average {average:.0} msgs/s"
            ),
            _ => String::new(),
        };
        ControllerState {
            name: "seda-thread-pool",
            detail,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn sample(threads: usize, queue_length: u64, handled: u64) -> GroupSample {
        GroupSample {
            interval: Duration::from_secs(1),
            threads,
            min_threads: 1,
            max_threads: 200,
            queue_length,
            handled,
            ..GroupSample::default()
        }
    }

    #[test]
    fn adds_threads_while_queue_over_threshold_up_to_max() {
        let mut c = SedaThreadPool::new().thrashing_detection(false);
        let mut threads = 1;
        for _ in 0..30 {
            let s = GroupSample {
                max_threads: 20,
                ..sample(threads, 101, 0)
            };
            if let Some(n) = c.adjust(&s).threads {
                assert_eq!(n, threads + 1);
                threads = n;
            }
        }
        assert_eq!(threads, 20);
        assert_eq!(c.adjust(&sample(5, 100, 0)), Adjustment::NONE);
        let mut low = SedaThreadPool::new().queue_threshold(10);
        assert_eq!(low.adjust(&sample(5, 11, 0)), Adjustment::threads(6));
    }

    #[test]
    fn removes_idle_threads_after_timeout() {
        let mut c = SedaThreadPool::new();
        let idle = |threads, secs| GroupSample {
            longest_idle: Duration::from_secs(secs),
            min_threads: 2,
            ..sample(threads, 0, 0)
        };
        assert_eq!(c.adjust(&idle(4, 5)), Adjustment::NONE);
        assert_eq!(c.adjust(&idle(4, 6)), Adjustment::threads(3));
        assert_eq!(c.adjust(&idle(2, 60)), Adjustment::NONE);
        let mut quick = SedaThreadPool::new().idle_timeout(Duration::from_secs(1));
        assert_eq!(quick.adjust(&idle(4, 2)), Adjustment::threads(3));
    }

    /// CPU-bound handlers with a contended critical section (SEDA figure 31): throughput
    /// rises with the pool up to 8 threads, then collapses as the threads fight.
    fn plant(threads: usize) -> f64 {
        let n = threads as f64;
        if threads <= 8 {
            1000.0 * n
        } else {
            8000.0 * (8.0 / n).powi(2)
        }
    }

    /// Runs the controller against the always-overloaded plant; the pool sizes, per period.
    fn run_plant(mut c: SedaThreadPool, periods: usize) -> Vec<usize> {
        let mut threads = 1;
        let mut history = Vec::with_capacity(periods);
        for _ in 0..periods {
            let s = sample(threads, 10_000, plant(threads).round() as u64);
            if let Some(n) = c.adjust(&s).threads {
                assert!((1..=200).contains(&n));
                threads = n;
            }
            history.push(threads);
        }
        history
    }

    #[test]
    fn thrashing_detection_settles_near_the_peak() {
        for seed in [1, 7, 42, SedaThreadPool::DEFAULT_SEED] {
            let history = run_plant(SedaThreadPool::new().seed(seed), 500);
            let settled = &history[50..];
            let top = *settled.iter().max().unwrap();
            let mean = settled.iter().sum::<usize>() as f64 / settled.len() as f64;
            assert!(top <= 16, "seed {seed}: grew to {top}");
            assert!((4.0..=12.0).contains(&mean), "seed {seed}: mean {mean}");
        }
    }

    #[test]
    fn without_thrashing_detection_grows_to_max() {
        let history = run_plant(SedaThreadPool::new().thrashing_detection(false), 500);
        assert_eq!(history[498], 200);
        assert_eq!(history[499], 200);
    }

    #[test]
    fn thrashing_reset_drops_randomly_below_optimal() {
        let mut c = SedaThreadPool::new().max_random_drop(2).seed(3);
        assert_eq!(c.adjust(&sample(6, 500, 6000)), Adjustment::threads(7));
        assert!(c.describe().detail.starts_with("optimal 6 threads at 6000"));
        // The average falls 20% below the best: back to 6 minus 0..=2.
        let mut drops = Vec::new();
        for _ in 0..20 {
            c.average = Some(6000.0);
            let n = c.adjust(&sample(12, 500, 1000)).threads.unwrap();
            assert!((4..=6).contains(&n), "{n}");
            drops.push(n);
        }
        assert!(drops.contains(&4) && drops.contains(&6));
    }

    #[test]
    fn empty_queue_is_not_thrashing() {
        let mut c = SedaThreadPool::new().smoothing(0.0);
        assert_eq!(c.adjust(&sample(8, 500, 8000)), Adjustment::threads(9));
        // Demand fell away: little throughput, but nothing queued. No reset, no new average.
        assert_eq!(c.adjust(&sample(9, 0, 100)), Adjustment::NONE);
        assert_eq!(c.average, Some(8000.0));
        // Loaded again and slow: that is thrashing.
        assert_eq!(
            c.adjust(&sample(9, 500, 100)).threads.map(|n| n <= 8),
            Some(true)
        );
    }
}
