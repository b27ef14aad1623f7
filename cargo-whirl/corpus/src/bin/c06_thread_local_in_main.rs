//! A thread-local used by `main` only.
// expect:
use std::cell::Cell;
use whirl::prelude::*;

thread_local! {
    static RUNS: Cell<u32> = const { Cell::new(0) };
}

#[derive(Message)]
struct Ping;

#[process]
struct Quiet;

#[process]
impl Quiet {
    #[handle]
    fn ping(&mut self, _p: Ping) {}
}

fn main() {
    RUNS.set(RUNS.get() + 1);
    let rt = Runtime::new();
    let _ = rt.spawn(Quiet).post(Ping);
    rt.shutdown_graceful();
}
