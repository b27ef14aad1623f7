//! Restart with backoff: the policy a child spec may carry ([`Backoff`]: exponential delays with
//! a cap, optional jitter, a reset once the child has run long enough, an optional limit), and
//! what the supervisor remembers of each child under it ([`Attempts`]).
//!
//! This file is arithmetic and bookkeeping only; `delayed.rs` schedules the delayed restarts on
//! the runtime's timers, and the module documentation states the rule against the restart
//! intensity ([`crate::supervision`], "Riding out outages").

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::time::{Duration, Instant};

use crate::isolation::Isolated;

/// Delayed restarts for a child whose failures come from outside it (a database that is down,
/// a remote service restarting): [`ChildSpec::backoff`](super::ChildSpec::backoff).
///
/// The `n`th failure in a row is restarted after `min × 2ⁿ⁻¹`, capped at `max`: with
/// `Backoff::exponential(100 ms, 10 s)`, after 100 ms, 200 ms, 400 ms... 6.4 s, then 10 s
/// for every failure after that, as Akka's `BackoffSupervisor` does. Meanwhile the child is
/// stopped (`which_children` shows no pid), and its restarts are not counted against the
/// supervisor's restart intensity (see the [module documentation](crate::supervision) for the
/// exact rule), so an outage longer than the intensity period is ridden out instead of
/// failing the supervisor.
///
/// * [`Backoff::reset_after`]: a child that ran at least this long before failing starts
///   again from `min` (default: `max`), measured on the supervisor's
///   [`Clock`](crate::time::Clock).
/// * [`Backoff::jitter`]: spreads the delays of children that failed together (every
///   connection to one database), so that they do not all come back at the same instant.
/// * [`Backoff::max_attempts`]: gives up after that many delayed restarts in a row; the next
///   failure fails the supervisor, as exceeding the intensity does (default: never gives up).
///
/// ```
/// use std::time::Duration;
/// use whirl::supervision::Backoff;
///
/// let backoff = Backoff::exponential(Duration::from_millis(100), Duration::from_secs(10))
///     .jitter(0.2)
///     .reset_after(Duration::from_secs(60));
/// assert_eq!(backoff.delay(1), Duration::from_millis(100));
/// assert_eq!(backoff.delay(4), Duration::from_millis(800));
/// assert_eq!(backoff.delay(20), Duration::from_secs(10), "capped");
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Backoff {
    min: Duration,
    max: Duration,
    jitter: f64,
    reset_after: Option<Duration>,
    max_attempts: Option<u32>,
}

// SAFETY: plain `Copy` data: durations, a float and counters. (I8)
#[diagnostic::do_not_recommend]
unsafe impl Isolated for Backoff {}

impl Backoff {
    /// Delays that start at `min` and double at each failure in a row, up to `max`. `min`
    /// must be positive and `max` at least `min` (else the spec is refused at start).
    pub fn exponential(min: Duration, max: Duration) -> Self {
        Backoff {
            min,
            max,
            jitter: 0.0,
            reset_after: None,
            max_attempts: None,
        }
    }

    /// Shortens each delay by a random fraction of itself, up to `fraction` (between 0 and
    /// 1): a delay `d` becomes one between `d × (1 - fraction)` and `d`. The cap stays an upper
    /// bound (Akka's `randomFactor` lengthens delays instead, past the cap).
    pub fn jitter(mut self, fraction: f64) -> Self {
        self.jitter = fraction;
        self
    }

    /// A child that ran at least `ran_for` before it failed is restarted after `min` again,
    /// as if it had not failed before (default: `max`, the longest delay). Measured on the
    /// supervisor's clock, from the start of the incarnation that failed.
    pub fn reset_after(mut self, ran_for: Duration) -> Self {
        self.reset_after = Some(ran_for);
        self
    }

    /// Gives up after `attempts` delayed restarts in a row (at least 1): the next failure
    /// before a reset stops the supervisor's children and fails it, as exceeding the restart
    /// intensity does, so its own supervisor takes over.
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = Some(attempts);
        self
    }

    /// The delay before the `attempt`th restart in a row (from 1), before jitter:
    /// `min × 2^(attempt - 1)`, at most `max`.
    pub fn delay(&self, attempt: u32) -> Duration {
        let doublings = attempt.saturating_sub(1).min(31);
        self.min.saturating_mul(1 << doublings).min(self.max)
    }

    /// The shortest delay.
    pub fn min_delay(&self) -> Duration {
        self.min
    }

    /// The longest delay (the cap).
    pub fn max_delay(&self) -> Duration {
        self.max
    }

    /// The jitter fraction (0: none).
    pub fn jitter_fraction(&self) -> f64 {
        self.jitter
    }

    /// How long a child must have run for its next failure to start again from `min`.
    pub fn reset_period(&self) -> Duration {
        self.reset_after.unwrap_or(self.max)
    }

    /// The delayed restarts in a row after which the supervisor gives up, if any.
    pub fn attempts_limit(&self) -> Option<u32> {
        self.max_attempts
    }

    /// The delay of the `attempt`th restart with jitter, `unit` being uniform in `[0, 1)`.
    pub(super) fn jittered(&self, attempt: u32, unit: f64) -> Duration {
        let delay = self.delay(attempt);
        if self.jitter > 0.0 {
            delay.mul_f64(1.0 - self.jitter * unit)
        } else {
            delay
        }
    }

    /// What is wrong with the policy, if anything (the spec is refused for it).
    pub(super) fn problem(&self) -> Option<String> {
        if self.min.is_zero() {
            return Some(
                "its backoff's shortest delay is zero; it must be positive (restarts without \
                 delay are what the restart intensity is for)"
                    .to_owned(),
            );
        }
        if self.max < self.min {
            return Some(format!(
                "its backoff's longest delay ({:?}) is shorter than its shortest ({:?})",
                self.max, self.min
            ));
        }
        if !(0.0..=1.0).contains(&self.jitter) {
            return Some(format!(
                "its backoff's jitter is {}; it must be between 0 and 1",
                self.jitter
            ));
        }
        if self.max_attempts == Some(0) {
            return Some("its backoff allows no attempt; `max_attempts` must be at least 1".into());
        }
        None
    }
}

/// What the supervisor remembers of one child's failures under a [`Backoff`].
#[derive(Debug, Default)]
pub(super) struct Attempts {
    /// Failures in a row since the last reset (the attempt number of the latest restart).
    pub(super) count: u32,
    /// When the running incarnation started, on the supervisor's clock.
    pub(super) since: Option<Instant>,
    /// The delayed restart the child is waiting for (its token), if it is waiting.
    pub(super) due: Option<u64>,
}

impl Attempts {
    /// The running incarnation started at `now`.
    pub(super) fn started(&mut self, now: Instant) {
        self.since = Some(now);
    }

    /// The child failed at `now` (or its restart could not start: then it has no running
    /// incarnation, and nothing resets). Returns the attempt number of the restart to
    /// schedule, or `None` if `policy` gives up.
    pub(super) fn failed(&mut self, policy: &Backoff, now: Instant) -> Option<u32> {
        let ran_for = self.since.take().map(|s| now.saturating_duration_since(s));
        if ran_for.is_some_and(|d| d >= policy.reset_period()) {
            self.count = 0;
        }
        self.count = self.count.saturating_add(1);
        match policy.max_attempts {
            Some(limit) if self.count > limit => None,
            _ => Some(self.count),
        }
    }

    /// Started or stopped on request: the next failure is the first in a row.
    pub(super) fn reset(&mut self) {
        self.count = 0;
        self.due = None;
    }
}

/// The supervisor's source of jitter: splitmix64, seeded once from the process's random hash
/// keys. Not for anything but spreading delays.
pub(super) struct Jitter(u64);

impl Jitter {
    pub(super) fn new() -> Self {
        Jitter(RandomState::new().hash_one(0x5eed_u64))
    }

    /// A number uniform in `[0, 1)`.
    pub(super) fn unit(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn delays_double_from_min_up_to_the_cap() {
        let b = Backoff::exponential(100 * MS, 1_000 * MS);
        let delays: Vec<u128> = (1..=6).map(|a| b.delay(a).as_millis()).collect();
        assert_eq!(delays, [100, 200, 400, 800, 1_000, 1_000]);
        assert_eq!(b.delay(u32::MAX), 1_000 * MS, "no overflow");
        assert_eq!(b.delay(0), 100 * MS);
    }

    #[test]
    fn jitter_shortens_within_the_fraction_and_never_passes_the_cap() {
        let b = Backoff::exponential(100 * MS, 400 * MS).jitter(0.5);
        let mut rng = Jitter::new();
        for attempt in 1..=10 {
            let d = b.jittered(attempt, rng.unit());
            assert!(d <= b.delay(attempt) && d >= b.delay(attempt) / 2, "{d:?}");
        }
        assert_eq!(b.jittered(3, 0.0), 400 * MS);
        assert_eq!(b.jittered(3, 0.5), 300 * MS);
        let unit = Jitter::new().unit();
        assert!((0.0..1.0).contains(&unit));
    }

    #[test]
    fn failures_count_up_until_the_child_has_run_long_enough() {
        let b = Backoff::exponential(MS, 8 * MS).reset_after(Duration::from_secs(10));
        let t0 = Instant::now();
        let mut a = Attempts::default();
        for expected in 1..=3 {
            a.started(t0);
            assert_eq!(a.failed(&b, t0 + Duration::from_secs(9)), Some(expected));
        }
        a.started(t0);
        assert_eq!(a.failed(&b, t0 + Duration::from_secs(10)), Some(1), "reset");
        assert_eq!(
            a.failed(&b, t0),
            Some(2),
            "a start that failed resets nothing"
        );
    }

    #[test]
    fn the_default_reset_is_the_cap() {
        let b = Backoff::exponential(MS, 8 * MS);
        assert_eq!(b.reset_period(), 8 * MS);
        let t0 = Instant::now();
        let mut a = Attempts::default();
        a.started(t0);
        assert_eq!(a.failed(&b, t0 + 7 * MS), Some(1));
        a.started(t0);
        assert_eq!(a.failed(&b, t0 + 7 * MS), Some(2));
        a.started(t0);
        assert_eq!(a.failed(&b, t0 + 8 * MS), Some(1));
    }

    #[test]
    fn max_attempts_gives_up_on_the_next_failure() {
        let b = Backoff::exponential(MS, 8 * MS).max_attempts(2);
        let now = Instant::now();
        let mut a = Attempts::default();
        assert_eq!(a.failed(&b, now), Some(1));
        assert_eq!(a.failed(&b, now), Some(2));
        assert_eq!(a.failed(&b, now), None);
    }

    #[test]
    fn invalid_policies_are_problems() {
        let ok = Backoff::exponential(MS, MS);
        assert_eq!(ok.problem(), None);
        assert!(Backoff::exponential(Duration::ZERO, MS).problem().is_some());
        assert!(Backoff::exponential(2 * MS, MS).problem().is_some());
        assert!(ok.jitter(1.5).problem().is_some());
        assert!(ok.jitter(f64::NAN).problem().is_some());
        assert!(ok.max_attempts(0).problem().is_some());
    }
}
