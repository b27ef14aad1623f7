//! Latency distributions: what a group records per measurement ([`Measured`]: a histogram and
//! the exact sum beside it) and what a snapshot reports of one ([`LatencySummary`]).
//!
//! The histogram gives quantiles and the counts at the fixed bounds of [`LATENCY_BUCKETS`]
//! (to two significant digits); the sum is kept exactly, in nanoseconds, because a
//! Prometheus histogram's `_sum` must only grow and `rate(_sum) / rate(_count)` must be the
//! mean: a sum read back as the histogram's mean times its count moves down whenever the
//! rounded mean does.

use std::fmt;
use std::time::Duration;

use hdrhistogram::Histogram;

/// Histograms hold microseconds, up to an hour, to two significant digits.
const HISTOGRAM_MAX_MICROS: u64 = 3_600_000_000;
const HISTOGRAM_SIGFIG: u8 = 2;

/// `d` in whole microseconds, within what a histogram holds.
pub(super) fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros())
        .unwrap_or(u64::MAX)
        .clamp(1, HISTOGRAM_MAX_MICROS)
}

/// `d` in nanoseconds, saturating.
pub(super) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The upper bounds of [`LatencySummary::buckets`]: 100 µs to 10 minutes, in the 1, 2.5, 5
/// steps Prometheus histograms use. A queue can wait minutes under overload (a process sent
/// more than it handles): with 10 s as the last bound, a mean wait above it lay outside every
/// quantile the buckets give.
pub const LATENCY_BUCKETS: [Duration; 21] = [
    Duration::from_micros(100),
    Duration::from_micros(250),
    Duration::from_micros(500),
    Duration::from_millis(1),
    Duration::from_micros(2_500),
    Duration::from_millis(5),
    Duration::from_millis(10),
    Duration::from_millis(25),
    Duration::from_millis(50),
    Duration::from_millis(100),
    Duration::from_millis(250),
    Duration::from_millis(500),
    Duration::from_secs(1),
    Duration::from_millis(2_500),
    Duration::from_secs(5),
    Duration::from_secs(10),
    Duration::from_secs(25),
    Duration::from_secs(50),
    Duration::from_secs(100),
    Duration::from_secs(250),
    Duration::from_secs(600),
];

/// Measurements of one latency: a histogram of microseconds and their exact sum.
///
/// The histogram (about 26 KiB: an hour's range to two significant digits) is allocated at
/// the first measurement and dropped by [`reset`](Measured::reset): a group keeps one set of
/// these per worker, most of them windows of recent latencies, so a group that a worker
/// never runs, or that has been idle for a window, holds none (iris_http's nine groups on
/// two workers held 3.2 MB of them from the start).
pub(super) struct Measured {
    histogram: Option<Box<Histogram<u64>>>,
    sum_nanos: u64,
}

impl Measured {
    pub(super) fn new() -> Self {
        Measured {
            histogram: None,
            sum_nanos: 0,
        }
    }

    fn histogram(&mut self) -> &mut Histogram<u64> {
        self.histogram.get_or_insert_with(|| {
            Box::new(
                Histogram::new_with_bounds(1, HISTOGRAM_MAX_MICROS, HISTOGRAM_SIGFIG)
                    .expect("constant histogram bounds are valid"),
            )
        })
    }

    /// Records `count` measurements of `micros` each (as [`micros`] rounds them), which
    /// together took `total_nanos`.
    pub(super) fn record(&mut self, micros: u64, count: u64, total_nanos: u64) {
        // Out-of-range values were clamped by `micros`: recording cannot fail.
        let _ = self.histogram().record_n(micros, count);
        self.sum_nanos = self.sum_nanos.saturating_add(total_nanos);
    }

    pub(super) fn add(&mut self, other: &Measured) {
        if let Some(theirs) = other.histogram.as_deref().filter(|h| !h.is_empty()) {
            // Same bounds on both sides: adding cannot fail.
            let _ = self.histogram().add(theirs);
        }
        self.sum_nanos = self.sum_nanos.saturating_add(other.sum_nanos);
    }

    pub(super) fn reset(&mut self) {
        self.histogram = None;
        self.sum_nanos = 0;
    }

    pub(super) fn summary(&self) -> LatencySummary {
        let Some(h) = self.histogram.as_deref().filter(|h| !h.is_empty()) else {
            return LatencySummary::default();
        };
        let at = |q: f64| Duration::from_micros(h.value_at_quantile(q));
        let sum = Duration::from_nanos(self.sum_nanos);
        LatencySummary {
            samples: h.len(),
            sum,
            mean: sum / u32::try_from(h.len()).unwrap_or(u32::MAX),
            p50: at(0.5),
            p90: at(0.9),
            p99: at(0.99),
            max: Duration::from_micros(h.max()),
            buckets: LATENCY_BUCKETS.map(|bound| h.count_between(0, micros(bound))),
        }
    }
}

/// Percentiles of a latency distribution, its exact sum, and its cumulative counts at fixed
/// bounds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct LatencySummary {
    /// Measurements behind the figures (sampled: see the [module docs](crate::control)).
    pub samples: u64,
    /// The measurements' sum, exact (not read back from the histogram). For the figures that
    /// cover a group's whole life it only grows, as a Prometheus histogram's `_sum` must.
    pub sum: Duration,
    /// Mean (`sum / samples`).
    pub mean: Duration,
    /// Median.
    pub p50: Duration,
    /// 90th percentile.
    pub p90: Duration,
    /// 99th percentile.
    pub p99: Duration,
    /// Largest.
    pub max: Duration,
    /// Measurements at most each bound of [`LATENCY_BUCKETS`] (cumulative, as a Prometheus
    /// histogram's buckets; exact to the histograms' two significant digits).
    pub buckets: [u64; LATENCY_BUCKETS.len()],
}

impl fmt::Display for LatencySummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "p50 {:?} p90 {:?} p99 {:?} max {:?} ({} samples)",
            self.p50, self.p90, self.p99, self.max, self.samples
        )
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_sum_is_exact_and_only_grows() {
        let mut m = Measured::new();
        let mut last = Duration::ZERO;
        // Values whose rounded mean moves down as more arrive: the sum must not.
        for (i, ns) in [52_900u64, 52_100, 1_000, 51_000, 999, 70_123]
            .into_iter()
            .enumerate()
        {
            m.record(micros(Duration::from_nanos(ns)), 1, ns);
            let s = m.summary();
            assert_eq!(s.samples, i as u64 + 1);
            assert!(
                s.sum >= last,
                "the sum went down: {:?} after {last:?}",
                s.sum
            );
            last = s.sum;
        }
        assert_eq!(
            last,
            Duration::from_nanos(52_900 + 52_100 + 1_000 + 51_000 + 999 + 70_123)
        );
        let mut other = Measured::new();
        other.record(10, 3, 30_000);
        other.add(&m);
        assert_eq!(other.summary().sum, last + Duration::from_micros(30));
        assert_eq!(other.summary().samples, 9);
        other.reset();
        assert_eq!(other.summary(), LatencySummary::default());
    }

    #[test]
    fn a_histogram_is_held_only_between_a_measurement_and_a_reset() {
        let mut m = Measured::new();
        assert!(m.histogram.is_none());
        m.add(&Measured::new());
        assert!(m.histogram.is_none(), "adding nothing allocated");
        m.record(250, 2, 500_000);
        assert!(m.histogram.is_some());
        let mut sum = Measured::new();
        sum.add(&m);
        assert_eq!(sum.summary(), m.summary());
        assert_eq!(sum.summary().samples, 2);
        m.reset();
        assert!(m.histogram.is_none());
        assert_eq!(m.summary(), LatencySummary::default());
    }
}
