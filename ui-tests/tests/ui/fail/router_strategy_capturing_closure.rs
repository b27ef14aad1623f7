//! A router's strategy runs in every process that posts through the router, which is
//! `Isolated`: a closure capturing an `Arc<Mutex<_>>` would let all of them write it. Strategy
//! functions are `fn` pointers; state goes through `Strategy::custom_with`, read only.
use std::sync::{Arc, Mutex};
use whirl::routing::Strategy;

struct Job {
    customer: u64,
}

fn main() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let _ = Strategy::custom(move |job: &Job, _members| {
        seen.lock().unwrap().push(job.customer);
        0
    });
}
