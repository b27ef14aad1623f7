//! The token bucket (rate, depth), lock-free, and the bucket core the response-time
//! controllers adjust.

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;

use crossbeam_utils::CachePadded;

use super::{MessagePredicate, Offer};
use crate::time::Clock;
use crate::time::CoarseClock;

const NANOS_PER_SEC: f64 = 1e9;

/// A token bucket kept as one "theoretical arrival time" (the generic cell rate algorithm):
/// admitting is a load and a compare-and-swap, with no lock and no refill thread.
///
/// Tokens accrue at `rate` per second up to `depth`; the bucket starts full.
pub(crate) struct Bucket {
    /// When the bucket would be empty-and-refilled-to-zero debt, in the caller's nanoseconds
    /// (from an origin of its choosing, the same for every call). The
    /// bucket holds `depth - (tat - now) / interval` tokens. Written by every admission from
    /// any sender: on a cache line of its own.
    tat: CachePadded<AtomicU64>,
    /// Nanoseconds per token (1 / rate), rounded: what admission uses.
    interval: AtomicU64,
    /// The rate as set (`f64` bits), unrounded: what [`Bucket::rate`] reports, so that a
    /// controller's small steps accumulate. (Read back from `interval` alone, a rate cut
    /// by 1.2 at 10^9/s, or an additive step of 2/s at 10^5/s, rounds to the same interval
    /// and is lost: the controller would be stuck.)
    rate: AtomicU64,
    depth: u64,
    /// The least the bucket holds, in nanoseconds of tokens at the current rate, whatever
    /// the depth (0 for a plain token bucket).
    min_span: u64,
}

/// The interval between tokens for `rate` tokens per second; rates are clamped to
/// [1e-6, 1e9] per second (non-finite or non-positive rates become the minimum).
fn interval_for(rate: f64) -> u64 {
    // In range by the clamp: at most 1e15 ns.
    (NANOS_PER_SEC / sanitize(rate)).round().max(1.0) as u64
}

/// `rate` clamped to [1e-6, 1e9] per second (non-finite or non-positive: the minimum).
fn sanitize(rate: f64) -> f64 {
    if rate.is_finite() && rate > 0.0 {
        rate.clamp(1e-6, NANOS_PER_SEC)
    } else {
        1e-6
    }
}

impl Bucket {
    pub(crate) fn new(rate: f64, depth: u64) -> Self {
        Bucket {
            tat: CachePadded::new(AtomicU64::new(0)),
            interval: AtomicU64::new(interval_for(rate)),
            rate: AtomicU64::new(sanitize(rate).to_bits()),
            depth: depth.max(1),
            min_span: 0,
        }
    }

    /// A bucket whose rate a controller moves: it holds `depth` tokens or 1 ms of them at the
    /// current rate, whichever is more, so that any rate can be reached on a clock that
    /// ticks every millisecond (the shared [`CoarseClock`]): with a fixed depth of 100, the
    /// bucket could not admit more than 100,000/s, whatever its rate.
    pub(crate) fn adaptive(rate: f64, depth: u64) -> Self {
        Bucket {
            min_span: 1_000_000,
            ..Bucket::new(rate, depth)
        }
    }

    /// Takes `n` tokens (at most `depth`) if the bucket holds them at `now`.
    #[inline]
    pub(crate) fn try_take(&self, now: u64, n: u64) -> bool {
        let interval = self.interval.load(Relaxed);
        let cost = interval.saturating_mul(n.min(self.depth));
        let limit = interval.saturating_mul(self.depth).max(self.min_span);
        let mut tat = self.tat.load(Relaxed);
        loop {
            let next = tat.max(now).saturating_add(cost);
            if next - now > limit {
                return false;
            }
            match self.tat.compare_exchange_weak(tat, next, Relaxed, Relaxed) {
                Ok(_) => return true,
                Err(seen) => tat = seen,
            }
        }
    }

    /// Returns `n` tokens taken by [`Bucket::try_take`].
    pub(crate) fn give_back(&self, n: u64) {
        let back = self
            .interval
            .load(Relaxed)
            .saturating_mul(n.min(self.depth));
        let _ = self
            .tat
            .fetch_update(Relaxed, Relaxed, |t| Some(t.saturating_sub(back)));
    }

    /// Tokens per second, as last set (admission runs at the nearest whole-nanosecond
    /// interval).
    pub(crate) fn rate(&self) -> f64 {
        f64::from_bits(self.rate.load(Relaxed))
    }

    /// Changes the rate at `now`, keeping the tokens in the bucket: the debt ahead of `now`
    /// is rescaled to the new interval, so a cut does not refill the bucket. (A concurrent
    /// take may still see the old interval: a one-token approximation.)
    pub(crate) fn set_rate(&self, rate: f64, now: u64) {
        self.rate.store(sanitize(rate).to_bits(), Relaxed);
        let new = interval_for(rate);
        let old = self.interval.swap(new, Relaxed);
        if old == new {
            return;
        }
        let scale = new as f64 / old as f64;
        let _ = self.tat.fetch_update(Relaxed, Relaxed, |tat| {
            let debt = tat.saturating_sub(now);
            (debt > 0).then(|| now.saturating_add((debt as f64 * scale) as u64))
        });
    }

    pub(crate) fn depth(&self) -> u64 {
        self.depth
    }
}

/// Admits on average `rate` messages per second, with bursts of up to `depth`: a token bucket
/// traffic shaper, as SEDA's rate-controlling enqueue predicate.
///
/// The bucket starts full. Admitting costs a clock read (by default the shared
/// [`CoarseClock`], one atomic load, 1 ms resolution) and a compare-and-swap; no lock. By
/// default each message takes one token; [`charge_cost`](TokenBucket::charge_cost) makes it
/// take [`Offer::cost`] tokens instead (capped at `depth`, so a costly message can still pass
/// a full bucket).
///
/// ```
/// use std::time::Duration;
/// use whirl::time::ManualClock;
/// use whirl::control::MessageCounts;
/// use whirl::admission::{MessagePredicate, Offer, TokenBucket};
///
/// let clock = ManualClock::new();
/// let bucket = TokenBucket::with_clock(10.0, 2, clock.clone()); // 10/s, bursts of 2
/// let offer = Offer::detached::<()>(None, 1, MessageCounts::default());
/// assert!(bucket.admit(&offer));
/// assert!(bucket.admit(&offer));
/// assert!(!bucket.admit(&offer)); // burst used up
/// clock.advance(Duration::from_millis(100)); // one token accrues
/// assert!(bucket.admit(&offer));
/// assert!(!bucket.admit(&offer));
/// ```
pub struct TokenBucket<C: Clock = CoarseClock> {
    clock: C,
    bucket: Bucket,
    by_cost: bool,
}

impl TokenBucket<CoarseClock> {
    /// `rate` tokens per second (clamped to [1e-6, 1e9]), at most `depth` (at least 1) at once,
    /// on the shared [`CoarseClock`]: at high rates tokens arrive in 1 ms steps, so give the
    /// bucket a depth of at least `rate / 1000`.
    pub fn new(rate: f64, depth: u64) -> Self {
        TokenBucket::with_clock(rate, depth, CoarseClock::shared())
    }
}

impl<C: Clock> TokenBucket<C> {
    /// Like [`TokenBucket::new`], reading time from `clock`.
    pub fn with_clock(rate: f64, depth: u64, clock: C) -> Self {
        TokenBucket {
            bucket: Bucket::new(rate, depth),
            clock,
            by_cost: false,
        }
    }

    /// Whether a message takes [`Offer::cost`] tokens (capped at the depth) rather than one.
    pub fn charge_cost(mut self, by_cost: bool) -> Self {
        self.by_cost = by_cost;
        self
    }

    /// The current rate, in tokens per second.
    pub fn rate(&self) -> f64 {
        self.bucket.rate()
    }

    /// Changes the rate; the tokens in the bucket stay.
    pub fn set_rate(&self, rate: f64) {
        self.bucket.set_rate(rate, self.clock.nanos())
    }

    /// The bucket's depth.
    pub fn depth(&self) -> u64 {
        self.bucket.depth()
    }

    fn tokens(&self, offer: &Offer<'_>) -> u64 {
        if self.by_cost {
            offer.cost()
        } else {
            1
        }
    }
}

impl<C: Clock> MessagePredicate for TokenBucket<C> {
    #[inline]
    fn admit(&self, offer: &Offer<'_>) -> bool {
        self.bucket.try_take(self.clock.nanos(), self.tokens(offer))
    }

    fn overruled(&self, offer: &Offer<'_>, admitted: bool) {
        if !admitted {
            self.bucket.give_back(self.tokens(offer));
        }
    }
}

impl<C: Clock> std::fmt::Debug for TokenBucket<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenBucket")
            .field("rate", &self.rate())
            .field("depth", &self.depth())
            .field("charge_cost", &self.by_cost)
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::time::Duration;

    use super::super::test_util::offer;
    use super::*;
    use crate::time::ManualClock;

    fn admitted(bucket: &TokenBucket<ManualClock>, tries: u64) -> u64 {
        (0..tries)
            .filter(|_| bucket.admit(&offer(None, 1, 0)))
            .count() as u64
    }

    #[test]
    fn starts_full_and_refills_at_the_rate() {
        let clock = ManualClock::new();
        let b = TokenBucket::with_clock(100.0, 5, clock.clone());
        assert_eq!(admitted(&b, 10), 5);
        clock.advance(Duration::from_millis(30));
        assert_eq!(admitted(&b, 10), 3);
        // Refill never exceeds the depth.
        clock.advance(Duration::from_secs(60));
        assert_eq!(admitted(&b, 100), 5);
    }

    #[test]
    fn long_run_average_is_the_rate() {
        let clock = ManualClock::new();
        let b = TokenBucket::with_clock(50.0, 1, clock.clone());
        let mut total = 0;
        for _ in 0..1000 {
            clock.advance(Duration::from_millis(1));
            total += admitted(&b, 3);
        }
        // The full bucket's token at 1 ms, then one every 20 ms: 1, 21, ..., 981 ms.
        assert_eq!(total, 50);
    }

    #[test]
    fn overruled_rejection_returns_the_token() {
        let clock = ManualClock::new();
        let b = TokenBucket::with_clock(1.0, 1, clock);
        let o = offer(None, 1, 0);
        assert!(b.admit(&o));
        assert!(!b.admit(&o));
        b.overruled(&o, false);
        assert!(b.admit(&o));
        b.overruled(&o, true); // admitted elsewhere: nothing to take back
        assert!(!b.admit(&o));
    }

    #[test]
    fn charge_cost_takes_cost_tokens_capped_at_depth() {
        let clock = ManualClock::new();
        let b = TokenBucket::with_clock(10.0, 10, clock.clone()).charge_cost(true);
        assert!(b.admit(&offer(None, 7, 0)));
        assert!(!b.admit(&offer(None, 4, 0)));
        assert!(b.admit(&offer(None, 3, 0)));
        clock.advance(Duration::from_secs(1));
        assert!(b.admit(&offer(None, 1000, 0))); // capped at the depth
        assert!(!b.admit(&offer(None, 1, 0)));
    }

    #[test]
    fn concurrent_senders_never_take_more_than_the_bucket_holds() {
        let clock = ManualClock::new();
        let b = TokenBucket::with_clock(1000.0, 500, clock.clone());
        let taken = std::sync::atomic::AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    let n = admitted(&b, 1000);
                    taken.fetch_add(n, Relaxed);
                });
            }
        });
        assert_eq!(taken.load(Relaxed), 500);
    }

    #[test]
    fn a_rate_cut_does_not_refill_the_bucket() {
        let clock = ManualClock::new();
        let b = TokenBucket::with_clock(1000.0, 5, clock.clone());
        assert_eq!(admitted(&b, 10), 5);
        b.set_rate(1.0);
        clock.advance(Duration::from_millis(999));
        assert_eq!(admitted(&b, 10), 0);
        clock.advance(Duration::from_millis(1));
        assert_eq!(admitted(&b, 10), 1);
        // Raising the rate keeps a full bucket full, no more.
        clock.advance(Duration::from_secs(10));
        b.set_rate(100.0);
        assert_eq!(admitted(&b, 10), 5);
    }

    #[test]
    fn small_rate_steps_are_kept_at_high_rates() {
        let clock = ManualClock::new();
        let b = TokenBucket::with_clock(1e9, 100, clock);
        // 1e9 / 1.2 and 1e5 + 2 both round to the interval of the old rate; the rate as set
        // must still move, or a controller stepping it would be stuck.
        b.set_rate(1e9 / 1.2);
        assert!((b.rate() - 1e9 / 1.2).abs() < 1e-3, "{}", b.rate());
        b.set_rate(1e5);
        b.set_rate(b.rate() + 2.0);
        assert_eq!(b.rate(), 100_002.0);
    }

    #[test]
    fn rate_changes_and_bad_rates_are_clamped() {
        let clock = ManualClock::new();
        let b = TokenBucket::with_clock(10.0, 1, clock);
        assert!((b.rate() - 10.0).abs() < 1e-9);
        b.set_rate(0.05);
        assert!((b.rate() - 0.05).abs() < 1e-9);
        b.set_rate(f64::NAN);
        assert!(b.rate() > 0.0);
        b.set_rate(-3.0);
        assert!(b.rate() > 0.0);
    }
}
