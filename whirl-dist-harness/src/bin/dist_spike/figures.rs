//! The figures the gates print: a summary row per gate, and how durations, spans of values,
//! rates and a node's counters are written.

use std::time::Duration;

use whirl_dist::DistCounts;

pub struct Row {
    pub name: String,
    pub trials: u64,
    pub passed: u64,
    pub figures: String,
}

/// Nearest-rank percentile of sorted durations.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

pub fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1000.0)
}

pub fn describe(times: &mut [Duration]) -> String {
    times.sort();
    if times.is_empty() {
        return "no measurement".into();
    }
    format!(
        "min {} / p50 {} / p99 {} / max {} ms (n={})",
        ms(times[0]),
        ms(percentile(times, 50.0)),
        ms(percentile(times, 99.0)),
        ms(times[times.len() - 1]),
        times.len()
    )
}

/// `min..max` of some figures.
pub fn span<T: Ord + Copy + std::fmt::Display>(values: &[T]) -> String {
    match (values.iter().min(), values.iter().max()) {
        (Some(lo), Some(hi)) if lo == hi => format!("{lo} in all"),
        (Some(lo), Some(hi)) => format!("{lo}..{hi}"),
        _ => "none".into(),
    }
}

pub fn rate(count: u64, over: Duration) -> f64 {
    match over.is_zero() {
        true => 0.0,
        false => count as f64 / over.as_secs_f64(),
    }
}

pub fn describe_counts(c: &DistCounts) -> String {
    format!(
        "sent={} refused={} returned={} returned_unrouted={} in_doubt={} control_overflow={}",
        c.sent, c.refused, c.returned, c.returned_unrouted, c.in_doubt, c.control_overflow
    )
}
