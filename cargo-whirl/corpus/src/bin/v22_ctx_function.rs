//! A plain function that takes a process context runs inside a process, however it is
//! reached (here only through a function pointer kept in the state).
// expect: TICKS
use std::sync::atomic::{AtomicU64, Ordering};
use whirl::prelude::*;

static TICKS: AtomicU64 = AtomicU64::new(0);

fn on_tick(_ctx: &mut Ctx<Clock>) {
    TICKS.fetch_add(1, Ordering::Relaxed); //~ TICKS
}

#[derive(Message)]
struct Tick;

#[process]
struct Clock {
    hook: fn(&mut Ctx<Clock>),
}

#[process]
impl Clock {
    #[handle]
    fn tick(&mut self, _t: Tick, ctx: &mut Ctx<Self>) {
        (self.hook)(ctx);
    }
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Clock { hook: on_tick }).post(Tick);
    rt.shutdown_graceful();
}
