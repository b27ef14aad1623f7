//! SEDA's response-time controller (dissertation chapter 7, section 2.1): the parameters of
//! figure 50 and the measurement window shared by [`ResponseTime`](super::ResponseTime),
//! [`ClassResponseTime`](super::ClassResponseTime) and the adaptive
//! [`CostBudget`](super::CostBudget).

use std::time::Duration;

/// Parameters of SEDA's response-time controller. [`ControllerParams::seda`] gives the
/// defaults of the dissertation's figure 50 (and section 2.3 for the class-based ones); every
/// field can be changed afterwards.
///
/// ```
/// use std::time::Duration;
/// use whirl_runtime::ControllerParams;
///
/// let mut params = ControllerParams::seda(Duration::from_millis(50));
/// assert_eq!(params.nreq, 100);
/// assert_eq!(params.adj_d, 1.2);
/// params.rate_max = 20_000.0;
/// ```
#[derive(Clone, Debug, PartialEq)]
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
    /// Additive increase (SEDA `adj_i`: 2.0): the rate grows by `adj_i * -(err - c_i)`.
    pub adj_i: f64,
    /// Multiplicative decrease (SEDA `adj_d`: 1.2): the rate is divided by it.
    pub adj_d: f64,
    /// Constant weight on the additive increase (SEDA `c_i`: -0.1).
    pub c_i: f64,
    /// Minimum rate, per second (SEDA `rate_min`: 0.05). For an adaptive
    /// [`CostBudget`](super::CostBudget), the minimum budget.
    pub rate_min: f64,
    /// Maximum rate, per second (SEDA `rate_max`: 5000). For an adaptive
    /// [`CostBudget`](super::CostBudget), the maximum budget.
    pub rate_max: f64,
    /// The rate the controller starts from (not in SEDA; default `rate_max`: admit freely
    /// until measurements say otherwise).
    pub initial_rate: f64,
    /// Token-bucket depth, the largest burst admitted at once (not in SEDA's table; default
    /// 100, one `nreq` window).
    pub depth: u64,
    /// Class-based variant: the factor by which lower classes' rates are divided when a
    /// class misses its target (SEDA section 2.3 `adjlo_d`: 10).
    pub adjlo_d: f64,
    /// Class-based variant: how many runs over target, with every lower class already at
    /// `rate_min`, before a class cuts its own rate (SEDA section 2.3 `lc_thresh`: 20).
    pub lc_thresh: u32,
}

impl ControllerParams {
    /// Figure 50's defaults with the given 90th-percentile target.
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
            rate_min: 0.05,
            rate_max: 5000.0,
            initial_rate: 5000.0,
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

    /// The new rate after a run with relative error `err`, or `None` to leave it: divided
    /// by `adj_d` above `err_d`, increased by `adj_i * -(err - c_i)` below `err_i` (if
    /// `may_increase`), clamped to the bounds.
    pub(crate) fn adjust(&self, rate: f64, err: f64, may_increase: bool) -> Option<f64> {
        if err > self.err_d {
            Some(self.clamp(rate / self.adj_d))
        } else if err < self.err_i && may_increase {
            Some(self.clamp(rate + self.adj_i * -(err - self.c_i)))
        } else {
            None
        }
    }

    pub(crate) fn clamp(&self, rate: f64) -> f64 {
        rate.clamp(self.rate_min, self.rate_max.max(self.rate_min))
    }
}

/// Response-time samples since the controller last ran, and the smoothed estimate.
///
/// Callers hold it under a short lock on the completion path (never in `admit`).
pub(crate) struct Window {
    samples: Vec<u64>,
    /// When the controller last ran (nanos on the predicate's clock).
    last_run: u64,
    /// The smoothed 90th percentile, seconds; `None` until the first run.
    cur: Option<f64>,
}

impl Window {
    pub(crate) fn new(params: &ControllerParams) -> Self {
        Window {
            samples: Vec::with_capacity(params.nreq.max(1)),
            last_run: 0,
            cur: None,
        }
    }

    /// Records a response time at `now`; when `nreq` samples are in or `timeout` has passed
    /// since the last run, runs the estimator and returns the relative error
    /// `(cur - target) / target`.
    pub(crate) fn record(
        &mut self,
        params: &ControllerParams,
        sample: Duration,
        now: u64,
    ) -> Option<f64> {
        self.samples
            .push(u64::try_from(sample.as_nanos()).unwrap_or(u64::MAX));
        let timeout = u64::try_from(params.timeout.as_nanos()).unwrap_or(u64::MAX);
        let due = self.samples.len() >= params.nreq.max(1)
            || now.saturating_sub(self.last_run) >= timeout;
        if !due {
            return None;
        }
        self.last_run = now;
        let samp = self.percentile_90() as f64 / 1e9;
        self.samples.clear();
        // SEDA: cur = alpha * cur + (1 - alpha) * samp. The first sample seeds the filter
        // (instead of smoothing from zero, which would hide an overload on start-up).
        let cur = match self.cur {
            Some(cur) => params.alpha * cur + (1.0 - params.alpha) * samp,
            None => samp,
        };
        self.cur = Some(cur);
        let target = params.target.as_secs_f64().max(1e-9);
        Some((cur - target) / target)
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
        assert_eq!(p.adjust(0.05, 5.0, true), Some(0.05));
        assert_eq!(p.adjust(4999.9, -1.0, true), Some(5000.0));
    }
}
