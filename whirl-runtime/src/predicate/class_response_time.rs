//! SEDA's class-based response-time controller (dissertation chapter 7, section 2.3).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicU32};
use std::time::Duration;

use parking_lot::Mutex;

use super::feedback::{ControllerParams, Window};
use super::token_bucket::Bucket;
use super::CoarseClock;
use super::{Completion, MessagePredicate, Offer};
use crate::clock::Clock;

struct Class {
    bucket: Bucket,
    window: Mutex<Window>,
    target: Duration,
    /// Whether this class's last controller run found it over target: lower classes may not
    /// increase their rates meanwhile.
    over_target: AtomicBool,
    /// SEDA's `lc`: runs over target with every lower class already at `rate_min`.
    lc: AtomicU32,
}

/// SEDA's multiclass overload controller: one [`ResponseTime`](super::ResponseTime)
/// controller and token bucket per principal class, where a class that misses its target
/// first cuts the rates of the classes below it.
///
/// Classes are `0..classes`, **higher is more important**; a message's class is its
/// destination principal's [`class`](crate::Principal::class) (0 without a principal;
/// classes beyond the last count as the last).
///
/// When class `c` is over target (`err > err_d`), every lower class's rate is divided by
/// `adjlo_d` (default 10); only once all of them are at `rate_min` does class `c` count runs
/// over target, and after `lc_thresh` (default 20) it divides its own rate by `adj_d`. Class 0
/// has no lower class and cuts its own rate directly, as the single-class controller does.
/// Rates increase as in the single-class controller, except that a class may not increase
/// while a higher class is over its target. Defaults: [`ControllerParams::seda`].
///
/// ```
/// use std::time::Duration;
/// use whirl_runtime::{ClassResponseTime, Completion, ControllerParams, ManualClock,
///                     MessagePredicate, Principal};
///
/// let params = ControllerParams::seda(Duration::from_millis(100));
/// let ctl = ClassResponseTime::with_clock(2, params, ManualClock::new());
/// let gold = Principal::new(1, 0, 1);
/// // Gold misses its target: bronze (class 0) pays first.
/// for _ in 0..100 {
///     ctl.observe(&Completion::handled(Some(&gold), 1, Duration::from_millis(400)));
/// }
/// assert_eq!(ctl.rate(0), 500.0);
/// assert_eq!(ctl.rate(1), 5000.0);
/// ```
pub struct ClassResponseTime<C: Clock = CoarseClock> {
    clock: C,
    /// The clock's reading at construction ([`Clock::nanos`]).
    origin: u64,
    params: ControllerParams,
    classes: Box<[Class]>,
}

impl ClassResponseTime<CoarseClock> {
    /// `classes` classes (at least 1) sharing figure 50's parameters and `target`, on the
    /// shared [`CoarseClock`].
    pub fn new(classes: u16, target: Duration) -> Self {
        ClassResponseTime::with_clock(
            classes,
            ControllerParams::seda(target),
            CoarseClock::shared(),
        )
    }
}

impl<C: Clock> ClassResponseTime<C> {
    /// `classes` classes (at least 1) with the given parameters, reading time from `clock`.
    pub fn with_clock(classes: u16, params: ControllerParams, clock: C) -> Self {
        let origin = clock.nanos();
        let rate = params.clamp(params.initial_rate);
        let classes = (0..classes.max(1))
            .map(|_| Class {
                bucket: Bucket::new(rate, params.depth),
                window: Mutex::new(Window::new(&params)),
                target: params.target,
                over_target: AtomicBool::new(false),
                lc: AtomicU32::new(0),
            })
            .collect();
        ClassResponseTime {
            clock,
            origin,
            params,
            classes,
        }
    }

    /// Gives `class` its own 90th-percentile target (SEDA's `target^c`); ignored for a class
    /// out of range.
    pub fn target(mut self, class: u16, target: Duration) -> Self {
        if let Some(c) = self.classes.get_mut(usize::from(class)) {
            c.target = target;
        }
        self
    }

    /// The number of classes.
    pub fn classes(&self) -> u16 {
        // Built from a u16 count.
        self.classes.len() as u16
    }

    /// The current admission rate of `class` (clamped to the last class), per second.
    pub fn rate(&self, class: u16) -> f64 {
        self.class(class).bucket.rate()
    }

    fn index(&self, class: u16) -> usize {
        usize::from(class).min(self.classes.len() - 1)
    }

    fn class(&self, class: u16) -> &Class {
        &self.classes[self.index(class)]
    }

    /// One controller run for class `c` with relative error `err`.
    fn run(&self, c: usize, err: f64, at: u64) {
        let p = &self.params;
        let me = &self.classes[c];
        if err > p.err_d {
            me.over_target.store(true, Relaxed);
            let lower = &self.classes[..c];
            if lower.is_empty() {
                me.bucket.set_rate(p.clamp(me.bucket.rate() / p.adj_d), at);
            } else if lower
                .iter()
                .any(|l| l.bucket.rate() > p.rate_min * (1.0 + 1e-9))
            {
                for l in lower {
                    l.bucket.set_rate(p.clamp(l.bucket.rate() / p.adjlo_d), at);
                }
                me.lc.store(0, Relaxed);
            } else if me.lc.fetch_add(1, Relaxed) + 1 >= p.lc_thresh {
                me.lc.store(0, Relaxed);
                me.bucket.set_rate(p.clamp(me.bucket.rate() / p.adj_d), at);
            }
        } else {
            me.over_target.store(false, Relaxed);
            let higher_over = self.classes[c + 1..]
                .iter()
                .any(|h| h.over_target.load(Relaxed));
            if let Some(rate) = p.adjust(me.bucket.rate(), err, !higher_over) {
                me.bucket.set_rate(rate, at);
            }
        }
    }
}

impl<C: Clock> MessagePredicate for ClassResponseTime<C> {
    fn observes(&self) -> bool {
        true
    }

    #[inline]
    fn admit(&self, offer: &Offer<'_>) -> bool {
        self.class(offer.class())
            .bucket
            .try_take(self.clock.nanos().saturating_sub(self.origin), 1)
    }

    fn observe(&self, done: &Completion<'_>) {
        let Some(sample) = done.response_time() else {
            return;
        };
        let c = self.index(done.class());
        let class = &self.classes[c];
        let now = self.clock.nanos().saturating_sub(self.origin);
        let mut params = std::borrow::Cow::Borrowed(&self.params);
        if class.target != self.params.target {
            params.to_mut().target = class.target;
        }
        // The class's window lock is held across the run so that one class's runs are
        // sequential; other classes' rates are only touched through atomics.
        let mut window = class.window.lock();
        if let Some(err) = window.record(&params, sample, now) {
            self.run(c, err, now);
        }
    }

    fn overruled(&self, offer: &Offer<'_>, admitted: bool) {
        if !admitted {
            self.class(offer.class()).bucket.give_back(1);
        }
    }
}

impl<C: Clock> std::fmt::Debug for ClassResponseTime<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let rates: Vec<f64> = self.classes.iter().map(|c| c.bucket.rate()).collect();
        f.debug_struct("ClassResponseTime")
            .field("rates", &rates)
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::test_util::offer;
    use super::*;
    use crate::clock::ManualClock;
    use crate::principal::Principal;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn three_classes() -> ClassResponseTime<ManualClock> {
        let mut p = ControllerParams::seda(ms(100));
        p.nreq = 1;
        ClassResponseTime::with_clock(3, p, ManualClock::new())
    }

    fn feed(ctl: &ClassResponseTime<ManualClock>, who: &Principal, rt: Duration, runs: usize) {
        for _ in 0..runs {
            ctl.observe(&Completion::handled(Some(who), 1, rt));
        }
    }

    #[test]
    fn lower_classes_are_cut_first_by_adjlo_d() {
        let ctl = three_classes();
        let gold = Principal::new(1, 0, 2);
        feed(&ctl, &gold, ms(500), 1);
        assert_eq!(ctl.rate(0), 500.0);
        assert_eq!(ctl.rate(1), 500.0);
        assert_eq!(ctl.rate(2), 5000.0);
        // Until every lower class is at rate_min, gold keeps its rate.
        feed(&ctl, &gold, ms(500), 4);
        assert!((ctl.rate(0) - 0.05).abs() < 1e-12);
        assert!((ctl.rate(1) - 0.05).abs() < 1e-12);
        assert_eq!(ctl.rate(2), 5000.0);
        // Then lc_thresh (20) runs over target before gold cuts its own rate by adj_d.
        feed(&ctl, &gold, ms(500), 19);
        assert_eq!(ctl.rate(2), 5000.0);
        feed(&ctl, &gold, ms(500), 1);
        assert!((ctl.rate(2) - 5000.0 / 1.2).abs() < 1e-6);
    }

    #[test]
    fn lowest_class_cuts_itself_and_leaves_others() {
        let ctl = three_classes();
        let bronze = Principal::new(1, 0, 0);
        feed(&ctl, &bronze, ms(500), 1);
        assert!((ctl.rate(0) - 5000.0 / 1.2).abs() < 1e-6);
        assert_eq!(ctl.rate(1), 5000.0);
        assert_eq!(ctl.rate(2), 5000.0);
    }

    #[test]
    fn no_increase_while_a_higher_class_is_over_target() {
        let ctl = three_classes();
        let bronze = Principal::new(1, 0, 0);
        let gold = Principal::new(2, 0, 2);
        feed(&ctl, &gold, ms(500), 1); // bronze down to 500, gold over target
        let cut = ctl.rate(0);
        feed(&ctl, &bronze, ms(1), 5); // bronze is fast, but gold is over target
        assert_eq!(ctl.rate(0), cut);
        feed(&ctl, &gold, ms(1), 10); // gold's smoothed estimate falls under target
        let cut = ctl.rate(0);
        feed(&ctl, &bronze, ms(1), 1);
        assert!(ctl.rate(0) > cut);
    }

    #[test]
    fn admission_is_per_class_bucket() {
        let mut p = ControllerParams::seda(ms(100));
        p.nreq = 1;
        p.depth = 1;
        p.initial_rate = 1.0;
        let ctl = ClassResponseTime::with_clock(2, p, ManualClock::new()).target(1, ms(200));
        let bronze = Principal::new(1, 0, 0);
        let gold = Principal::new(2, 0, 1);
        let unknown = Principal::new(3, 0, 9); // beyond the last class: counts as gold
        assert!(ctl.admit(&offer(Some(&bronze), 1, 0)));
        assert!(!ctl.admit(&offer(Some(&bronze), 1, 0)));
        assert!(!ctl.admit(&offer(None, 1, 0))); // no principal: class 0
        assert!(ctl.admit(&offer(Some(&gold), 1, 0)));
        assert!(!ctl.admit(&offer(Some(&unknown), 1, 0)));
        ctl.overruled(&offer(Some(&gold), 1, 0), false);
        assert!(ctl.admit(&offer(Some(&unknown), 1, 0)));
        // Gold's own target is 200 ms: 150 ms is within it (no cut of bronze).
        ctl.observe(&Completion::handled(Some(&gold), 1, ms(150)));
        assert_eq!(ctl.rate(0), 1.0);
        assert_eq!(ctl.classes(), 2);
    }
}
