//! Class 3: a child's start function runs inside the supervisor at every restart; a closure
//! capturing shared state would hand it to every incarnation. Start functions are plain `fn`s
//! over isolated arguments (OTP's module, function, arguments).
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
    let _spec = ChildSpec::worker_with("w", (), move |()| Worker {
        start: *shared.lock().unwrap(),
    });
}
