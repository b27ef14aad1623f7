//! An `Iterator::next` driven by a third-party crate's generic code: `Itertools::sorted`
//! collects the user's iterator.
// expect: TICKS
use itertools::Itertools;
use std::sync::atomic::{AtomicU64, Ordering};
use whirl::prelude::*;

static TICKS: AtomicU64 = AtomicU64::new(0);

struct Samples(u64);

impl Iterator for Samples {
    type Item = u64;
    fn next(&mut self) -> Option<u64> {
        TICKS.fetch_add(1, Ordering::Relaxed); //~ TICKS
        self.0 = self.0.checked_sub(1)?;
        Some(self.0 * 7 % 5)
    }
}

#[derive(Message)]
struct Sample(u64);

#[process]
struct Sorter {
    sorted: Vec<u64>,
}

#[process]
impl Sorter {
    #[handle]
    fn sample(&mut self, Sample(n): Sample) {
        self.sorted = Samples(n).sorted().collect();
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Sorter { sorted: Vec::new() }).post(Sample(4));
    rt.shutdown_graceful();
}
