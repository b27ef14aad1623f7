//! Class 3: an estimator holding an atomic counter is shared mutable state too.
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use whirl::admission::Estimate;

struct Counting {
    calls: Arc<AtomicU64>,
}

impl Estimate for Counting {}

fn main() {}
