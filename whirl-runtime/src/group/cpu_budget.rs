//! A group's CPU budget (AppBackplane's "CPU limitation"): the handling time a group's workers
//! may spend per integration period, and the governor that enforces it.
//!
//! A group built with [`GroupBuilder::cpu_budget`](crate::GroupBuilder::cpu_budget) times every
//! turn its workers run (two clock reads per turn, only in such a group) and charges the time
//! to the current period. Once the period's allowance is spent, each of its workers finishes
//! the turn it is in and then waits, parked on a condition variable, until the next period
//! begins (a real *tick*). Nothing is dropped: queued processes stay queued and run when
//! the budget is re-armed. Overspending (a turn that ran past the allowance) is carried into
//! the next period, so long turns cannot exceed the share over time.
//!
//! **Virtual tick.** A budget exists to leave CPU to the rest of the runtime. When nobody else
//! wants it — every other group of the runtime has no message queued and no turn running, or
//! is itself waiting on its own budget — a waiting worker re-arms its group's allowance at once
//! instead of leaving the CPU idle until the tick (AppBackplane re-arms its quotas the same
//! way). Waiting workers look for that every twentieth of a period (between 1 and 10 ms);
//! [`CpuBudget::virtual_ticks`] turns it off, making the budget a hard cap.
//!
//! On the runtime's shared workers a worker never waits for a group's budget: it runs other
//! groups' turns, passing the spent group over until its next tick or a virtual tick; each
//! such spell counts as one throttling, and its length as time throttled.
//!
//! Shutdown wakes waiting workers at once, and a stopped group ignores its budget, so a
//! shutdown never waits for a tick. A kill request to a process of a waiting group takes
//! effect when the process next runs, at the latest at the next tick.

use std::fmt;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed};
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::control::CpuBudgetStats;

/// How much CPU a group may use: a `share` of the machine's cores over each integration
/// `period`.
///
/// Per period, the group's workers together may spend `share × period × cores` of handling
/// time (the wall-clock time of the turns they run), where `cores` is the number of cores the
/// operating system reports ([`std::thread::available_parallelism`]) unless set with
/// [`cores`](CpuBudget::cores). So `CpuBudget::new(0.25, 100 ms)` on a 4-core machine lets a
/// group spend 100 ms of handling time per 100 ms period: one core's worth, a quarter of the
/// machine, whether it runs on one thread or four.
///
/// Handling time is wall-clock time, as AppBackplane times its events: a turn preempted by
/// other programs is charged for the time it was off the CPU too, so on an oversubscribed
/// machine the group gets less CPU than its share, never more.
///
/// ```
/// use std::time::Duration;
/// use whirl::scheduler::{CpuBudget, CpuBudgetError};
///
/// let budget = CpuBudget::new(0.25, Duration::from_millis(100))?.cores(4);
/// assert_eq!(budget.allowance(), Duration::from_millis(100));
/// assert!(matches!(
///     CpuBudget::new(1.5, Duration::from_secs(1)),
///     Err(CpuBudgetError::Share { .. })
/// ));
/// # Ok::<(), CpuBudgetError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CpuBudget {
    share: f64,
    period: Duration,
    cores: Option<usize>,
    virtual_ticks: bool,
}

impl CpuBudget {
    /// A budget of `share` (in `(0, 1]`) of the machine's cores per `period` (above zero),
    /// with virtual ticks on.
    pub fn new(share: f64, period: Duration) -> Result<Self, CpuBudgetError> {
        if !(share > 0.0 && share <= 1.0) {
            return Err(CpuBudgetError::Share { share });
        }
        if period.is_zero() {
            return Err(CpuBudgetError::Period { period });
        }
        Ok(CpuBudget {
            share,
            period,
            cores: None,
            virtual_ticks: true,
        })
    }

    /// This budget counted against `cores` cores instead of the machine's (at least 1: 0
    /// counts as 1). `CpuBudget::new(0.5, period)?.cores(1)` allows half a core.
    pub fn cores(mut self, cores: usize) -> Self {
        self.cores = Some(cores.max(1));
        self
    }

    /// Whether a waiting group re-arms its budget early when the rest of the runtime leaves
    /// the CPU idle (default `true`; see the [module docs](crate::scheduler)). Off, the budget
    /// is a hard cap.
    pub fn virtual_ticks(mut self, enabled: bool) -> Self {
        self.virtual_ticks = enabled;
        self
    }

    /// The share of the cores.
    pub fn share(&self) -> f64 {
        self.share
    }

    /// The integration period.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// The cores the share is of.
    pub fn core_count(&self) -> usize {
        self.cores.unwrap_or_else(super::pool::default_threads)
    }

    /// The handling time the group may spend per period: `share × period × cores`.
    pub fn allowance(&self) -> Duration {
        self.period.mul_f64(self.share * self.core_count() as f64)
    }
}

/// Why a [`CpuBudget`] was refused.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum CpuBudgetError {
    /// The share is not in `(0, 1]` (or is not a number).
    Share {
        /// The share asked for.
        share: f64,
    },
    /// The period is zero.
    Period {
        /// The period asked for.
        period: Duration,
    },
}

impl fmt::Display for CpuBudgetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CpuBudgetError::Share { share } => {
                write!(f, "a CPU share must be above 0 and at most 1, not {share}")
            }
            CpuBudgetError::Period { period } => {
                write!(
                    f,
                    "an integration period must be above zero, not {period:?}"
                )
            }
        }
    }
}

impl std::error::Error for CpuBudgetError {}

/// Enforces a group's [`CpuBudget`]: charged by its workers after each turn, consulted before
/// each.
pub(crate) struct CpuGovernor {
    budget: CpuBudget,
    allowance: u64,
    period: u64,
    epoch: Instant,
    /// The period charges go to, counted from `epoch`.
    period_index: AtomicU64,
    /// Handling time charged since the last tick, real or virtual (nanoseconds).
    spent: AtomicU64,
    spent_total: AtomicU64,
    ticks: AtomicU64,
    virtual_ticks: AtomicU64,
    throttled: AtomicU64,
    throttled_nanos: AtomicU64,
    /// Workers waiting now.
    waiting: AtomicUsize,
    /// On shared workers: when the group was first passed over for its budget (nanoseconds
    /// since `epoch`, plus one), 0 while it is not.
    held_since: AtomicU64,
    lock: Mutex<()>,
    tick: Condvar,
}

impl CpuGovernor {
    pub(crate) fn new(budget: CpuBudget) -> Self {
        CpuGovernor {
            budget,
            allowance: budget.allowance().as_nanos().max(1) as u64,
            period: budget.period.as_nanos().clamp(1, u128::from(u64::MAX)) as u64,
            epoch: Instant::now(),
            period_index: AtomicU64::new(0),
            spent: AtomicU64::new(0),
            spent_total: AtomicU64::new(0),
            ticks: AtomicU64::new(0),
            virtual_ticks: AtomicU64::new(0),
            throttled: AtomicU64::new(0),
            throttled_nanos: AtomicU64::new(0),
            waiting: AtomicUsize::new(0),
            held_since: AtomicU64::new(0),
            lock: Mutex::new(()),
            tick: Condvar::new(),
        }
    }

    fn index_at(&self, at: Instant) -> u64 {
        (at.saturating_duration_since(self.epoch).as_nanos() / u128::from(self.period)) as u64
    }

    /// Starts the period `at` falls in, if it has not started yet: the allowance is re-armed,
    /// minus what earlier periods overspent.
    fn roll(&self, at: Instant) {
        let index = self.index_at(at);
        let current = self.period_index.load(Acquire);
        if index <= current
            || self
                .period_index
                .compare_exchange(current, index, AcqRel, Relaxed)
                .is_err()
        {
            return;
        }
        let elapsed = index - current;
        let credit = self.allowance.saturating_mul(elapsed);
        let _ = self
            .spent
            .fetch_update(AcqRel, Acquire, |s| Some(s.saturating_sub(credit)));
        self.ticks.fetch_add(elapsed, Relaxed);
    }

    /// Whether the group has spent its allowance, as of `at` (a worker about to run a turn).
    #[inline]
    pub(crate) fn exhausted(&self, at: Instant) -> bool {
        self.roll(at);
        self.spent.load(Acquire) >= self.allowance
    }

    /// Charges a turn that took `elapsed`.
    #[inline]
    pub(crate) fn charge(&self, elapsed: Duration) {
        let nanos = elapsed.as_nanos().min(u128::from(u64::MAX)) as u64;
        self.spent.fetch_add(nanos, AcqRel);
        self.spent_total.fetch_add(nanos, Relaxed);
    }

    /// Waits until the allowance is re-armed (a tick, or a virtual tick when `others_idle`
    /// says the rest of the runtime leaves the CPU idle) or `stopped` says the group stopped.
    /// The caller is one of the group's workers, holding no process.
    pub(crate) fn wait(&self, stopped: impl Fn() -> bool, others_idle: impl Fn() -> bool) {
        let start = Instant::now();
        self.throttled.fetch_add(1, Relaxed);
        self.waiting.fetch_add(1, AcqRel);
        let poll = self.poll();
        loop {
            let now = Instant::now();
            if stopped() || !self.exhausted(now) {
                break;
            }
            if self.budget.virtual_ticks && others_idle() {
                if self.virtual_tick(&others_idle) {
                    self.wake_all();
                }
                continue;
            }
            let next = self.period_index.load(Acquire).saturating_add(1);
            let next_tick = self.epoch + Duration::from_nanos(next.saturating_mul(self.period));
            let deadline = next_tick.min(now + poll);
            let mut guard = self.lock.lock();
            // Checked under the lock `wake_all` takes: a stop cannot slip between check and wait.
            if stopped() {
                break;
            }
            self.tick.wait_until(&mut guard, deadline);
        }
        self.waiting.fetch_sub(1, AcqRel);
        let waited = start.elapsed().as_nanos().min(u128::from(u64::MAX)) as u64;
        self.throttled_nanos.fetch_add(waited, Relaxed);
    }

    /// On shared workers: the group has work but its budget is spent, so a worker passes it
    /// over. The first pass-over of a spell counts one throttling (the spell's length is added
    /// when the group runs again: [`CpuGovernor::resumed`]). Says how long until a worker
    /// should look again: the next tick, or sooner to check for a virtual tick.
    pub(crate) fn passed_over(&self, now: Instant) -> Duration {
        let index = self.period_index.load(Acquire);
        let next_tick =
            self.epoch + Duration::from_nanos(index.saturating_add(1).saturating_mul(self.period));
        let since = now.saturating_duration_since(self.epoch).as_nanos() as u64 + 1;
        if self.held_since.load(Relaxed) == 0
            && self
                .held_since
                .compare_exchange(0, since, AcqRel, Relaxed)
                .is_ok()
        {
            self.throttled.fetch_add(1, Relaxed);
        }
        next_tick.saturating_duration_since(now).min(self.poll())
    }

    /// On shared workers: a turn of the group is about to run; ends a spell of being passed
    /// over, if one was going on, adding its length to the time throttled.
    #[inline]
    pub(crate) fn resumed(&self, now: Instant) {
        if self.held_since.load(Relaxed) == 0 {
            return;
        }
        let since = self.held_since.swap(0, AcqRel);
        if since != 0 {
            let at = now.saturating_duration_since(self.epoch).as_nanos() as u64 + 1;
            self.throttled_nanos
                .fetch_add(at.saturating_sub(since), Relaxed);
        }
    }

    /// Re-arms a spent allowance at once, if virtual ticks are on and `others_idle` says the
    /// rest of the runtime leaves the CPU idle; returns whether it did.
    pub(crate) fn virtual_tick(&self, others_idle: impl Fn() -> bool) -> bool {
        if !self.budget.virtual_ticks || !others_idle() {
            return false;
        }
        let spent = self.spent.load(Acquire);
        let rearmed = spent >= self.allowance
            && self
                .spent
                .compare_exchange(spent, 0, AcqRel, Relaxed)
                .is_ok();
        if rearmed {
            self.virtual_ticks.fetch_add(1, Relaxed);
        }
        rearmed
    }

    /// How often a waiting worker looks for a virtual tick: a twentieth of a period, between
    /// 1 and 10 ms.
    fn poll(&self) -> Duration {
        (self.budget.period / 20).clamp(Duration::from_millis(1), Duration::from_millis(10))
    }

    /// Whether the allowance is spent (without starting a new period).
    pub(crate) fn is_spent(&self) -> bool {
        self.spent.load(Acquire) >= self.allowance
    }

    /// Wakes every waiting worker (shutdown, a virtual tick).
    pub(crate) fn wake_all(&self) {
        let _guard = self.lock.lock();
        self.tick.notify_all();
    }

    /// Whether every worker that could run is waiting on the budget: for other groups'
    /// virtual-tick checks.
    pub(crate) fn is_waiting(&self) -> bool {
        self.waiting.load(Acquire) > 0 && self.spent.load(Acquire) >= self.allowance
    }

    /// Its figures, as of the last turn a worker began (periods roll when a worker looks).
    pub(crate) fn stats(&self) -> CpuBudgetStats {
        CpuBudgetStats {
            share: self.budget.share,
            period: self.budget.period,
            allowance: Duration::from_nanos(self.allowance),
            spent: Duration::from_nanos(self.spent_total.load(Relaxed)),
            spent_this_period: Duration::from_nanos(self.spent.load(Relaxed)),
            periods: self.ticks.load(Relaxed),
            throttled: self.throttled.load(Relaxed),
            throttled_time: Duration::from_nanos(self.throttled_nanos.load(Relaxed)),
            virtual_ticks: self.virtual_ticks.load(Relaxed),
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn budgets_are_validated() {
        let period = Duration::from_millis(10);
        for share in [0.0, -0.5, 1.01, f64::NAN, f64::INFINITY] {
            let err = CpuBudget::new(share, period).unwrap_err();
            assert!(matches!(err, CpuBudgetError::Share { .. }), "{share}");
            assert!(err.to_string().contains("at most 1"));
        }
        let err = CpuBudget::new(0.5, Duration::ZERO).unwrap_err();
        assert_eq!(
            err,
            CpuBudgetError::Period {
                period: Duration::ZERO
            }
        );
        let b = CpuBudget::new(1.0, period).unwrap().cores(0);
        assert_eq!((b.core_count(), b.allowance()), (1, period));
        let b = CpuBudget::new(0.25, Duration::from_secs(1))
            .unwrap()
            .cores(2);
        assert_eq!(b.allowance(), Duration::from_millis(500));
    }

    #[test]
    fn charges_exhaust_and_ticks_re_arm_with_overspend_carried() {
        let budget = CpuBudget::new(0.5, Duration::from_millis(100))
            .unwrap()
            .cores(1);
        let g = CpuGovernor::new(budget);
        let t0 = g.epoch;
        assert!(!g.exhausted(t0));
        g.charge(Duration::from_millis(30));
        assert!(!g.exhausted(t0 + Duration::from_millis(10)));
        // One long turn overspends: 30 + 40 = 70 ms of a 50 ms allowance.
        g.charge(Duration::from_millis(40));
        assert!(g.exhausted(t0 + Duration::from_millis(20)));
        // Next period: 20 ms overspent are carried, 30 ms left.
        assert!(!g.exhausted(t0 + Duration::from_millis(100)));
        assert_eq!(g.spent.load(Relaxed), 20_000_000);
        g.charge(Duration::from_millis(30));
        assert!(g.exhausted(t0 + Duration::from_millis(150)));
        // Three periods later, everything is forgiven (credit is not banked).
        assert!(!g.exhausted(t0 + Duration::from_millis(450)));
        assert_eq!(g.spent.load(Relaxed), 0);
        let stats = g.stats();
        assert_eq!(stats.spent, Duration::from_millis(100));
        assert_eq!(stats.periods, 4);
        assert_eq!(stats.allowance, Duration::from_millis(50));
    }
}
