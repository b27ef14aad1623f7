//! [`FixedConcurrency`]: the controller that changes nothing.

use std::time::Duration;

use super::{Adjustment, ConcurrencyController, ControllerState, GroupSample};

/// A controller that keeps the pool where it is: every [`adjust`](ConcurrencyController::adjust)
/// answers [`Adjustment::NONE`].
///
/// Useful as an explicit "no control" choice, as a baseline when comparing controllers, and
/// for groups whose thread count is set once by hand. It is sampled once a second (the period
/// only decides how often the runtime bothers to ask).
///
/// ```
/// use whirl::control::{Adjustment, ConcurrencyController, FixedConcurrency, GroupSample};
/// use std::time::Duration;
///
/// let mut fixed = FixedConcurrency::new();
/// let mut busy = GroupSample::default();
/// busy.interval = Duration::from_secs(1);
/// busy.threads = 4;
/// busy.min_threads = 1;
/// busy.max_threads = 64;
/// busy.queue_length = 10_000;
/// assert_eq!(fixed.adjust(&busy), Adjustment::NONE);
/// assert_eq!(fixed.describe().name, "fixed");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FixedConcurrency {
    period: Duration,
}

impl FixedConcurrency {
    /// The default sampling period: one second.
    pub const DEFAULT_PERIOD: Duration = Duration::from_secs(1);

    /// A fixed controller sampled every [`DEFAULT_PERIOD`](Self::DEFAULT_PERIOD).
    pub fn new() -> Self {
        FixedConcurrency {
            period: Self::DEFAULT_PERIOD,
        }
    }

    /// Sets how often the runtime samples the group (it changes nothing either way).
    pub fn period(mut self, period: Duration) -> Self {
        self.period = period;
        self
    }
}

impl Default for FixedConcurrency {
    fn default() -> Self {
        Self::new()
    }
}

impl ConcurrencyController for FixedConcurrency {
    fn period(&self) -> Duration {
        self.period
    }

    fn adjust(&mut self, _sample: &GroupSample) -> Adjustment {
        Adjustment::NONE
    }

    fn describe(&self) -> ControllerState {
        ControllerState {
            name: "fixed",
            detail: String::new(),
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::control::Controls;

    #[test]
    fn never_changes_anything() {
        let mut c = FixedConcurrency::new();
        assert_eq!(c.controls(), Controls::Threads);
        assert_eq!(ConcurrencyController::period(&c), Duration::from_secs(1));
        for (threads, queue, idle) in [(1, 0, 0), (4, 100_000, 0), (64, 0, 64_000)] {
            let s = GroupSample {
                interval: Duration::from_secs(1),
                threads,
                min_threads: 1,
                max_threads: 64,
                queue_length: queue,
                idle_time: Duration::from_millis(idle),
                ..GroupSample::default()
            };
            assert_eq!(c.adjust(&s), Adjustment::NONE);
        }
        assert_eq!(c.describe().to_string(), "fixed");
    }

    #[test]
    fn period_is_configurable() {
        let c = FixedConcurrency::new().period(Duration::from_millis(10));
        assert_eq!(ConcurrencyController::period(&c), Duration::from_millis(10));
    }
}
