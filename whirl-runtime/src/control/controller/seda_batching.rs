//! [`SedaBatching`]: SEDA's batching controller (Welsh's dissertation, chapter 5, §4.2).

use std::collections::VecDeque;
use std::time::Duration;

use super::{Adjustment, ConcurrencyController, ControllerState, Controls, GroupSample};

/// SEDA's batching controller, for the group's run budget (messages per turn, SEDA's
/// "batching factor"), as described in section 4.2 ("Batching controller") of the
/// resource-controller chapter of Matt Welsh's SEDA dissertation. It
/// [`controls`](ConcurrencyController::controls) the budget only.
///
/// The controller searches "for the smallest batching factor that sustains high throughput.
/// It operates by observing the throughput of each stage, maintaining an estimate of the
/// highest throughput seen in a recent time window. The controller decreases the batching
/// factor by a small multiplicative factor (20% by default) until the observed throughput
/// falls below some margin of the best throughput estimate (10% by default). The controller
/// then begins to increase the batching factor by a small factor (also 20%) until the
/// throughput approaches the best estimate. The controller responds to a sudden drop in
/// throughput by resetting the batching factor to its maximum value (1000 events by
/// default)." Like SEDA's, it does not damp its response, so the budget oscillates near the
/// optimum.
///
/// # Choices the text leaves open
///
/// * **The window** is the last 10 samples (see [`window`](Self::window)); the best estimate
///   is the highest throughput among them, so a best that can no longer be reached is
///   forgotten after 10 periods.
/// * **"Approaches"** means within half the margin (5% by default): increasing stops, and
///   decreasing resumes, once throughput is at least `best × (1 − margin / 2)`. A little
///   hysteresis keeps the search from settling at the lower edge of the margin, where the
///   window would slowly forget the peak.
/// * **A sudden drop** is throughput below half the best estimate (see
///   [`sudden_drop`](Self::sudden_drop)). The budget goes back to the maximum and the window
///   is cleared: the old best describes a stage that no longer exists, and the search starts
///   again from the new throughput.
/// * The budget moves by at least one message per step and stays within `1..=1000` by
///   default ([`min_budget`](Self::min_budget), [`max_budget`](Self::max_budget)).
///
/// ```
/// use whirl::control::{SedaBatching, ConcurrencyController, Controls, GroupSample};
/// use std::time::Duration;
///
/// let mut batching = SedaBatching::new();
/// assert_eq!(batching.controls(), Controls::Budget);
/// let mut sample = GroupSample::default();
/// sample.interval = Duration::from_secs(1);
/// sample.budget = 1000;
/// sample.queue_length = 5_000;
/// sample.handled = 40_000;
/// // Throughput holds: try 20% smaller batches.
/// assert_eq!(batching.adjust(&sample).budget, Some(800));
/// // Throughput fell to a quarter: a sudden drop, back to the maximum.
/// sample.budget = 800;
/// sample.handled = 10_000;
/// assert_eq!(batching.adjust(&sample).budget, Some(1000));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct SedaBatching {
    period: Duration,
    window: usize,
    step: f64,
    margin: f64,
    sudden_drop: f64,
    min_budget: usize,
    max_budget: usize,
    /// Throughput of the most recent samples, newest last.
    recent: VecDeque<f64>,
    increasing: bool,
    last_budget: Option<usize>,
}

impl SedaBatching {
    /// Default period: one second.
    pub const DEFAULT_PERIOD: Duration = Duration::from_secs(1);
    /// Default window: the best throughput of the last 10 samples.
    pub const DEFAULT_WINDOW: usize = 10;
    /// Default step: 20% (SEDA: "20% by default").
    pub const DEFAULT_STEP: f64 = 0.2;
    /// Default margin: 10% (SEDA: "10% by default").
    pub const DEFAULT_MARGIN: f64 = 0.1;
    /// Default sudden drop: below half the best throughput.
    pub const DEFAULT_SUDDEN_DROP: f64 = 0.5;
    /// Default maximum budget: 1000 messages (SEDA: "1000 events by default").
    pub const DEFAULT_MAX_BUDGET: usize = 1000;

    /// The controller with SEDA's defaults.
    pub fn new() -> Self {
        SedaBatching {
            period: Self::DEFAULT_PERIOD,
            window: Self::DEFAULT_WINDOW,
            step: Self::DEFAULT_STEP,
            margin: Self::DEFAULT_MARGIN,
            sudden_drop: Self::DEFAULT_SUDDEN_DROP,
            min_budget: 1,
            max_budget: Self::DEFAULT_MAX_BUDGET,
            recent: VecDeque::new(),
            increasing: false,
            last_budget: None,
        }
    }

    /// Sets the sampling period.
    pub fn period(mut self, period: Duration) -> Self {
        self.period = period;
        self
    }

    /// Sets how many recent samples the best-throughput estimate covers (at least 1).
    pub fn window(mut self, samples: usize) -> Self {
        self.window = samples.max(1);
        self
    }

    /// Sets the multiplicative step, a fraction (`0.2` is 20%).
    pub fn step(mut self, fraction: f64) -> Self {
        self.step = fraction;
        self
    }

    /// Sets the margin below the best throughput that ends a decrease, a fraction.
    pub fn margin(mut self, fraction: f64) -> Self {
        self.margin = fraction;
        self
    }

    /// Sets the fraction of the best throughput below which a drop is sudden and the budget
    /// resets to the maximum.
    pub fn sudden_drop(mut self, fraction: f64) -> Self {
        self.sudden_drop = fraction;
        self
    }

    /// Sets the smallest budget (at least 1).
    pub fn min_budget(mut self, budget: usize) -> Self {
        self.min_budget = budget.max(1);
        self
    }

    /// Sets the largest budget, the one a sudden drop resets to.
    pub fn max_budget(mut self, budget: usize) -> Self {
        self.max_budget = budget.max(1);
        self
    }

    fn decide(&mut self, budget: usize, throughput: f64) -> usize {
        self.recent.push_back(throughput);
        while self.recent.len() > self.window {
            self.recent.pop_front();
        }
        let best = self.recent.iter().copied().fold(0.0, f64::max);
        if throughput < best * self.sudden_drop {
            self.recent.clear();
            self.increasing = false;
            return self.max_budget;
        }
        let threshold = if self.increasing {
            1.0 - self.margin / 2.0
        } else {
            1.0 - self.margin
        };
        self.increasing = throughput < best * threshold;
        if self.increasing {
            let up = (budget as f64 * (1.0 + self.step)) as usize;
            up.max(budget + 1)
        } else {
            let down = (budget as f64 * (1.0 - self.step)) as usize;
            down.min(budget.saturating_sub(1))
        }
    }
}

impl Default for SedaBatching {
    fn default() -> Self {
        Self::new()
    }
}

impl ConcurrencyController for SedaBatching {
    fn controls(&self) -> Controls {
        Controls::Budget
    }

    fn period(&self) -> Duration {
        self.period
    }

    fn adjust(&mut self, sample: &GroupSample) -> Adjustment {
        let (min, max) = (self.min_budget, self.max_budget.max(self.min_budget));
        let budget = if sample.budget == 0 {
            max
        } else {
            sample.budget
        };
        let target = self.decide(budget, sample.throughput()).clamp(min, max);
        self.last_budget = Some(target);
        if target == sample.budget {
            Adjustment::NONE
        } else {
            Adjustment::budget(target)
        }
    }

    fn describe(&self) -> ControllerState {
        let detail = match self.last_budget {
            Some(budget) => {
                let best = self.recent.iter().copied().fold(0.0, f64::max);
                let way = if self.increasing { "rising" } else { "falling" };
                format!("budget {budget} ({way}), best {best:.0} msgs/s")
            }
            None => String::new(),
        };
        ControllerState {
            name: "seda-batching",
            detail,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn sample(budget: usize, throughput: f64) -> GroupSample {
        GroupSample {
            interval: Duration::from_secs(1),
            threads: 4,
            min_threads: 1,
            max_threads: 4,
            budget,
            queue_length: 10_000,
            handled: throughput.round() as u64,
            ..GroupSample::default()
        }
    }

    /// SEDA figure 32's benchmark: each batch starts with one expensive operation (200 times
    /// the cost of an event) amortized over the batch; past 200 messages per batch the
    /// handler degrades. Throughput peaks at a budget of 200.
    fn plant(budget: usize) -> f64 {
        let b = budget as f64;
        let per_event = if budget <= 200 {
            b / (200.0 + b)
        } else {
            0.5 * (200.0 / b).powi(2)
        };
        100_000.0 * per_event
    }

    /// Runs the controller against `plant` (scaled by `scale(period)`); the budgets.
    fn run(c: &mut SedaBatching, periods: usize, scale: impl Fn(usize) -> f64) -> Vec<usize> {
        let mut budget = 1000;
        (0..periods)
            .map(|p| {
                let s = sample(budget, plant(budget) * scale(p));
                if let Some(b) = c.adjust(&s).budget {
                    budget = b;
                }
                budget
            })
            .collect()
    }

    #[test]
    fn decreases_by_20_percent_while_throughput_holds() {
        let mut c = SedaBatching::new();
        assert_eq!(c.adjust(&sample(1000, 5000.0)), Adjustment::budget(800));
        assert_eq!(c.adjust(&sample(800, 4600.0)), Adjustment::budget(640));
        // More than 10% below the best: increase by 20%...
        assert_eq!(c.adjust(&sample(640, 4400.0)), Adjustment::budget(768));
        // ...until within 5% of the best.
        assert_eq!(c.adjust(&sample(768, 4700.0)), Adjustment::budget(921));
        assert_eq!(c.adjust(&sample(921, 4800.0)), Adjustment::budget(736));
        assert!(c.describe().detail.contains("best 5000"));
    }

    #[test]
    fn stays_within_min_and_max() {
        let mut c = SedaBatching::new().min_budget(2).max_budget(50);
        assert_eq!(c.adjust(&sample(2, 100.0)), Adjustment::NONE);
        assert_eq!(c.adjust(&sample(3, 100.0)), Adjustment::budget(2));
        let mut c = SedaBatching::new().max_budget(50);
        c.adjust(&sample(50, 100.0));
        assert_eq!(c.adjust(&sample(48, 85.0)), Adjustment::budget(50));
    }

    #[test]
    fn converges_near_the_optimal_budget() {
        let mut c = SedaBatching::new();
        let history = run(&mut c, 300, |_| 1.0);
        assert_eq!(&history[..4], &[800, 640, 512, 409]);
        let last = &history[250..];
        assert!(
            last.iter().all(|b| (120..=320).contains(b)),
            "last budgets: {last:?}"
        );
        assert!(last.iter().any(|&b| b < 200) && last.iter().any(|&b| b >= 190));
    }

    #[test]
    fn sudden_drop_resets_to_max() {
        let mut c = SedaBatching::new();
        // Settle, then the stage slows to a third (say, a slow disk) at period 100.
        let history = run(&mut c, 120, |p| if p < 100 { 1.0 } else { 0.3 });
        assert!((120..=320).contains(&history[99]));
        assert_eq!(history[100], 1000);
        // The window restarted: the search begins again from the new throughput.
        assert_eq!(&history[101..104], &[800, 640, 512]);
    }
}
