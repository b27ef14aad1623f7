//! A budget on the estimated cost of admitted, un-handled messages, optionally adjusted by a
//! response-time feedback loop.

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;

use parking_lot::Mutex;

use super::feedback::{ControllerParams, Window};
use super::{Completion, MessagePredicate, Offer};
use crate::time::{Clock, SystemClock};

struct Feedback<C> {
    clock: C,
    /// The clock's reading at construction ([`Clock::nanos`]).
    origin: u64,
    params: ControllerParams,
    window: Mutex<Window>,
}

/// Admits a message while the total [cost](Offer::cost) of the messages it admitted and that
/// are not yet handled stays within a budget: Whirlwind's cost predicate (section III-D).
///
/// The outstanding cost goes up on admission and down when the runtime reports the message
/// done through [`observe`](MessagePredicate::observe) (handled or dead-lettered), so the
/// predicate is only meaningful once that reporting is wired. A message costlier than the
/// whole budget is admitted when nothing else is outstanding, so it is not starved.
///
/// With [`adaptive`](CostBudget::adaptive), the budget itself follows SEDA's response-time
/// controller: divided by `adj_d` when the smoothed 90th-percentile response time is over
/// target, increased by `adj_i * -(err - c_i)` (in cost units) when well under, between
/// `rate_min` and `rate_max` (here: the budget's bounds).
///
/// `admit` is one compare-and-swap loop on an atomic; `observe` takes a short lock only when
/// adaptive.
///
/// ```
/// use std::time::Duration;
/// use whirl::admission::{Completion, CostBudget, MessagePredicate, Offer};
/// use whirl::control::MessageCounts;
///
/// let budget = CostBudget::new(10);
/// let offer = |cost| Offer::detached::<()>(None, cost, MessageCounts::default());
/// assert!(budget.admit(&offer(6)));
/// assert!(!budget.admit(&offer(6))); // 12 > 10
/// assert!(budget.admit(&offer(4)));
/// budget.observe(&Completion::handled(None, 6, Duration::from_millis(1)));
/// assert_eq!(budget.outstanding(), 4);
/// ```
pub struct CostBudget<C: Clock = SystemClock> {
    outstanding: AtomicU64,
    budget: AtomicU64,
    feedback: Option<Feedback<C>>,
}

impl CostBudget<SystemClock> {
    /// A fixed budget.
    pub fn new(budget: u64) -> Self {
        CostBudget {
            outstanding: AtomicU64::new(0),
            budget: AtomicU64::new(budget),
            feedback: None,
        }
    }
}

impl<C: Clock> CostBudget<C> {
    /// A budget adjusted by SEDA's response-time controller with `params` (use
    /// [`ControllerParams::bounds`] for the budget's minimum and maximum, where it starts),
    /// reading time from `clock`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use whirl::admission::{CostBudget, ControllerParams};
    /// use whirl::time::SystemClock;
    ///
    /// let params = ControllerParams::seda(Duration::from_millis(20)).bounds(100.0, 100_000.0);
    /// let budget = CostBudget::adaptive(params, SystemClock);
    /// assert_eq!(budget.budget(), 100_000);
    /// ```
    pub fn adaptive(params: ControllerParams, clock: C) -> Self {
        let origin = clock.nanos();
        let initial = params.clamp(params.initial_rate);
        CostBudget {
            outstanding: AtomicU64::new(0),
            budget: AtomicU64::new(initial as u64),
            feedback: Some(Feedback {
                clock,
                origin,
                window: Mutex::new(Window::new(&params)),
                params,
            }),
        }
    }

    /// The current budget.
    pub fn budget(&self) -> u64 {
        self.budget.load(Relaxed)
    }

    /// Changes the budget (what a custom feedback loop would call).
    pub fn set_budget(&self, budget: u64) {
        self.budget.store(budget, Relaxed);
    }

    /// The cost admitted and not yet reported done.
    pub fn outstanding(&self) -> u64 {
        self.outstanding.load(Relaxed)
    }

    fn release(&self, cost: u64) {
        let _ = self
            .outstanding
            .fetch_update(Relaxed, Relaxed, |o| Some(o.saturating_sub(cost)));
    }
}

impl<C: Clock> MessagePredicate for CostBudget<C> {
    fn observes(&self) -> bool {
        true
    }

    #[inline]
    fn admit(&self, offer: &Offer<'_>) -> bool {
        let cost = offer.cost();
        let budget = self.budget.load(Relaxed);
        self.outstanding
            .fetch_update(Relaxed, Relaxed, |o| {
                let after = o.saturating_add(cost);
                (o == 0 || after <= budget).then_some(after)
            })
            .is_ok()
    }

    fn observe(&self, done: &Completion<'_>) {
        self.release(done.cost());
        let (Some(fb), Some(sample)) = (&self.feedback, done.response_time()) else {
            return;
        };
        let now = fb.clock.nanos().saturating_sub(fb.origin);
        let mut window = fb.window.lock();
        if let Some(err) = window.record(&fb.params, sample, now) {
            let current = self.budget.load(Relaxed) as f64;
            if let Some(next) = fb.params.adjust(current, err, true) {
                self.budget.store(next.round() as u64, Relaxed);
            }
        }
    }

    fn overruled(&self, offer: &Offer<'_>, admitted: bool) {
        if admitted {
            self.outstanding.fetch_add(offer.cost(), Relaxed);
        } else {
            self.release(offer.cost());
        }
    }
}

impl<C: Clock> std::fmt::Debug for CostBudget<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CostBudget")
            .field("budget", &self.budget())
            .field("outstanding", &self.outstanding())
            .field("adaptive", &self.feedback.is_some())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::time::Duration;

    use super::super::test_util::offer;
    use super::*;
    use crate::time::ManualClock;

    #[test]
    fn budget_bounds_outstanding_cost() {
        let b = CostBudget::new(10);
        assert!(b.admit(&offer(None, 10, 0)));
        assert!(!b.admit(&offer(None, 1, 0)));
        b.observe(&Completion::dead_lettered(None, 10));
        assert_eq!(b.outstanding(), 0);
        // Larger than the budget, but nothing outstanding: admitted, then nothing else.
        assert!(b.admit(&offer(None, 50, 0)));
        assert!(!b.admit(&offer(None, 1, 0)));
        b.set_budget(100);
        assert!(b.admit(&offer(None, 50, 0)));
        assert_eq!(b.outstanding(), 100);
    }

    #[test]
    fn concurrent_senders_never_exceed_the_budget() {
        let b = CostBudget::new(1000);
        let admitted = AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..1000 {
                        if b.admit(&offer(None, 1, 0)) {
                            admitted.fetch_add(1, Relaxed);
                        }
                    }
                });
            }
        });
        assert_eq!(admitted.load(Relaxed), 1000);
        assert_eq!(b.outstanding(), 1000);
    }

    #[test]
    fn overruled_keeps_the_reservation_in_line() {
        let b = CostBudget::new(10);
        let o = offer(None, 4, 0);
        assert!(b.admit(&o));
        b.overruled(&o, false);
        assert_eq!(b.outstanding(), 0);
        b.overruled(&o, true);
        assert_eq!(b.outstanding(), 4);
    }

    #[test]
    fn feedback_shrinks_and_grows_the_budget() {
        let mut p = ControllerParams::seda(Duration::from_millis(100)).bounds(10.0, 1000.0);
        p.nreq = 1;
        p.adj_i = 50.0;
        let b = CostBudget::adaptive(p, ManualClock::new());
        assert_eq!(b.budget(), 1000);
        b.observe(&Completion::handled(None, 0, Duration::from_millis(500)));
        assert_eq!(b.budget(), 833);
        for _ in 0..100 {
            b.observe(&Completion::handled(None, 0, Duration::from_millis(500)));
        }
        assert_eq!(b.budget(), 10);
        for _ in 0..20 {
            b.observe(&Completion::handled(None, 0, Duration::from_millis(1)));
        }
        assert!(b.budget() > 10, "{}", b.budget());
    }
}
