//! SEDA's response-time controller (dissertation chapter 7, section 2.1): the parameters of
//! figure 50 and the measurement window shared by [`ResponseTime`](super::ResponseTime),
//! [`ClassResponseTime`](super::ClassResponseTime) and the adaptive
//! [`CostBudget`](super::CostBudget).
//!
//! Where the controllers depart from the dissertation, and why, is documented on
//! [`ControllerParams`].

use std::time::Duration;

/// Parameters of SEDA's response-time controller. [`ControllerParams::seda`] gives the
/// defaults of the dissertation's figure 50 (and section 2.3 for the class-based ones), except
/// `rate_max` (see below); every field can be changed afterwards.
///
/// ```
/// use std::time::Duration;
/// use whirl::admission::ControllerParams;
///
/// let mut params = ControllerParams::seda(Duration::from_millis(50));
/// assert_eq!(params.nreq, 100);
/// assert_eq!(params.adj_d, 1.2);
/// params.rate_max = 20_000.0;
/// ```
#[derive(Clone, Debug, PartialEq)]
///
/// # Where the rate controllers depart from the dissertation, and why
///
/// SEDA's algorithm as written over-sheds a stage that is fast compared with the rates it was
/// tuned for (issue 13: 100 µs handlers on one worker, 10x overload, a 50 ms target; it
/// admitted half of the stage's capacity, and, with its cap raised, under 3% of it). The
/// structure is kept: the 90th percentile of a window of `nreq` samples (or `timeout`), the
/// EWMA `alpha`, the thresholds `err_d` and `err_i`, multiplicative decrease by `adj_d`,
/// additive increase by `adj_i * -(err - c_i)`, the bounds. What
/// [`ResponseTime`](super::ResponseTime) and [`ClassResponseTime`](super::ClassResponseTime)
/// do differently, each for a failure measured on a simulated 10,000/s stage
/// (`tests/predicates.rs`):
///
/// 1. **`rate_max` is unbounded by default** (10^9/s, the token bucket's largest rate, not
///    5000/s). Figure 50's cap is an absolute rate for 2001 hardware; on a stage that serves
///    10,000/s it *is* the admission rate (the controller, always under target, holds it
///    there: half the capacity). Set `rate_max` to bound a stage on purpose.
/// 2. **A cut is judged only on work admitted after it.** A sample's work was admitted
///    `response_time` before it completed. After a cut, samples of work admitted before
///    `cut + samp` (`samp`: the window's 90th percentile, about the backlog the cut found, so
///    about when the cut starts to show) count for the throughput but are not recorded, and
///    the EWMA is seeded afresh by the first window after that. As written, a cut is
///    followed by a backlog's worth of completions that queued before it, every window of
///    them over target and cutting again by `adj_d` (and the EWMA carries the backlog for a
///    few windows more): capped at 20,000/s, one overload took the rate to 180/s.
/// 3. **A cut divides the effective rate**: the lower of the bucket's rate and the measured
///    completion rate (the median of the rates of the last eight runs of `nreq` completions,
///    so that neither a moment with the worker descheduled nor a burst of completions
///    stamped together after a stall passes for the stage's speed). A bucket rate above what the stage completes does not
///    bind: dividing it changes nothing (from 10^9/s, 63 cuts before the first that admits
///    less), while a fraction of the throughput is sure to drain the backlog.
/// 4. **The additive increase is scaled to the stage**, by `max(1, anchor * window /
///    increase_unit)` (`anchor`: the completion rate measured at the last cut; `window`: the
///    run's duration; `increase_unit`: 10 completions), and it **starts from
///    `anchor / adj_d`**. As written, the step is an absolute 1.8/s at most per run, and
///    runs come every `nreq` completions, so the rate grows by 1.8% per second at most, at
///    any speed: a 10,000/s stage takes 11 s to win back one cut of 1.2, and minutes after
///    the several cuts that drain the backlog of a sudden overload. Scaled, it grows by up to
///    18% of the anchor per second (one cut is won back in about a second); the floor undoes,
///    once the backlog is gone, the extra cuts made to drain it. Between cuts the step is
///    constant (additive); on a stage with fewer than `increase_unit` completions per window
///    it is the dissertation's.
/// 5. The rate is kept as set, not read back from the bucket's whole-nanosecond interval,
///    where a cut by 1.2 at 10^9/s, or a step of 1.8/s above about 60,000/s, rounds away
///    (the controller was stuck at 10^9/s). And the buckets hold at least 1 ms of tokens at
///    the current rate (the shared clock's tick), so that a rate above `depth` per
///    millisecond can be reached.
///
/// The class-based controller also gives the classes below a class the rate of the first cut
/// it made them take once it is under target again (see
/// [`ClassResponseTime`](super::ClassResponseTime)).
///
/// With these, the simulated stage at 10x overload admits 97% of its capacity, and the 90th
/// percentile of what it admits is 45 ms for a 50 ms target. The adaptive
/// [`CostBudget`](super::CostBudget) still follows the dissertation as written
/// (`Window::record`, `ControllerParams::adjust`).
///
/// Known limit: when an overload starts with the rate wide open, the backlog the first cut
/// finds is about `offered / capacity` times the target (the response times that reveal it
/// lag behind it), and since each cut is judged only on work queued behind that backlog, it
/// takes a few cuts, one per backlog's duration, to drain: two to three seconds for a 50 ms
/// target at 10x overload, proportionally longer for longer targets. The stage stays busy
/// meanwhile, but responses are over target.
#[non_exhaustive]
pub struct ControllerParams {
    /// The 90th-percentile response-time target (SEDA: "set by administrator").
    pub target: Duration,
    /// Observations before the controller runs (SEDA `nreq`: 100).
    pub nreq: usize,
    /// Time after which the controller runs on fewer than `nreq` observations, at the next
    /// observation (SEDA `timeout`: 1 s).
    pub timeout: Duration,
    /// EWMA filter constant on the 90th-percentile estimate (SEDA `alpha`: 0.7):
    /// `cur = alpha * cur + (1 - alpha) * sample`.
    pub alpha: f64,
    /// Relative error below which the rate increases (SEDA `err_i`: -0.5).
    pub err_i: f64,
    /// Relative error above which the rate decreases (SEDA `err_d`: 0.0).
    pub err_d: f64,
    /// Additive increase (SEDA `adj_i`: 2.0): the rate grows by `adj_i * -(err - c_i)`,
    /// scaled for the rate controllers (`increase_unit`).
    pub adj_i: f64,
    /// Multiplicative decrease (SEDA `adj_d`: 1.2): the rate is divided by it.
    pub adj_d: f64,
    /// Constant weight on the additive increase (SEDA `c_i`: -0.1).
    pub c_i: f64,
    /// Completions per additive step (not in SEDA; default 10): the rate controllers scale
    /// the step by `max(1, anchor * window / increase_unit)`, where `anchor` is the
    /// completion rate measured at the last cut and `window` the run's duration (at most
    /// `timeout`): the rate then grows by `adj_i * -(err - c_i) / increase_unit` of the
    /// anchor per second (18% at most) whatever the stage's speed, instead of by 1.8% per
    /// second at most once runs come every `nreq` completions. They also start increasing
    /// from `anchor / adj_d`. `f64::INFINITY` gives SEDA's unscaled step.
    pub increase_unit: f64,
    /// Minimum rate, per second (SEDA `rate_min`: 0.05). For an adaptive
    /// [`CostBudget`](super::CostBudget), the minimum budget.
    pub rate_min: f64,
    /// Maximum rate, per second (SEDA `rate_max`: 5000; default here 10^9, unbounded: see the
    /// [`ControllerParams`] docs). For an adaptive [`CostBudget`](super::CostBudget), the maximum
    /// budget.
    pub rate_max: f64,
    /// The rate the controller starts from (not in SEDA; default `rate_max`: admit freely
    /// until measurements say otherwise).
    pub initial_rate: f64,
    /// Token-bucket depth, the largest burst admitted at once (not in SEDA's table; default
    /// 100, one `nreq` window). The rate controllers' buckets hold at least 1 ms of tokens
    /// at the current rate whatever the depth.
    pub depth: u64,
    /// Class-based variant: the factor by which lower classes' rates are divided when a
    /// class misses its target (SEDA section 2.3 `adjlo_d`: 10).
    pub adjlo_d: f64,
    /// Class-based variant: how many runs over target, with every lower class already at
    /// `rate_min`, before a class cuts its own rate (SEDA section 2.3 `lc_thresh`: 20).
    pub lc_thresh: u32,
}

impl ControllerParams {
    /// Figure 50's defaults with the given 90th-percentile target (`rate_max` and
    /// `initial_rate` unbounded, 10^9/s).
    pub fn seda(target: Duration) -> Self {
        ControllerParams {
            target,
            nreq: 100,
            timeout: Duration::from_secs(1),
            alpha: 0.7,
            err_i: -0.5,
            err_d: 0.0,
            adj_i: 2.0,
            adj_d: 1.2,
            c_i: -0.1,
            increase_unit: 10.0,
            rate_min: 0.05,
            rate_max: 1e9,
            initial_rate: 1e9,
            depth: 100,
            adjlo_d: 10.0,
            lc_thresh: 20,
        }
    }

    /// These parameters with `rate_min`, `rate_max` and `initial_rate` set to `min`, `max`
    /// and `max`.
    pub fn bounds(mut self, min: f64, max: f64) -> Self {
        self.rate_min = min;
        self.rate_max = max.max(min);
        self.initial_rate = self.rate_max;
        self
    }

    /// SEDA's rule as written, for the adaptive budget: the new rate after a run with
    /// relative error `err`, or `None` to leave it: divided by `adj_d` above `err_d`,
    /// increased by `adj_i * -(err - c_i)` below `err_i` (if `may_increase`), clamped to the
    /// bounds.
    pub(crate) fn adjust(&self, rate: f64, err: f64, may_increase: bool) -> Option<f64> {
        if err > self.err_d {
            Some(self.clamp(rate / self.adj_d))
        } else if err < self.err_i && may_increase {
            Some(self.clamp(rate + self.adj_i * -(err - self.c_i)))
        } else {
            None
        }
    }

    /// What a cut divides: the bucket's `rate`, or the measured completion rate if lower.
    pub(crate) fn effective(&self, rate: f64, throughput: Option<f64>) -> f64 {
        throughput.map_or(rate, |t| t.min(rate))
    }

    /// The rate after a run of `span` nanoseconds well under target (`err < err_i`), `None`
    /// otherwise: `rate + adj_i * -(err - c_i) * max(1, anchor * span / increase_unit)`, at
    /// least `floor`, clamped.
    pub(crate) fn raise(
        &self,
        rate: f64,
        err: f64,
        anchor: Option<f64>,
        floor: f64,
        span: u64,
    ) -> Option<f64> {
        if err >= self.err_i {
            return None;
        }
        let per_window = |a: f64| a * span as f64 / 1e9;
        let scale = anchor.map_or(1.0, |a| (per_window(a) / self.increase_unit).max(1.0));
        let step = self.adj_i * -(err - self.c_i) * scale;
        Some(self.clamp((rate + step).max(floor)))
    }

    pub(crate) fn clamp(&self, rate: f64) -> f64 {
        rate.clamp(self.rate_min, self.rate_max.max(self.rate_min))
    }
}

/// Response-time samples since the controller last ran, the smoothed estimate, and (for the
/// rate controllers) the measured throughput and the horizon before which work is not judged.
///
/// Callers hold it under a short lock on the completion path (never in `admit`).
pub(crate) struct Window {
    samples: Vec<u64>,
    /// When the controller last ran (nanos on the predicate's clock).
    last_run: u64,
    /// The smoothed 90th percentile, seconds; `None` until the first run.
    cur: Option<f64>,
    /// Whether the next run seeds `cur` afresh (set by [`Window::defer`]).
    reseed: bool,
    /// Work admitted before this instant (nanos) is not judged: its response times are not
    /// recorded by [`Window::observe`].
    horizon: u64,
    /// Completions (unjudged ones too) since `done_since`, for the throughput; `None`
    /// before the first completion.
    done: u64,
    done_since: Option<u64>,
    /// The last [`RECENT`] measurements of the completion rate, per second (0 where none
    /// yet), and where the next goes.
    recent: [f64; RECENT],
    next: usize,
}

/// How many throughput measurements (of `nreq` completions each) the peak is taken over.
const RECENT: usize = 8;

/// One run of the estimator ([`Window::observe`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Run {
    /// `(cur - target) / target`.
    pub(crate) err: f64,
    /// This window's 90th percentile (unsmoothed), nanoseconds.
    pub(crate) samp: u64,
    /// The smoothed completion rate, per second, if measured yet.
    pub(crate) throughput: Option<f64>,
    /// The window's duration (since the previous run), nanoseconds, at most `timeout`.
    pub(crate) span: u64,
}

impl Window {
    pub(crate) fn new(params: &ControllerParams) -> Self {
        Window {
            samples: Vec::with_capacity(params.nreq.max(1)),
            last_run: 0,
            cur: None,
            reseed: false,
            horizon: 0,
            done: 0,
            done_since: None,
            recent: [0.0; RECENT],
            next: 0,
        }
    }

    /// For the rate controllers: a completion at `now`, `sample` after its enqueue. Counts it
    /// for the throughput; records the response time only if the work was admitted
    /// (`now - sample`) at or after the horizon; runs the estimator as [`Window::record`]
    /// does.
    pub(crate) fn observe(
        &mut self,
        params: &ControllerParams,
        sample: Duration,
        now: u64,
    ) -> Option<Run> {
        let sample = u64::try_from(sample.as_nanos()).unwrap_or(u64::MAX);
        self.count(params, now);
        if now.saturating_sub(sample) < self.horizon {
            return None;
        }
        let since = self.last_run;
        let (err, samp) = self.push(params, sample, now)?;
        let timeout = u64::try_from(params.timeout.as_nanos()).unwrap_or(u64::MAX);
        Some(Run {
            err,
            samp,
            throughput: self.throughput_at(now),
            span: now.saturating_sub(since).min(timeout),
        })
    }

    /// Stops judging work admitted before `until`: drops the samples, re-seeds the estimate
    /// at the next run, and restarts the timeout from `until`. No-op unless `until` is past
    /// the current horizon.
    pub(crate) fn defer(&mut self, until: u64) {
        if until <= self.horizon {
            return;
        }
        self.horizon = until;
        self.samples.clear();
        self.reseed = true;
        self.last_run = until;
    }

    /// The completion rate, per second, once measured: the median of the last [`RECENT`]
    /// measurements. Robust both ways: a moment with the worker descheduled does not pass
    /// for the stage's speed, nor does a burst of completions stamped together after the
    /// clock's thread was.
    pub(crate) fn throughput(&self) -> Option<f64> {
        let mut recent = self.recent;
        recent.sort_by(f64::total_cmp);
        // The zeros (no measurement yet) sort first.
        let empty = recent.iter().take_while(|&&r| r <= 0.0).count();
        let measured = &recent[empty..];
        (!measured.is_empty()).then(|| measured[measured.len() / 2])
    }

    /// [`Window::throughput`] at `now`; before the first measurement, the rate of the
    /// completions since the first one, if any.
    pub(crate) fn throughput_at(&self, now: u64) -> Option<f64> {
        self.throughput().or_else(|| {
            let span = now.saturating_sub(self.done_since?);
            (self.done > 0 && span > 0).then(|| self.done as f64 * 1e9 / span as f64)
        })
    }

    /// Counts a completion; every `nreq` completions (or `timeout`) measures the completion
    /// rate since the last measurement. The first completion starts the clock.
    fn count(&mut self, params: &ControllerParams, now: u64) {
        let Some(since) = self.done_since else {
            self.done_since = Some(now);
            return;
        };
        self.done += 1;
        let span = now.saturating_sub(since);
        let timeout = u64::try_from(params.timeout.as_nanos()).unwrap_or(u64::MAX);
        if span == 0 || (self.done < params.nreq.max(1) as u64 && span < timeout) {
            return;
        }
        self.recent[self.next] = self.done as f64 * 1e9 / span as f64;
        self.next = (self.next + 1) % RECENT;
        self.done = 0;
        self.done_since = Some(now);
    }

    /// Records a response time at `now`; when `nreq` samples are in or `timeout` has passed
    /// since the last run, runs the estimator and returns the relative error
    /// `(cur - target) / target`. (SEDA's window as the dissertation has it, for the adaptive
    /// [`CostBudget`](super::CostBudget).)
    pub(crate) fn record(
        &mut self,
        params: &ControllerParams,
        sample: Duration,
        now: u64,
    ) -> Option<f64> {
        let sample = u64::try_from(sample.as_nanos()).unwrap_or(u64::MAX);
        self.push(params, sample, now).map(|(err, _)| err)
    }

    /// Adds a sample; if due, runs the estimator: `(err, samp)`.
    fn push(&mut self, params: &ControllerParams, sample: u64, now: u64) -> Option<(f64, u64)> {
        self.samples.push(sample);
        let timeout = u64::try_from(params.timeout.as_nanos()).unwrap_or(u64::MAX);
        let due = self.samples.len() >= params.nreq.max(1)
            || now.saturating_sub(self.last_run) >= timeout;
        if !due {
            return None;
        }
        self.last_run = now;
        let samp_nanos = self.percentile_90();
        let samp = samp_nanos as f64 / 1e9;
        self.samples.clear();
        // SEDA: cur = alpha * cur + (1 - alpha) * samp. The first sample seeds the filter
        // (instead of smoothing from zero, which would hide an overload on start-up), and so
        // does the first after a cut (the filter would carry the backlog the cut found).
        let cur = match self.cur {
            Some(cur) if !self.reseed => params.alpha * cur + (1.0 - params.alpha) * samp,
            _ => samp,
        };
        self.cur = Some(cur);
        self.reseed = false;
        let target = params.target.as_secs_f64().max(1e-9);
        Some(((cur - target) / target, samp_nanos))
    }

    /// The `(0.9 * n)`-th smallest sample (SEDA: sort and take it).
    fn percentile_90(&mut self) -> u64 {
        let n = self.samples.len();
        let index = ((n as f64 * 0.9) as usize).min(n - 1);
        *self.samples.select_nth_unstable(index).1
    }

    /// The smoothed 90th-percentile response time, once the controller has run.
    pub(crate) fn estimate(&self) -> Option<Duration> {
        self.cur.map(Duration::from_secs_f64)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn runs_after_nreq_samples_on_the_90th_percentile() {
        let mut p = ControllerParams::seda(ms(100));
        p.nreq = 10;
        let mut w = Window::new(&p);
        for i in 1..10 {
            assert_eq!(w.record(&p, ms(i * 10), 0), None);
        }
        // Samples 10..=100 ms: the 9th (index 9 of 10, i.e. 0.9 * 10) is 100 ms.
        let err = w.record(&p, ms(100), 0).unwrap();
        assert!(err.abs() < 1e-9, "{err}");
        assert_eq!(w.estimate(), Some(ms(100)));
        // Next window: 300 ms everywhere; EWMA 0.7 * 100 + 0.3 * 300 = 160 ms.
        let mut last = None;
        for _ in 0..10 {
            last = w.record(&p, ms(300), 0);
        }
        let err = last.unwrap();
        assert!((err - 0.6).abs() < 1e-9, "{err}");
    }

    #[test]
    fn runs_on_timeout_with_fewer_samples() {
        let p = ControllerParams::seda(ms(100));
        let mut w = Window::new(&p);
        assert_eq!(w.record(&p, ms(50), 1), None);
        let at_timeout = 1_000_000_000;
        let err = w.record(&p, ms(50), at_timeout).unwrap();
        assert!((err + 0.5).abs() < 1e-9);
    }

    #[test]
    fn aimd_follows_figure_50() {
        let p = ControllerParams::seda(ms(100));
        // Over target: divide by 1.2.
        assert_eq!(p.adjust(120.0, 0.1, true), Some(100.0));
        // Between err_i and err_d: hold.
        assert_eq!(p.adjust(120.0, -0.2, true), None);
        // Well under target: +2 * -(err - c_i) = +2 * 0.8 at err = -0.9.
        let up = p.adjust(100.0, -0.9, true).unwrap();
        assert!((up - 101.6).abs() < 1e-9);
        assert_eq!(p.adjust(100.0, -0.9, false), None);
        // Clamped.
        let p = p.bounds(0.05, 5000.0);
        assert_eq!(p.adjust(0.05, 5.0, true), Some(0.05));
        assert_eq!(p.adjust(4999.9, -1.0, true), Some(5000.0));
    }

    #[test]
    fn the_scaled_increase_and_its_floor() {
        let p = ControllerParams::seda(ms(100));
        let window = 10_000_000; // 10 ms
                                 // No anchor (never cut): SEDA's step, 2 * 0.8 at err = -0.9.
        assert_eq!(p.raise(100.0, -0.9, None, 0.0, window), Some(101.6));
        // Not well under target: none.
        assert_eq!(p.raise(100.0, -0.4, Some(1e4), 0.0, window), None);
        // Anchor 10,000/s, 10 ms window: 100 completions per window, 10 steps of 1.6.
        let up = p.raise(8000.0, -0.9, Some(1e4), 0.0, window).unwrap();
        assert!((up - 8016.0).abs() < 1e-9, "{up}");
        // A slow stage (fewer than increase_unit completions per window): SEDA's step.
        assert_eq!(p.raise(5.0, -0.9, Some(5.0), 0.0, window), Some(6.6));
        // The floor.
        assert_eq!(
            p.raise(100.0, -0.9, Some(1e4), 8000.0, window),
            Some(8000.0)
        );
        // The effective rate is the lower of rate and throughput.
        assert_eq!(p.effective(1e9, Some(1e4)), 1e4);
        assert_eq!(p.effective(5e3, Some(1e4)), 5e3);
        assert_eq!(p.effective(5e3, None), 5e3);
    }

    #[test]
    fn unjudged_work_counts_for_the_throughput_only() {
        let mut p = ControllerParams::seda(ms(100));
        p.nreq = 10;
        let mut w = Window::new(&p);
        let at = |i: u64| i * 100_000; // one completion per 100 µs
                                       // The first completion starts the throughput's clock; before the first measurement
                                       // (of nreq completions after it), the rate so far: 9 in 900 µs.
        assert_eq!(w.throughput_at(0), None);
        for i in 0..9 {
            assert!(w.observe(&p, ms(300), at(i)).is_none());
        }
        let first = w.observe(&p, ms(300), at(9)).unwrap().throughput.unwrap();
        assert!((first - 10_000.0).abs() < 1e-6, "{first}");
        assert_eq!(w.throughput(), None);
        for i in 10..19 {
            assert!(w.observe(&p, ms(300), at(i)).is_none());
        }
        let run = w.observe(&p, ms(300), at(19)).unwrap();
        assert!((run.err - 2.0).abs() < 1e-9);
        assert_eq!(run.samp, 300_000_000);
        assert_eq!(run.span, 1_000_000);
        assert!((run.throughput.unwrap() - 10_000.0).abs() < 1e-6);
        // Not judging work admitted before 500 ms: 300 ms responses at 700 ms are not
        // recorded, at 800 ms they are; the estimate is seeded afresh.
        w.defer(500_000_000);
        for i in 0..20 {
            assert!(w.observe(&p, ms(300), 700_000_000 + at(i)).is_none());
        }
        // They still count for the throughput: after the gap (10 completions in 700 ms,
        // which the smoothed rate takes in), the last 10 came in 1 ms.
        assert!((w.throughput().unwrap() - 10_000.0).abs() < 1e-6);
        for i in 0..9 {
            assert!(w.observe(&p, ms(50), 800_000_000 + at(i)).is_none());
        }
        let run = w.observe(&p, ms(50), 800_000_000 + at(9)).unwrap();
        assert!((run.err + 0.5).abs() < 1e-9, "{}", run.err);
        assert_eq!(w.estimate(), Some(ms(50)));
    }
}
