//! How close to the sequential ceiling can any message passing get on this machine?
//!
//! The ping-pong row compares whirl with one thread passing the ball through a `VecDeque`
//! (the `sequential` implementation). A message between two whirl processes needs at least two
//! atomic read-modify-write instructions: one to reserve a slot in the receiver's inbox (many
//! threads may post to it at once), one to take the receiver's scheduling token (it is idle
//! between balls). This program runs the ceiling's exact loop three ways on one thread: as it
//! is, with one uncontended compare-exchange per message, and with two; and prints each as a
//! share of the ceiling. No cache line is shared and nothing waits, so these are upper bounds
//! for any design that pays those instructions.
//!
//!     cargo run --release --manifest-path bench-compare/Cargo.toml --bin atomic_floor

use std::collections::VecDeque;
use std::hint::black_box;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::time::{Duration, Instant};

const ROUND_TRIPS: u64 = 50_000_000;
const ROUNDS: usize = 5;

/// The ceiling's ping-pong (`impls/sequential.rs`), paying `atomics` compare-exchanges on
/// words of its own per message posted.
fn ping_pong(atomics: usize) -> Duration {
    let words: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];
    let mut handled = [0u64; 2];
    let mut mailbox: VecDeque<(usize, u64)> = VecDeque::new();
    let hops = 2 * ROUND_TRIPS;
    let start = Instant::now();
    mailbox.push_back((0, hops));
    while let Some((player, left)) = mailbox.pop_front() {
        handled[player] += 1;
        if left > 0 {
            for word in &words[..atomics] {
                let seen = word.load(Relaxed);
                let _ = black_box(word.compare_exchange(seen, seen + 1, SeqCst, Relaxed));
            }
            mailbox.push_back((1 - player, left - 1));
        }
    }
    let elapsed = start.elapsed();
    assert_eq!(handled[0] + handled[1], hops + 1, "lost messages");
    elapsed
}

fn median(mut runs: Vec<Duration>) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}

fn main() {
    let mut medians = [Duration::ZERO; 3];
    let mut runs: [Vec<Duration>; 3] = Default::default();
    // Interleaved, so that a slow moment of the machine does not favour one variant.
    for _ in 0..ROUNDS {
        for (atomics, r) in runs.iter_mut().enumerate() {
            r.push(ping_pong(atomics));
        }
    }
    for (m, r) in medians.iter_mut().zip(runs) {
        *m = median(r);
    }
    let messages = (2 * ROUND_TRIPS) as f64;
    println!("ping-pong on one thread, {ROUND_TRIPS} round trips, medians of {ROUNDS} interleaved rounds");
    for (atomics, m) in medians.iter().enumerate() {
        let ns = m.as_secs_f64() * 1e9 / messages;
        let share = medians[0].as_secs_f64() / m.as_secs_f64();
        println!(
            "{atomics} compare-exchange(s) per message: {ns:6.2} ns/msg, {:7.1} M msgs/s, {:5.1}% of the ceiling",
            messages / m.as_secs_f64() / 1e6,
            share * 100.0
        );
    }
}
