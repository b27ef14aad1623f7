//! History in two tiers: every sample for the last two minutes (at the default 500 ms
//! interval), and one point per [`LONG_STEP_MS`] for the last half hour, each the summary of
//! the samples of its step ([`Merge`]: peaks kept as peaks, rates averaged). No I/O, no clock.

use std::collections::VecDeque;

/// Samples kept at full resolution (two minutes at the default interval).
pub(crate) const FINE: usize = 240;
/// The span of one point of the long history.
pub(crate) const LONG_STEP_MS: u64 = 10_000;
/// Points of long history kept (half an hour).
pub(crate) const LONG: usize = 180;

/// A point of history, and how the points of one long step become one.
pub(crate) trait Merge: Copy {
    /// When it was sampled, in the console's milliseconds.
    fn t_ms(&self) -> u64;
    /// One point standing for `points` (never empty, oldest first).
    fn merge(points: &[Self]) -> Self;
}

/// The mean of `values`, or `None` if there are none.
pub(crate) fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.fold((0.0, 0u32), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / f64::from(n))
}

/// Both tiers of one series of points.
pub(crate) struct Tiered<T> {
    fine: VecDeque<T>,
    long: VecDeque<T>,
    /// The samples of the step in progress.
    step: Vec<T>,
    /// Whether the latest push closed a step (added a long point).
    long_added: bool,
}

impl<T> Default for Tiered<T> {
    fn default() -> Self {
        Tiered {
            fine: VecDeque::new(),
            long: VecDeque::new(),
            step: Vec::new(),
            long_added: false,
        }
    }
}

impl<T: Merge> Tiered<T> {
    /// Adds a sample; closes the step in progress if `point` belongs to a later one.
    pub(crate) fn push(&mut self, point: T) {
        self.long_added = false;
        if let Some(first) = self.step.first() {
            if first.t_ms() / LONG_STEP_MS != point.t_ms() / LONG_STEP_MS {
                let merged = T::merge(&self.step);
                self.step.clear();
                push_capped(&mut self.long, merged, LONG);
                self.long_added = true;
            }
        }
        self.step.push(point);
        push_capped(&mut self.fine, point, FINE);
    }

    /// Every sample kept, oldest first.
    pub(crate) fn fine(&self) -> impl Iterator<Item = &T> {
        self.fine.iter()
    }

    /// The latest sample.
    pub(crate) fn latest(&self) -> Option<&T> {
        self.fine.back()
    }

    /// Every long point, oldest first.
    pub(crate) fn long(&self) -> impl Iterator<Item = &T> {
        self.long.iter()
    }

    /// The long point the latest sample added, if it added one.
    pub(crate) fn long_added(&self) -> Option<&T> {
        self.long_added.then(|| self.long.back()).flatten()
    }
}

pub(crate) fn push_capped<T>(queue: &mut VecDeque<T>, item: T, cap: usize) {
    if queue.len() == cap {
        queue.pop_front();
    }
    queue.push_back(item);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq)]
    struct P(u64, f64);

    impl Merge for P {
        fn t_ms(&self) -> u64 {
            self.0
        }
        fn merge(points: &[Self]) -> Self {
            P(
                points[points.len() - 1].0,
                mean(points.iter().map(|p| p.1)).unwrap_or(0.0),
            )
        }
    }

    #[test]
    fn steps_become_long_points_and_both_tiers_are_capped() {
        let mut h = Tiered::default();
        // Half-second samples for 40 minutes: 4,800 samples, 240 steps of 10 s.
        for i in 0..4_800u64 {
            h.push(P(i * 500, (i / 20) as f64));
            // A step closes when the first sample of the next one arrives.
            let closes = i > 0 && i % 20 == 0;
            assert_eq!(h.long_added().is_some(), closes, "sample {i}");
        }
        assert_eq!(h.fine().count(), FINE);
        assert_eq!(h.fine().last(), Some(&P(4_799 * 500, 239.0)));
        let long: Vec<P> = h.long().copied().collect();
        assert_eq!(long.len(), LONG);
        // The last closed step is step 238 (samples 4,760..4,779), ending at 2,389,500 ms.
        assert_eq!(long[LONG - 1], P(4_779 * 500, 238.0));
        assert_eq!(long[0], P((4_779 - 20 * (LONG as u64 - 1)) * 500, 59.0));
        assert_eq!(mean([].into_iter()), None);
    }
}
