//! SEDA's 90th-percentile response-time controller (dissertation chapter 7, section 2.1).

use std::time::Duration;

use parking_lot::Mutex;

use super::feedback::{ControllerParams, Window};
use super::token_bucket::Bucket;
use super::CoarseClock;
use super::{Completion, MessagePredicate, Offer};
use crate::clock::Clock;

/// Keeps the group's 90th-percentile response time (enqueue to completion) near a target by
/// adjusting the rate of a token bucket: SEDA's overload controller.
///
/// Every [`observe`](MessagePredicate::observe)d completion is a sample. After `nreq` samples
/// (or at the first sample after `timeout`) the controller takes the 90th percentile, smooths
/// it (EWMA, `alpha`), and compares it with the target: over target (`err > err_d`) the rate
/// is divided by `adj_d`; well under (`err < err_i`) it grows by `adj_i * -(err - c_i)`;
/// bounded by `rate_min` and `rate_max`. Defaults: [`ControllerParams::seda`] (figure 50).
///
/// `admit` is a token-bucket take (a clock read, by default of the shared [`CoarseClock`],
/// and a compare-and-swap). The samples are
/// kept under a short lock taken only by `observe`, on the worker that finished the message,
/// never by senders.
///
/// ```
/// use std::time::Duration;
/// use whirl_runtime::{Completion, ControllerParams, ManualClock, MessagePredicate, ResponseTime};
///
/// let clock = ManualClock::new();
/// let rt = ResponseTime::with_clock(ControllerParams::seda(Duration::from_millis(100)), clock);
/// assert_eq!(rt.rate(), 5000.0);
/// // A window of 100 completions at 300 ms: over target, the rate is cut by 1.2.
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
    window: Mutex<Window>,
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
            bucket: Bucket::new(rate, params.depth),
            window: Mutex::new(Window::new(&params)),
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
        self.window.lock().estimate()
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
        let mut window = self.window.lock();
        if let Some(err) = window.record(&self.params, sample, now) {
            if let Some(rate) = self.params.adjust(self.bucket.rate(), err, true) {
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
    use crate::clock::ManualClock;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn controller(clock: &ManualClock) -> ResponseTime<ManualClock> {
        let mut p = ControllerParams::seda(ms(100));
        p.nreq = 10;
        ResponseTime::with_clock(p, clock.clone())
    }

    fn window(c: &ResponseTime<ManualClock>, rt: Duration) {
        for _ in 0..c.params().nreq {
            c.observe(&Completion::handled(None, 1, rt));
        }
    }

    #[test]
    fn multiplicative_decrease_down_to_rate_min() {
        let clock = ManualClock::new();
        let c = controller(&clock);
        window(&c, ms(500));
        assert!((c.rate() - 5000.0 / 1.2).abs() < 1e-6);
        for _ in 0..200 {
            window(&c, ms(500));
        }
        assert!((c.rate() - 0.05).abs() < 1e-9, "{}", c.rate());
    }

    #[test]
    fn additive_increase_when_well_under_target() {
        let clock = ManualClock::new();
        let c = controller(&clock);
        for _ in 0..30 {
            window(&c, ms(1000));
        }
        let low = c.rate();
        // Fast responses: the EWMA falls, and once err < -0.5 the rate grows additively.
        for _ in 0..30 {
            window(&c, ms(1));
        }
        let high = c.rate();
        assert!(high > low, "{low} -> {high}");
        // Additive: at most adj_i * -(err - c_i) <= 2 * 1.1 per run.
        assert!(high - low <= 30.0 * 2.2 + 1e-9, "{low} -> {high}");
        // Near the target: held.
        let mut p = ControllerParams::seda(ms(100));
        p.nreq = 1;
        let steady = ResponseTime::with_clock(p, clock.clone());
        steady.observe(&Completion::handled(None, 1, ms(90)));
        assert_eq!(steady.rate(), 5000.0);
    }

    #[test]
    fn dead_letters_are_not_samples() {
        let clock = ManualClock::new();
        let c = controller(&clock);
        for _ in 0..100 {
            c.observe(&Completion::dead_lettered(None, 1));
        }
        assert_eq!(c.rate(), 5000.0);
        assert_eq!(c.estimate(), None);
    }

    #[test]
    fn timeout_runs_the_controller_on_few_samples() {
        let clock = ManualClock::new();
        let c = controller(&clock);
        c.observe(&Completion::handled(None, 1, ms(500)));
        assert_eq!(c.rate(), 5000.0);
        clock.advance(Duration::from_secs(1));
        c.observe(&Completion::handled(None, 1, ms(500)));
        assert!(c.rate() < 5000.0);
        assert_eq!(c.estimate(), Some(ms(500)));
    }

    #[test]
    fn admission_follows_the_rate() {
        let clock = ManualClock::new();
        let mut p = ControllerParams::seda(ms(100));
        p.nreq = 1;
        p.depth = 1;
        p.initial_rate = 10.0;
        let c = ResponseTime::with_clock(p, clock.clone());
        let o = offer(None, 1, 0);
        assert!(c.admit(&o));
        assert!(!c.admit(&o));
        clock.advance(ms(100));
        assert!(c.admit(&o));
        // Overload at t = 100 ms, bucket empty: 10 / 1.2 per second, the next token 120 ms
        // later (a cut does not refill the bucket).
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
}
