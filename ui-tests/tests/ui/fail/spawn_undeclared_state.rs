//! Class 1: only a process can be spawned, and a process is declared with `#[process]` (or an
//! `unsafe impl`).
use std::sync::{Arc, Mutex};
use whirl::prelude::*;

struct Plain {
    shared: Arc<Mutex<u64>>,
}

fn main() {
    let rt = Runtime::new();
    let shared = Arc::new(Mutex::new(0));
    rt.spawn(Plain { shared });
}
