//! A tiny xorshift generator: think times and path choices need speed and repeatability per
//! seed, not statistical quality, so a `rand` dependency is not worth it.

use std::time::Duration;

/// xorshift64 with a splitmix64-scrambled seed, so nearby seeds (session ids) give unrelated
/// streams.
pub struct XorShift(u64);

impl XorShift {
    /// A generator for `seed`; any seed works, including 0.
    pub fn new(seed: u64) -> Self {
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        // xorshift never leaves the all-zero state.
        XorShift(if z == 0 { 0x2545_F491_4F6C_DD1D } else { z })
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// Uniform in `[0, 1)`.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `0..n` for `n > 0`; modulo bias is irrelevant for a handful of paths.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// Exponentially distributed with the given mean: memoryless think times are what make a
    /// closed population of sessions look like independent users (SEDA, chapter 6).
    pub fn exponential(&mut self, mean: Duration) -> Duration {
        // 1 - u is in (0, 1], so the logarithm is finite and the sample non-negative.
        let sample = -(1.0 - self.next_f64()).ln() * mean.as_secs_f64();
        Duration::try_from_secs_f64(sample).unwrap_or(Duration::MAX)
    }
}

/// One think time: exponential with mean `mean`, or exactly `mean` when `fixed`.
pub fn think_time(rng: &mut XorShift, mean: Duration, fixed: bool) -> Duration {
    if fixed {
        mean
    } else {
        rng.exponential(mean)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponential_mean_is_roughly_right() {
        let mut rng = XorShift::new(42);
        let mean = Duration::from_millis(100);
        let n = 100_000;
        let total: f64 = (0..n).map(|_| rng.exponential(mean).as_secs_f64()).sum();
        let observed = total / n as f64;
        assert!(
            (observed - 0.1).abs() < 0.003,
            "mean {observed} s, wanted 0.1 s"
        );
    }

    #[test]
    fn fixed_think_time_is_exact() {
        let mut rng = XorShift::new(1);
        let t = Duration::from_millis(7);
        assert_eq!(think_time(&mut rng, t, true), t);
    }

    #[test]
    fn same_seed_same_stream_and_zero_seed_works() {
        let (mut a, mut b) = (XorShift::new(0), XorShift::new(0));
        let xs: Vec<u64> = (0..8).map(|_| a.next_u64()).collect();
        assert!(xs.iter().all(|&x| x != 0));
        assert_eq!(xs, (0..8).map(|_| b.next_u64()).collect::<Vec<_>>());
        let mut c = XorShift::new(5);
        assert!((0..1000).all(|_| c.below(3) < 3));
        assert!((0..1000).all(|_| (0.0..1.0).contains(&c.next_f64())));
    }
}
