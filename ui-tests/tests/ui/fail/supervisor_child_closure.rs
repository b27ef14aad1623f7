//! A closure where a child spec is expected: the error says how to make a spec, and that
//! what the closure would capture goes through `args`.
use std::sync::{Arc, Mutex};
use whirl::prelude::*;

#[process]
#[derive(Clone)]
struct Worker {
    start: u64,
}

#[process]
impl Worker {}

fn main() {
    let shared = Arc::new(Mutex::new(0u64));
    let _spec = SupervisorSpec::new("root").child(move || Worker {
        start: *shared.lock().unwrap(),
    });
}
