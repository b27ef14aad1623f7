//! The state of `Strategy::custom_with` is read by every poster at once: it must be
//! `Isolated` (and `Sync`), so a `Mutex` is refused.
use std::sync::{Arc, Mutex};
use whirl::routing::Strategy;

struct Job {
    customer: u64,
}

fn main() {
    let _ = Strategy::custom_with(Arc::new(Mutex::new(0u64)), |seen, job: &Job, _| {
        *seen.lock().unwrap() += job.customer;
        0
    });
}
