//! A `#[terminated]` hook counts exits in a static.
// expect: EXITS
use std::sync::atomic::{AtomicUsize, Ordering};
use whirl::prelude::*;

static EXITS: AtomicUsize = AtomicUsize::new(0);

#[derive(Message)]
struct Ping;

#[process]
struct Worker;

#[process]
impl Worker {
    #[handle]
    fn ping(&mut self, _p: Ping) {}

    #[terminated]
    fn stop(&mut self) {
        EXITS.fetch_add(1, Ordering::Relaxed); //~ EXITS
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Worker).post(Ping);
    rt.shutdown_graceful();
}
