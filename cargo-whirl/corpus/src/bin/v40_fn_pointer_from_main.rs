//! A callback `fn` made in `main` and kept in the process's state: the handler calls it
//! through the pointer, so every function whose address is taken with that type may run.
// expect: TICKS
use std::sync::atomic::{AtomicU64, Ordering};
use whirl::prelude::*;

static TICKS: AtomicU64 = AtomicU64::new(0);

fn count_tick(n: u64) -> u64 {
    TICKS.fetch_add(n, Ordering::Relaxed) //~ TICKS
}

#[derive(Message)]
struct Tick;

#[process]
struct Timer {
    on_tick: fn(u64) -> u64,
    last: u64,
}

#[process]
impl Timer {
    #[handle]
    fn tick(&mut self, _t: Tick) {
        self.last = (self.on_tick)(1);
    }
}

fn main() {
    let rt = Runtime::new();
    let timer = Timer {
        on_tick: count_tick,
        last: 0,
    };
    let _ = rt.spawn(timer).post(Tick);
    rt.shutdown_graceful();
}
