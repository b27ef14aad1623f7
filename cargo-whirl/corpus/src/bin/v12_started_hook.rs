//! A `#[started]` hook registers the process in a static registry.
// expect: STARTED
use std::sync::atomic::{AtomicUsize, Ordering};
use whirl::prelude::*;

static STARTED: AtomicUsize = AtomicUsize::new(0);

#[derive(Message)]
struct Ping;

#[process]
struct Worker;

#[process]
impl Worker {
    #[started]
    fn start(&mut self) {
        STARTED.fetch_add(1, Ordering::Relaxed); //~ STARTED
    }

    #[handle]
    fn ping(&mut self, _p: Ping) {}
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Worker).post(Ping);
    rt.shutdown_graceful();
}
