//! Restart intensity: at most `max_restarts` restarts within any `period`.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// The restarts still inside the period.
pub(super) struct Intensity {
    pub(super) max_restarts: u32,
    pub(super) period: Duration,
    recent: VecDeque<Instant>,
}

impl Intensity {
    pub(super) fn new(max_restarts: u32, period: Duration) -> Self {
        Intensity {
            max_restarts,
            period,
            recent: VecDeque::new(),
        }
    }

    /// Records a restart at `now`; returns whether it is allowed. A restart counts against
    /// the ones that happened less than `period` before it, so restarts spread over more than
    /// the period never add up.
    pub(super) fn record(&mut self, now: Instant) -> bool {
        while let Some(&first) = self.recent.front() {
            if now.saturating_duration_since(first) >= self.period {
                self.recent.pop_front();
            } else {
                break;
            }
        }
        self.recent.push_back(now);
        self.recent.len() <= self.max_restarts as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_restart_in_five_seconds_by_default_shape() {
        let t0 = Instant::now();
        let mut i = Intensity::new(1, Duration::from_secs(5));
        assert!(i.record(t0));
        assert!(!i.record(t0 + Duration::from_secs(4)));
    }

    #[test]
    fn restarts_spread_over_more_than_the_period_never_add_up() {
        let t0 = Instant::now();
        let mut i = Intensity::new(2, Duration::from_secs(5));
        for k in 0..10 {
            assert!(i.record(t0 + Duration::from_secs(3 * k)), "restart {k}");
        }
    }

    #[test]
    fn zero_restarts_allows_none() {
        let mut i = Intensity::new(0, Duration::from_secs(5));
        assert!(!i.record(Instant::now()));
    }
}
