//! A static touched only by `main` and code no process reaches: not process code, fine.
// expect:
use std::sync::atomic::{AtomicU64, Ordering};
use whirl::prelude::*;

static STARTS: AtomicU64 = AtomicU64::new(0);

fn unused_by_processes() -> u64 {
    STARTS.load(Ordering::Relaxed)
}

#[derive(Message)]
struct Ping;

#[process]
struct Quiet {
    pings: u64,
}

#[process]
impl Quiet {
    #[handle]
    fn ping(&mut self, _p: Ping) {
        self.pings += 1;
    }
}

fn main() {
    STARTS.fetch_add(1, Ordering::Relaxed);
    let rt = Runtime::new();
    let _ = rt.spawn(Quiet { pings: 0 }).post(Ping);
    rt.shutdown_graceful();
    let _ = unused_by_processes();
}
