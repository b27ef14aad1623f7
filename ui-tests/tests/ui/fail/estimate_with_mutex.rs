//! Class 3: an estimator travels with its principal into every message and child process, so
//! it must be `Isolated`: one holding a `Mutex` is refused.
use std::sync::Mutex;
use whirl::admission::Estimate;

struct Learning {
    seen: Mutex<Vec<u64>>,
}

impl Estimate for Learning {}

fn main() {}
