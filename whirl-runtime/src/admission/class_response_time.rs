//! SEDA's class-based response-time controller (dissertation chapter 7, section 2.3).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64};
use std::time::Duration;

use parking_lot::Mutex;

use super::feedback::{ControllerParams, Run, Window};
use super::token_bucket::Bucket;
use super::{Completion, MessagePredicate, Offer};
use crate::time::Clock;
use crate::time::CoarseClock;

struct Class {
    bucket: Bucket,
    window: Mutex<Window>,
    target: Duration,
    /// Whether this class's last controller run found it over target: lower classes may not
    /// increase their rates meanwhile.
    over_target: AtomicBool,
    /// SEDA's `lc`: runs over target with every lower class already at `rate_min`.
    lc: AtomicU32,
    /// Work of this class admitted before this instant is not judged (nanos; a higher class
    /// that cuts this one sets it, the class's own `observe` applies it to its window).
    horizon: AtomicU64,
    /// The class's completion rate (`f64` bits, 0 until measured), for a higher class
    /// cutting this one.
    throughput: AtomicU64,
    /// The completion rate measured at this class's last cut (`f64` bits, 0 for none): the
    /// scale of its additive increase and, after a cut of its own, divided by `adj_d`, the
    /// rate it starts from (a cut by a higher class drops that floor).
    anchor: AtomicU64,
    /// Whether the increase starts from `anchor / adj_d`.
    floor: AtomicBool,
    /// After cuts by higher classes (`f64` bits, 0 for none): the rate of the first of them,
    /// which the class gets back as soon as the class that cut it is under target again.
    restore: AtomicU64,
}

fn load_f64(a: &AtomicU64) -> Option<f64> {
    let v = f64::from_bits(a.load(Relaxed));
    (v > 0.0).then_some(v)
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
/// With the single-class controller's departures from the dissertation (see
/// [`ControllerParams`]' module docs): a cut divides the lower of a class's rate and its
/// measured completion rate; after any cut a class's own decisions wait for its work
/// admitted after the cut (and so do those of the lower classes it cut); the additive
/// increase is scaled to the class's throughput, and a class that cut its own rate starts
/// increasing from that cut's rate. Likewise, once a class that cut the classes below it is
/// under target again, they get back the rate of the first of those cuts (the further ones
/// drained the backlog that built while the response times lagged; without this, a start-up
/// overload left them at `rate_min`, where they see too few completions to climb back), and
/// climb additively from there.
///
/// ```
/// use std::time::Duration;
/// use whirl::admission::{ClassResponseTime, Completion, ControllerParams, MessagePredicate};
/// use whirl::time::ManualClock;
/// use whirl::Principal;
///
/// let params = ControllerParams::seda(Duration::from_millis(100)).bounds(0.05, 5000.0);
/// let ctl = ClassResponseTime::with_clock(2, params, ManualClock::new());
/// let gold = Principal::builder(1).class(1).build().expect("a valid principal");
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
                bucket: Bucket::adaptive(rate, params.depth),
                window: Mutex::new(Window::new(&params)),
                target: params.target,
                over_target: AtomicBool::new(false),
                lc: AtomicU32::new(0),
                horizon: AtomicU64::new(0),
                throughput: AtomicU64::new(0),
                anchor: AtomicU64::new(0),
                floor: AtomicBool::new(false),
                restore: AtomicU64::new(0),
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

    /// Class `c` cuts its own rate by `adj_d` from its effective rate.
    fn cut_own(&self, me: &Class, run: &Run, at: u64) {
        let p = &self.params;
        let rate = me.bucket.rate();
        if let Some(thr) = run.throughput {
            me.anchor.store(thr.to_bits(), Relaxed);
            me.floor.store(true, Relaxed);
        }
        me.bucket
            .set_rate(p.clamp(p.effective(rate, run.throughput) / p.adj_d), at);
    }

    /// One controller run for class `c`; returns whether it cut a rate (the caller then stops
    /// judging class `c`'s work admitted before the cut took effect).
    fn run(&self, c: usize, run: &Run, at: u64) -> bool {
        let p = &self.params;
        let me = &self.classes[c];
        if run.err > p.err_d {
            me.over_target.store(true, Relaxed);
            let lower = &self.classes[..c];
            if lower.is_empty() {
                self.cut_own(me, run, at);
                return true;
            }
            if lower
                .iter()
                .any(|l| l.bucket.rate() > p.rate_min * (1.0 + 1e-9))
            {
                let until = at.saturating_add(run.samp);
                for l in lower {
                    let rate = l.bucket.rate();
                    let thr = load_f64(&l.throughput);
                    let cut = p.clamp(p.effective(rate, thr) / p.adjlo_d);
                    l.bucket.set_rate(cut, at);
                    let _ = l
                        .restore
                        .compare_exchange(0, cut.to_bits(), Relaxed, Relaxed);
                    if let Some(thr) = thr {
                        l.anchor.store(thr.to_bits(), Relaxed);
                    }
                    l.floor.store(false, Relaxed);
                    l.horizon.fetch_max(until, Relaxed);
                }
                me.lc.store(0, Relaxed);
                return true;
            }
            if me.lc.fetch_add(1, Relaxed) + 1 >= p.lc_thresh {
                me.lc.store(0, Relaxed);
                self.cut_own(me, run, at);
                return true;
            }
            false
        } else {
            me.over_target.store(false, Relaxed);
            // Under target again: the lower classes get back the rate of the first cut this
            // class made them take. The further cuts drained the backlog that lagging
            // response times let build (as for a class's own cuts, the floor below).
            for l in &self.classes[..c] {
                if let Some(rate) = load_f64(&l.restore) {
                    l.restore.store(0, Relaxed);
                    if l.bucket.rate() < rate {
                        l.bucket.set_rate(rate, at);
                    }
                }
            }
            let higher_over = self.classes[c + 1..]
                .iter()
                .any(|h| h.over_target.load(Relaxed));
            if higher_over {
                return false;
            }
            let rate = me.bucket.rate();
            let anchor = load_f64(&me.anchor);
            let floor = match anchor {
                Some(a) if me.floor.load(Relaxed) => a / p.adj_d,
                _ => 0.0,
            };
            if let Some(rate) = p.raise(rate, run.err, anchor, floor, run.span) {
                me.bucket.set_rate(rate, at);
            }
            false
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
        // sequential; other classes' state is only touched through atomics.
        let mut window = class.window.lock();
        window.defer(class.horizon.load(Relaxed));
        let run = window.observe(&params, sample, now);
        if let Some(thr) = window.throughput_at(now) {
            class.throughput.store(thr.to_bits(), Relaxed);
        }
        if let Some(run) = run {
            if self.run(c, &run, now) {
                let until = now.saturating_add(run.samp);
                class.horizon.fetch_max(until, Relaxed);
                window.defer(until);
            }
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
    use crate::principal::Principal;
    use crate::time::ManualClock;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn three_classes() -> (ClassResponseTime<ManualClock>, ManualClock) {
        let mut p = ControllerParams::seda(ms(100)).bounds(0.05, 5000.0);
        p.nreq = 1;
        let clock = ManualClock::new();
        (ClassResponseTime::with_clock(3, p, clock.clone()), clock)
    }

    /// `runs` completions for `who` taking `rt`, one a second (each judged: its work was
    /// admitted after any cut the previous one caused took effect).
    fn feed(
        ctl: &ClassResponseTime<ManualClock>,
        clock: &ManualClock,
        who: &Principal,
        rt: Duration,
        runs: usize,
    ) {
        for _ in 0..runs {
            clock.advance(Duration::from_secs(1));
            ctl.observe(&Completion::handled(Some(who), 1, rt));
        }
    }

    #[test]
    fn lower_classes_are_cut_first_by_adjlo_d() {
        let (ctl, clock) = three_classes();
        let gold = Principal::builder(1)
            .class(2)
            .build()
            .expect("a valid principal");
        feed(&ctl, &clock, &gold, ms(500), 1);
        assert_eq!(ctl.rate(0), 500.0);
        assert_eq!(ctl.rate(1), 500.0);
        assert_eq!(ctl.rate(2), 5000.0);
        // Until every lower class is at rate_min, gold keeps its rate.
        feed(&ctl, &clock, &gold, ms(500), 4);
        assert!((ctl.rate(0) - 0.05).abs() < 1e-12);
        assert!((ctl.rate(1) - 0.05).abs() < 1e-12);
        assert_eq!(ctl.rate(2), 5000.0);
        // Then lc_thresh (20) runs over target before gold cuts its own rate by adj_d, from
        // its effective rate: gold completes one message a second.
        feed(&ctl, &clock, &gold, ms(500), 19);
        assert_eq!(ctl.rate(2), 5000.0);
        feed(&ctl, &clock, &gold, ms(500), 1);
        assert!((ctl.rate(2) - 1.0 / 1.2).abs() < 1e-6, "{}", ctl.rate(2));
    }

    #[test]
    fn cuts_are_judged_on_work_admitted_after_them() {
        let (ctl, clock) = three_classes();
        let gold = Principal::builder(1)
            .class(2)
            .build()
            .expect("a valid principal");
        feed(&ctl, &clock, &gold, ms(500), 1);
        assert_eq!(ctl.rate(0), 500.0);
        // Gold's work admitted before the cut took effect (500 ms later) drains: slow, but
        // it does not cut the lower classes again.
        for _ in 0..10 {
            clock.advance(ms(10));
            ctl.observe(&Completion::handled(Some(&gold), 1, ms(600)));
        }
        assert_eq!(ctl.rate(0), 500.0);
        // Nor does bronze's own backlog from before the cut make bronze cut itself.
        let bronze = Principal::builder(2).build().expect("a valid principal");
        ctl.observe(&Completion::handled(Some(&bronze), 1, ms(700)));
        assert_eq!(ctl.rate(0), 500.0);
        // Gold's work admitted after it, still slow: cut again.
        feed(&ctl, &clock, &gold, ms(500), 1);
        assert_eq!(ctl.rate(0), 50.0);
    }

    #[test]
    fn lower_classes_get_the_first_cut_back_when_the_higher_class_recovers() {
        let (ctl, clock) = three_classes();
        let gold = Principal::builder(1)
            .class(2)
            .build()
            .expect("a valid principal");
        // Three runs of gold over target (each on work admitted after the last cut): 500,
        // 50, then 5 per second for the classes below.
        feed(&ctl, &clock, &gold, ms(500), 3);
        assert_eq!(ctl.rate(0), 5.0);
        // Gold is under target again: the backlog those cuts drained is gone, and the lower
        // classes go back to the first cut's rate.
        feed(&ctl, &clock, &gold, ms(1), 1);
        assert_eq!(ctl.rate(0), 500.0);
        assert_eq!(ctl.rate(1), 500.0);
    }

    #[test]
    fn lowest_class_cuts_itself_and_leaves_others() {
        let (ctl, clock) = three_classes();
        let bronze = Principal::builder(1).build().expect("a valid principal");
        feed(&ctl, &clock, &bronze, ms(500), 1);
        assert!((ctl.rate(0) - 5000.0 / 1.2).abs() < 1e-6);
        assert_eq!(ctl.rate(1), 5000.0);
        assert_eq!(ctl.rate(2), 5000.0);
    }

    #[test]
    fn no_increase_while_a_higher_class_is_over_target() {
        let (ctl, clock) = three_classes();
        let bronze = Principal::builder(1).build().expect("a valid principal");
        let gold = Principal::builder(2)
            .class(2)
            .build()
            .expect("a valid principal");
        feed(&ctl, &clock, &gold, ms(500), 1); // bronze down to 500, gold over target
        let cut = ctl.rate(0);
        feed(&ctl, &clock, &bronze, ms(1), 5); // bronze is fast, but gold is over target
        assert_eq!(ctl.rate(0), cut);
        feed(&ctl, &clock, &gold, ms(1), 1); // gold's estimate falls under target
        let cut = ctl.rate(0);
        feed(&ctl, &clock, &bronze, ms(1), 1);
        assert!(ctl.rate(0) > cut);
        // Cut by a higher class, bronze climbs back additively, not to where it was.
        assert!(ctl.rate(0) < 5000.0 / 1.2, "{}", ctl.rate(0));
    }

    #[test]
    fn admission_is_per_class_bucket() {
        let mut p = ControllerParams::seda(ms(100));
        p.nreq = 1;
        p.depth = 1;
        p.initial_rate = 1.0;
        let ctl = ClassResponseTime::with_clock(2, p, ManualClock::new()).target(1, ms(200));
        let bronze = Principal::builder(1).build().expect("a valid principal");
        let gold = Principal::builder(2)
            .class(1)
            .build()
            .expect("a valid principal");
        let unknown = Principal::builder(3)
            .class(9)
            .build()
            .expect("a valid principal"); // beyond the last class: counts as gold
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
