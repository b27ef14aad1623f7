//! Shedding only under overload: a gate that admits everything while the group meets a
//! response-time target, and hands admission to another predicate only while it does not.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use super::feedback::{ControllerParams, Window};
use super::{Completion, MessagePredicate, Offer, PriorityThresholds};
use crate::time::Clock;
use crate::time::CoarseClock;

/// The smallest and largest factor [`Overload`] scales its thresholds by.
const MIN_SCALE: f64 = 1.0 / 1024.0;
const MAX_SCALE: f64 = 1024.0;
/// While overloaded, with scaled thresholds, no message is admitted past this many times its
/// priority's threshold, even one `inner` would admit (a session it admitted earlier).
const CEILING: u64 = 2;
/// How long the group must keep up, refusing nothing, before it is no longer overloaded.
const DEFAULT_CALM: Duration = Duration::from_secs(3);

/// Admits everything while the group keeps up, and sheds (by `inner`'s rule) only while the
/// group's 90th-percentile response time is over a target.
///
/// A queue threshold alone sheds whenever the queue is long, even when the group drains it
/// well within anyone's patience: a burst of 64 cheap requests is not an overload. `Overload`
/// measures what overload means, the time from enqueue to completion, with SEDA's estimator
/// (the 90th percentile of each window of `nreq` completions, smoothed by `alpha`; see
/// [`ControllerParams`]), and is in one of two states:
///
/// * **Keeping up** (the start): every message is admitted, `inner` is not asked. A window
///   over target (`err > err_d`) makes the group **overloaded**.
/// * **Overloaded**: `inner` decides (typically a [`SessionConsistent`](super::SessionConsistent)
///   over [`PriorityThresholds`], shedding whole sessions, lowest priority first). A window
///   well under target (`err < err_i`) in which `inner` refused nothing means the group
///   keeps up with everything offered; once it has for [`calm`](Overload::calm) (3 s by
///   default; any refusal or window over target starts it again), back to keeping up. The
///   wait matters when refused clients stay away for a while (a `Retry-After`): their
///   absence is not the end of the overload.
///
/// With [`Overload::scaling`], the thresholds adapt to the target as SEDA's controller adapts
/// its rate (AIMD): each window over target while overloaded divides their
/// [scale](PriorityThresholds::set_scale) by `adj_d`; each window well under target in which
/// something was refused adds `adj_i * -(err - c_i) / increase_unit` to it (bounded to
/// 1/1024..1024, and never below the lowest priority's threshold of 1: further cuts would
/// shed higher priorities first). Every other threshold moves by as many places as the lowest
/// one, so the gaps between priorities stay and lower priorities are shed first. And
/// no message is admitted past twice its priority's scaled threshold, whatever `inner` says:
/// a [`SessionConsistent`](super::SessionConsistent) admits the sessions it admitted before
/// without asking its thresholds, so without this ceiling, sessions admitted before the
/// overload would keep the queue long however far the thresholds are cut. As in
/// [`ResponseTime`](super::ResponseTime), a change is judged only on work admitted after it
/// (after the backlog it found, about the window's 90th percentile, has drained), so the
/// backlog that revealed an overload does not cut the thresholds again and again.
///
/// While the group keeps up, `inner` is not asked but told of each admission
/// ([`overruled`](MessagePredicate::overruled) with `true`), so an inner
/// [`CostBudget`](super::CostBudget) keeps counting what is in flight and refuses costly
/// work only once overloaded. `admit` costs one relaxed load (and that call) while the group
/// keeps up. The measurement runs in
/// [`observe`](MessagePredicate::observe), under a short lock senders never take.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use whirl::admission::{Completion, ControllerParams, MessagePredicate, Offer, Overload, PriorityThresholds};
/// use whirl::control::MessageCounts;
/// use whirl::time::ManualClock;
///
/// let clock = ManualClock::new();
/// let thresholds = Arc::new(PriorityThresholds::new(16));
/// let mut params = ControllerParams::seda(Duration::from_millis(50));
/// params.nreq = 10;
/// let p = Overload::with_clock(thresholds.clone(), params, clock.clone()).scaling(thresholds.clone());
/// let mut counts = MessageCounts::default();
/// counts.posted = 500; // a long queue...
/// let offer = Offer::detached::<()>(None, 1, counts);
/// // ...drained in time: admitted.
/// for _ in 0..10 {
///     p.observe(&Completion::handled(None, 1, Duration::from_millis(5)));
/// }
/// assert!(p.admit(&offer) && !p.overloaded());
/// // Responses over target: the thresholds decide.
/// for _ in 0..10 {
///     p.observe(&Completion::handled(None, 1, Duration::from_millis(200)));
/// }
/// assert!(p.overloaded() && !p.admit(&offer));
/// ```
pub struct Overload<P, C: Clock = CoarseClock> {
    inner: P,
    scaled: Option<Arc<PriorityThresholds>>,
    params: ControllerParams,
    clock: C,
    /// The clock's reading at construction ([`Clock::nanos`]).
    origin: u64,
    overloaded: AtomicBool,
    /// `inner` refused something since the last run of the estimator.
    refused: AtomicBool,
    /// Times the group became overloaded.
    episodes: AtomicU64,
    calm: u64,
    window: Mutex<State>,
}

/// What `observe` keeps under its lock.
struct State {
    window: Window,
    /// Since when (nanos) every window has been well under target with nothing refused.
    calm_since: Option<u64>,
}

impl<P: MessagePredicate> Overload<P, CoarseClock> {
    /// `inner` gated by figure 50's controller parameters with this 90th-percentile target,
    /// on the shared coarse clock.
    pub fn new(inner: P, target: Duration) -> Self {
        Overload::with_clock(inner, ControllerParams::seda(target), CoarseClock::shared())
    }
}

impl<P: MessagePredicate, C: Clock> Overload<P, C> {
    /// `inner` gated by a controller with `params`, reading time from `clock`.
    pub fn with_clock(inner: P, params: ControllerParams, clock: C) -> Self {
        let origin = clock.nanos();
        Overload {
            window: Mutex::new(State {
                window: Window::new(&params),
                calm_since: None,
            }),
            calm: u64::try_from(DEFAULT_CALM.as_nanos()).unwrap_or(u64::MAX),
            inner,
            scaled: None,
            params,
            clock,
            origin,
            overloaded: AtomicBool::new(false),
            refused: AtomicBool::new(false),
            episodes: AtomicU64::new(0),
        }
    }

    /// Adapts `thresholds` (usually the ones `inner` applies, shared through the `Arc`) to
    /// the target while overloaded, by scaling them (AIMD).
    pub fn scaling(mut self, thresholds: Arc<PriorityThresholds>) -> Self {
        self.scaled = Some(thresholds);
        self
    }

    /// How long the group must keep up, refusing nothing, before it is no longer
    /// overloaded (default 3 s).
    pub fn calm(mut self, calm: Duration) -> Self {
        self.calm = u64::try_from(calm.as_nanos()).unwrap_or(u64::MAX);
        self
    }

    /// Whether the group is overloaded now (`inner` deciding).
    pub fn overloaded(&self) -> bool {
        self.overloaded.load(Relaxed)
    }

    /// How many times the group has become overloaded.
    pub fn episodes(&self) -> u64 {
        self.episodes.load(Relaxed)
    }

    /// The smoothed 90th-percentile response time, once measured.
    pub fn estimate(&self) -> Option<Duration> {
        self.window.lock().window.estimate()
    }

    /// The parameters.
    pub fn params(&self) -> &ControllerParams {
        &self.params
    }

    /// The predicate deciding while overloaded.
    pub fn inner(&self) -> &P {
        &self.inner
    }

    /// Applies `f` to the scale, bounded: never below the scale at which the lowest
    /// priority's threshold is 1 (cutting further would shed higher priorities while the
    /// lowest is still admitted into an empty queue), nor outside 1/1024..1024.
    fn rescale(&self, f: impl FnOnce(f64) -> f64) {
        if let Some(t) = &self.scaled {
            let floor = (1.0 / t.threshold(0).max(1) as f64).max(MIN_SCALE);
            t.set_scale(f(t.scale()).clamp(floor, MAX_SCALE.max(floor)));
        }
    }
}

impl<P: MessagePredicate, C: Clock> MessagePredicate for Overload<P, C> {
    fn observes(&self) -> bool {
        true
    }

    #[inline]
    fn admit(&self, offer: &Offer<'_>) -> bool {
        if !self.overloaded.load(Relaxed) {
            // Not asked, admitted: an inner budget accounts for it all the same.
            self.inner.overruled(offer, true);
            return true;
        }
        let within = self.scaled.as_ref().is_none_or(|t| {
            offer.queued()
                < t.effective_threshold(offer.priority())
                    .saturating_mul(CEILING)
        });
        let admitted = within && self.inner.admit(offer);
        if !admitted && !self.refused.load(Relaxed) {
            self.refused.store(true, Relaxed);
        }
        admitted
    }

    fn observe(&self, done: &Completion<'_>) {
        if self.inner.observes() {
            self.inner.observe(done);
        }
        let Some(sample) = done.response_time() else {
            return;
        };
        let now = self.clock.nanos().saturating_sub(self.origin);
        let p = &self.params;
        let mut state = self.window.lock();
        let Some(run) = state.window.observe(p, sample, now) else {
            return;
        };
        let refused = self.refused.swap(false, Relaxed);
        let overloaded = self.overloaded.load(Relaxed);
        if run.err > p.err_d {
            if overloaded {
                self.rescale(|s| s / p.adj_d);
            } else {
                self.overloaded.store(true, Relaxed);
                self.episodes.fetch_add(1, Relaxed);
            }
            // Judge the change on work queued behind what it admits, not on the backlog it
            // found.
            state.window.defer(now.saturating_add(run.samp));
            state.calm_since = None;
        } else if run.err < p.err_i && overloaded {
            if refused {
                state.calm_since = None;
                let unit = if p.increase_unit.is_finite() && p.increase_unit > 0.0 {
                    p.increase_unit
                } else {
                    1.0
                };
                self.rescale(|s| s + p.adj_i * -(run.err - p.c_i) / unit);
            } else {
                let since = *state.calm_since.get_or_insert(now);
                if now.saturating_sub(since) >= self.calm {
                    self.overloaded.store(false, Relaxed);
                    state.calm_since = None;
                }
            }
        } else if refused {
            state.calm_since = None;
        }
    }

    fn overruled(&self, offer: &Offer<'_>, admitted: bool) {
        // `inner` was asked, or told of the admission: either way it follows the decision.
        self.inner.overruled(offer, admitted);
    }
}

impl<P, C: Clock> std::fmt::Debug for Overload<P, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Overload")
            .field("target", &self.params.target)
            .field("overloaded", &self.overloaded.load(Relaxed))
            .field("scale", &self.scaled.as_ref().map(|t| t.scale()))
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::test_util::{offer, queued};
    use super::*;
    use crate::admission::SessionConsistent;
    use crate::principal::Principal;
    use crate::time::ManualClock;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn params() -> ControllerParams {
        let mut p = ControllerParams::seda(ms(50));
        p.nreq = 10;
        p
    }

    /// `n` completions at `rt`, one every 100 µs.
    fn stream<P: MessagePredicate>(p: &P, clock: &ManualClock, rt: Duration, n: usize) {
        for _ in 0..n {
            clock.advance(Duration::from_micros(100));
            p.observe(&Completion::handled(None, 1, rt));
        }
    }

    #[test]
    fn a_long_queue_drained_in_time_is_not_an_overload() {
        let clock = ManualClock::new();
        let t = Arc::new(PriorityThresholds::new(16));
        let p = Overload::with_clock(t.clone(), params(), clock.clone()).scaling(t.clone());
        for _ in 0..100 {
            stream(&p, &clock, ms(10), 10);
            assert!(p.admit(&offer(None, 1, 10_000)));
        }
        assert!(!p.overloaded());
        assert_eq!(p.episodes(), 0);
        assert_eq!(t.scale(), 1.0);
    }

    #[test]
    fn overload_hands_over_to_the_thresholds_and_aimd_fits_them_to_the_target() {
        let clock = ManualClock::new();
        let t = Arc::new(PriorityThresholds::new(100).at_least(2, 1000));
        let p = Overload::with_clock(t.clone(), params(), clock.clone())
            .scaling(t.clone())
            .calm(ms(5));
        let admin = Principal::builder(1)
            .priority(2)
            .build()
            .expect("a valid principal");
        stream(&p, &clock, ms(200), 10);
        assert!(p.overloaded());
        assert_eq!(p.episodes(), 1);
        assert!(!p.admit(&offer(None, 1, 100)));
        assert!(p.admit(&offer(None, 1, 99)));
        assert!(p.admit(&offer(Some(&admin), 1, 999)));
        // The backlog the change found (200 ms of it) is not judged: no cut.
        stream(&p, &clock, ms(200), 3_000);
        assert_eq!(t.scale(), 1.0);
        // Work admitted after it, still over target: cut by adj_d, judged again later.
        stream(&p, &clock, ms(80), 10);
        assert!((t.scale() - 1.0 / 1.2).abs() < 1e-9, "{}", t.scale());
        assert_eq!(t.effective_threshold(0), 83);
        assert!(!p.admit(&offer(None, 1, 83)));
        // Well under target with refusals: the thresholds grow additively, by
        // 2 * -(err - c_i) / 10 per window (err = (1 ms - 50 ms) / 50 ms = -0.98).
        // (Past the cut's horizon; the EWMA is seeded afresh by the next window.)
        clock.advance(ms(100));
        let before = t.scale();
        assert!(!p.admit(&offer(None, 1, 10_000)));
        stream(&p, &clock, ms(1), 10);
        let step = 2.0 * (0.98 - 0.1) / 10.0;
        assert!(p.overloaded());
        assert!(
            (t.scale() - before - step).abs() < 1e-9,
            "{} {before}",
            t.scale()
        );
        let grown = t.scale();
        assert!(!p.admit(&offer(None, 1, 10_000)));
        stream(&p, &clock, ms(1), 10);
        assert!(
            (t.scale() - grown - step).abs() < 1e-9,
            "{} {grown}",
            t.scale()
        );
        // Well under target and nothing refused, but not for `calm` yet (the first such
        // window starts it): still overloaded; a refusal starts it again.
        stream(&p, &clock, ms(1), 10);
        assert!(p.overloaded());
        assert!(!p.admit(&offer(None, 1, 10_000)));
        stream(&p, &clock, ms(1), 10);
        stream(&p, &clock, ms(1), 40);
        assert!(p.overloaded(), "4 ms calm of 5");
        // Calm for 5 ms: keeping up again, everything admitted.
        stream(&p, &clock, ms(1), 20);
        assert!(!p.overloaded());
        assert!(p.admit(&offer(None, 1, 10_000)));
    }

    #[test]
    fn sessions_are_shed_whole_only_while_overloaded() {
        let clock = ManualClock::new();
        let t = Arc::new(PriorityThresholds::new(10));
        let sessions =
            SessionConsistent::with_clock(t.clone(), Duration::from_secs(2), clock.clone());
        let p = Overload::with_clock(sessions, params(), clock.clone()).scaling(t);
        let s = Principal::builder(7).build().expect("a valid principal");
        let o = |q| Offer::detached::<()>(Some(&s), 1, queued(q));
        assert!(p.admit(&o(50)));
        assert_eq!(
            p.inner().remembered(),
            0,
            "the inner predicate is not asked"
        );
        stream(&p, &clock, ms(300), 10);
        assert!(!p.admit(&o(15)));
        // Refused whole for the hold, however short the queue.
        assert!(!p.admit(&o(0)));
        assert_eq!(p.inner().remembered(), 1);
        // A session admitted while overloaded stays admitted past its threshold (10), up to
        // twice it: then refused even so.
        let early = Principal::builder(8).build().expect("a valid principal");
        let e = |q| Offer::detached::<()>(Some(&early), 1, queued(q));
        assert!(p.admit(&e(5)));
        assert!(p.admit(&e(19)));
        assert!(!p.admit(&e(20)));
    }

    #[test]
    fn an_inner_budget_counts_what_was_admitted_unasked() {
        use crate::admission::{CostBudget, PredicateExt};
        let clock = ManualClock::new();
        let budget = Arc::new(CostBudget::new(10));
        let p = Overload::with_clock(
            (|_: &Offer<'_>| true).and(budget.clone()),
            params(),
            clock.clone(),
        );
        for _ in 0..3 {
            assert!(p.admit(&offer(None, 4, 0)));
        }
        assert_eq!(budget.outstanding(), 12);
        stream(&p, &clock, ms(300), 10);
        // Ten completions of cost 1 were observed: 2 outstanding; a cost of 8 fits, then nothing.
        assert!(p.overloaded());
        assert_eq!(budget.outstanding(), 2);
        assert!(p.admit(&offer(None, 8, 0)));
        assert!(!p.admit(&offer(None, 1, 0)));
    }

    #[test]
    fn scale_is_bounded_and_dead_letters_are_not_samples() {
        let clock = ManualClock::new();
        let t = Arc::new(PriorityThresholds::new(10));
        let p = Overload::with_clock(t.clone(), params(), clock.clone()).scaling(t.clone());
        for _ in 0..10 {
            p.observe(&Completion::dead_lettered(None, 1));
        }
        assert!(!p.overloaded() && p.estimate().is_none());
        stream(&p, &clock, ms(500), 10);
        for _ in 0..100 {
            clock.advance(Duration::from_secs(1));
            stream(&p, &clock, ms(500), 10);
        }
        assert_eq!(t.scale(), 0.1, "the lowest threshold (10) stops at 1");
        assert_eq!(t.effective_threshold(0), 1);
    }
}
