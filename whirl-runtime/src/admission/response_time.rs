//! SEDA's 90th-percentile response-time controller (dissertation chapter 7, section 2.1).

use std::time::Duration;

use parking_lot::Mutex;

use super::feedback::{ControllerParams, Window};
use super::token_bucket::Bucket;
use super::{Completion, MessagePredicate, Offer};
use crate::time::Clock;
use crate::time::CoarseClock;

/// Keeps the group's 90th-percentile response time (enqueue to completion) near a target by
/// adjusting the rate of a token bucket: SEDA's overload controller.
///
/// Every [`observe`](MessagePredicate::observe)d completion is a sample. After `nreq` samples
/// (or at the first sample after `timeout`) the controller takes the 90th percentile, smooths
/// it (EWMA, `alpha`), and compares it with the target: over target (`err > err_d`) the rate
/// is divided by `adj_d`; well under (`err < err_i`) it grows by `adj_i * -(err - c_i)`;
/// bounded by `rate_min` and `rate_max`. Defaults: [`ControllerParams::seda`] (figure 50).
///
/// Departures from the dissertation, each for a way it over-sheds a fast stage (issue 13;
/// the reasons are in [`ControllerParams`]' module docs): `rate_max` is unbounded by default;
/// a cut is judged only on work admitted after it (about one backlog later); a cut divides
/// the lower of the rate and the measured completion rate; the additive step is scaled to the
/// stage's measured throughput (`increase_unit`) and starts from the rate of the last cut. A
/// simulated stage of 10,000/s at 10x overload with a 50 ms target then admits 97% of its
/// capacity, with the 90th percentile of what it admits at 45 ms (`tests/predicates.rs`).
///
/// `admit` is a token-bucket take (a clock read, by default of the shared [`CoarseClock`],
/// and a compare-and-swap). The samples are
/// kept under a short lock taken only by `observe`, on the worker that finished the message,
/// never by senders.
///
/// ```
/// use std::time::Duration;
/// use whirl::admission::{Completion, ControllerParams, MessagePredicate, ResponseTime};
/// use whirl::time::ManualClock;
///
/// let clock = ManualClock::new();
/// let params = ControllerParams::seda(Duration::from_millis(100)).bounds(0.05, 5000.0);
/// let rt = ResponseTime::with_clock(params, clock.clone());
/// assert_eq!(rt.rate(), 5000.0);
/// // A window of 100 completions at 300 ms: over target, the rate is cut by 1.2.
/// clock.advance(Duration::from_secs(1));
/// for _ in 0..100 {
///     rt.observe(&Completion::handled(None, 1, Duration::from_millis(300)));
/// }
/// assert!((rt.rate() - 5000.0 / 1.2).abs() < 1e-6);
/// ```
pub struct ResponseTime<C: Clock = CoarseClock> {
    clock: C,
    /// The clock's reading at construction ([`Clock::nanos`]).
    origin: u64,
    params: ControllerParams,
    bucket: Bucket,
    state: Mutex<State>,
}

/// What `observe` keeps under its lock.
struct State {
    window: Window,
    /// The completion rate measured at the last cut (the last one that had a measurement):
    /// the scale of the additive increase, and (divided by `adj_d`) the rate it starts from.
    anchor: Option<f64>,
}

impl ResponseTime<CoarseClock> {
    /// A controller with figure 50's parameters and the given 90th-percentile target, on the
    /// shared [`CoarseClock`].
    pub fn new(target: Duration) -> Self {
        ResponseTime::with_clock(ControllerParams::seda(target), CoarseClock::shared())
    }
}

impl<C: Clock> ResponseTime<C> {
    /// A controller with the given parameters, reading time from `clock`.
    pub fn with_clock(params: ControllerParams, clock: C) -> Self {
        let origin = clock.nanos();
        let rate = params.clamp(params.initial_rate);
        ResponseTime {
            bucket: Bucket::adaptive(rate, params.depth),
            state: Mutex::new(State {
                window: Window::new(&params),
                anchor: None,
            }),
            clock,
            origin,
            params,
        }
    }

    /// The current admission rate, messages per second.
    pub fn rate(&self) -> f64 {
        self.bucket.rate()
    }

    /// The smoothed 90th-percentile response time, once the controller has run (what SEDA
    /// lets applications read to degrade service).
    pub fn estimate(&self) -> Option<Duration> {
        self.state.lock().window.estimate()
    }

    /// The group's completion rate as the controller measures it (per second: the median of
    /// its last eight measurements of `nreq` completions), once measured.
    pub fn throughput(&self) -> Option<f64> {
        self.state.lock().window.throughput()
    }

    /// The parameters.
    pub fn params(&self) -> &ControllerParams {
        &self.params
    }
}

impl<C: Clock> MessagePredicate for ResponseTime<C> {
    fn observes(&self) -> bool {
        true
    }

    #[inline]
    fn admit(&self, _offer: &Offer<'_>) -> bool {
        self.bucket
            .try_take(self.clock.nanos().saturating_sub(self.origin), 1)
    }

    fn observe(&self, done: &Completion<'_>) {
        let Some(sample) = done.response_time() else {
            return;
        };
        let now = self.clock.nanos().saturating_sub(self.origin);
        let p = &self.params;
        let mut state = self.state.lock();
        let Some(run) = state.window.observe(p, sample, now) else {
            return;
        };
        let rate = self.bucket.rate();
        if run.err > p.err_d {
            state.anchor = run.throughput.or(state.anchor);
            self.bucket
                .set_rate(p.clamp(p.effective(rate, run.throughput) / p.adj_d), now);
            // Judge the cut on work that queues behind what it admits, not behind the backlog
            // it found, which takes about `samp` to drain.
            state.window.defer(now.saturating_add(run.samp));
        } else {
            let floor = state.anchor.map_or(0.0, |a| a / p.adj_d);
            if let Some(rate) = p.raise(rate, run.err, state.anchor, floor, run.span) {
                self.bucket.set_rate(rate, now);
            }
        }
    }

    fn overruled(&self, _offer: &Offer<'_>, admitted: bool) {
        if !admitted {
            self.bucket.give_back(1);
        }
    }
}

impl<C: Clock> std::fmt::Debug for ResponseTime<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseTime")
            .field("rate", &self.rate())
            .field("target", &self.params.target)
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::test_util::offer;
    use super::*;
    use crate::time::ManualClock;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Figure 50's parameters with a 100 ms target, windows of 10 and a 5000/s cap.
    fn params() -> ControllerParams {
        let mut p = ControllerParams::seda(ms(100)).bounds(0.05, 5000.0);
        p.nreq = 10;
        p
    }

    #[test]
    fn defaults_are_unbounded() {
        let c = ResponseTime::with_clock(ControllerParams::seda(ms(50)), ManualClock::new());
        assert_eq!(c.rate(), 1e9);
        assert_eq!(c.params().rate_max, 1e9);
    }

    /// 10,000 completions a second (one per 100 µs), `n` of them, all taking `rt`.
    fn stream(c: &ResponseTime<ManualClock>, clock: &ManualClock, rt: Duration, n: usize) {
        for _ in 0..n {
            clock.advance(Duration::from_micros(100));
            c.observe(&Completion::handled(None, 1, rt));
        }
    }

    #[test]
    fn multiplicative_decrease_down_to_rate_min() {
        let clock = ManualClock::new();
        let c = ResponseTime::with_clock(params(), clock.clone());
        // 10,000 completions a second, all at 500 ms: over target, the rate (below the
        // throughput) is cut by 1.2.
        stream(&c, &clock, ms(500), 10);
        assert!((c.rate() - 5000.0 / 1.2).abs() < 1e-6, "{}", c.rate());
        // Each further window judged (its work admitted after the last cut took effect)
        // and over target cuts again, down to rate_min.
        for _ in 0..100 {
            stream(&c, &clock, ms(500), 10_000);
        }
        assert!((c.rate() - 0.05).abs() < 1e-9, "{}", c.rate());
    }

    #[test]
    fn a_cut_is_judged_only_on_work_admitted_after_it() {
        let clock = ManualClock::new();
        let c = ResponseTime::with_clock(params(), clock.clone());
        stream(&c, &clock, ms(500), 10);
        let cut = 5000.0 / 1.2;
        assert!((c.rate() - cut).abs() < 1e-6);
        // The backlog the cut found drains for 0.8 s: its work, admitted before the cut took
        // effect (cut + 500 ms), is slow, slower even than what triggered the cut. SEDA
        // would cut on each of its 800 windows; here none of it counts.
        stream(&c, &clock, ms(900), 8_000);
        assert!((c.rate() - cut).abs() < 1e-6, "{}", c.rate());
        assert_eq!(c.estimate(), Some(ms(500)));
        // Work admitted after the horizon and still over target: cut again, on a fresh
        // estimate (SEDA's filter would still carry the backlog).
        stream(&c, &clock, ms(300), 10);
        assert!((c.rate() - cut / 1.2).abs() < 1e-6, "{}", c.rate());
        assert_eq!(c.estimate(), Some(ms(300)));
    }

    #[test]
    fn a_cut_divides_the_measured_throughput_when_it_is_below_the_rate() {
        let clock = ManualClock::new();
        let c = ResponseTime::with_clock(ControllerParams::seda(ms(100)), clock.clone());
        assert_eq!(c.rate(), 1e9);
        stream(&c, &clock, ms(1), 100);
        assert_eq!(c.rate(), 1e9);
        // Over target at 10,000 completions a second (the EWMA crosses the target on the
        // second window): SEDA would cut 10^9/s to 8.3 * 10^8/s, which admits as much as
        // before; this cuts what the group does.
        stream(&c, &clock, ms(300), 200);
        let thr = c.throughput().unwrap();
        assert!((thr - 10_000.0).abs() < 1.0, "{thr}");
        assert!((c.rate() - thr / 1.2).abs() < 1e-6, "{}", c.rate());
    }

    #[test]
    fn additive_increase_is_scaled_to_the_stage_and_starts_from_the_last_cut() {
        let clock = ManualClock::new();
        let c = ResponseTime::with_clock(ControllerParams::seda(ms(100)), clock.clone());
        stream(&c, &clock, ms(1), 100);
        // A cut at 10,000/s of throughput: anchor 10,000, rate 8333.
        stream(&c, &clock, ms(300), 200);
        let cut = c.rate();
        assert!((cut - 10_000.0 / 1.2).abs() < 1.0, "{cut}");
        // Two more cuts, each judged on work admitted after the previous one (0.3 s after
        // it, so 0.6 s later, plus a window): 5787/s.
        for _ in 0..2 {
            stream(&c, &clock, ms(300), 6_500);
        }
        assert!(
            (c.rate() - 10_000.0 / 1.2f64.powi(3)).abs() < 1.0,
            "{}",
            c.rate()
        );
        // The backlog is gone (1 ms responses, err = -0.99): the rate goes back to the last
        // cut's, then grows additively by adj_i * -(err - c_i) * anchor * window / 10 per
        // run: 2 * 0.89 * 10,000/s * 10 ms / 10 = 17.8/s per window of 100 at 10,000/s.
        stream(&c, &clock, ms(1), 10_000);
        let floor = c.rate();
        let cut = 10_000.0 / 1.2;
        assert!(floor > cut && floor < cut + 100.0 * 17.8, "{floor}");
        stream(&c, &clock, ms(1), 100);
        let step = c.rate() - floor;
        assert!((step - 17.8).abs() < 0.01, "{step}");
        stream(&c, &clock, ms(1), 100);
        assert!((c.rate() - floor - 2.0 * step).abs() < 0.01, "{}", c.rate());
        // Between err_i and err_d (once the EWMA has caught up): held.
        stream(&c, &clock, ms(90), 300);
        let held = c.rate();
        stream(&c, &clock, ms(90), 500);
        assert_eq!(c.rate(), held);
    }

    #[test]
    fn without_a_cut_the_increase_is_sedas() {
        let clock = ManualClock::new();
        let mut p = params();
        p.initial_rate = 100.0;
        let c = ResponseTime::with_clock(p, clock.clone());
        // err = (1 - 100) / 100 = -0.99: + 2 * 0.89 per run.
        stream(&c, &clock, ms(1), 10);
        assert!((c.rate() - 101.78).abs() < 1e-9, "{}", c.rate());
    }

    #[test]
    fn dead_letters_are_not_samples() {
        let clock = ManualClock::new();
        let c = ResponseTime::with_clock(params(), clock.clone());
        for _ in 0..100 {
            clock.advance(ms(1));
            c.observe(&Completion::dead_lettered(None, 1));
        }
        assert_eq!(c.rate(), 5000.0);
        assert_eq!(c.estimate(), None);
    }

    #[test]
    fn timeout_runs_the_controller_on_few_samples() {
        let clock = ManualClock::new();
        let c = ResponseTime::with_clock(params(), clock.clone());
        c.observe(&Completion::handled(None, 1, ms(500)));
        assert_eq!(c.rate(), 5000.0);
        clock.advance(Duration::from_secs(1));
        c.observe(&Completion::handled(None, 1, ms(500)));
        // One completion a second: the cut divides that throughput.
        assert!((c.rate() - 1.0 / 1.2).abs() < 1e-9, "{}", c.rate());
        assert_eq!(c.estimate(), Some(ms(500)));
    }

    #[test]
    fn admission_follows_the_rate() {
        let clock = ManualClock::new();
        let mut p = params();
        p.nreq = 1;
        p.depth = 1;
        p.initial_rate = 10.0;
        let c = ResponseTime::with_clock(p, clock.clone());
        let o = offer(None, 1, 0);
        assert!(c.admit(&o));
        assert!(!c.admit(&o));
        clock.advance(ms(100));
        assert!(c.admit(&o));
        // Overload at t = 100 ms, bucket empty (no throughput measured yet): 10 / 1.2 per
        // second, the next token 120 ms later (a cut does not refill the bucket).
        c.observe(&Completion::handled(None, 1, ms(1000)));
        assert!(!c.admit(&o));
        clock.advance(ms(100));
        assert!(!c.admit(&o));
        clock.advance(ms(20));
        assert!(c.admit(&o));
        assert!(!c.admit(&o));
        c.overruled(&o, false);
        assert!(c.admit(&o));
    }

    #[test]
    fn the_bucket_reaches_rates_above_depth_per_millisecond() {
        // Depth 100 on a clock that moves in 1 ms steps: a plain bucket admits at most
        // 100,000/s whatever its rate; the controller's holds 1 ms of tokens at its rate.
        let clock = ManualClock::new();
        let mut p = params().bounds(0.05, 400_000.0);
        p.depth = 100;
        let c = ResponseTime::with_clock(p, clock.clone());
        let o = offer(None, 1, 0);
        let mut admitted = 0;
        for _ in 0..100 {
            clock.advance(ms(1));
            admitted += (0..1000).filter(|_| c.admit(&o)).count();
        }
        assert_eq!(admitted, 40_000);
    }
}
