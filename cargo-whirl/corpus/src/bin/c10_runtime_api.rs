//! Handlers that use the runtime (post, spawn, timers, monitors): whirl's own statics are the
//! runtime's business, not the program's.
// expect:
use std::time::Duration;
use whirl::prelude::*;

#[derive(Message)]
struct Start;

#[derive(Message)]
struct Tick(u32);

#[process]
struct Parent {
    ticks: u32,
}

#[process]
impl Parent {
    #[handle]
    fn start(&mut self, _s: Start, ctx: &mut Ctx<Self>) {
        let child = ctx.spawn(Child);
        let _ = child.post(Tick(0));
        ctx.post_after(Duration::from_millis(1), Tick(1));
    }

    #[handle]
    fn tick(&mut self, Tick(n): Tick) {
        self.ticks += n;
    }
}

#[process]
struct Child;

#[process]
impl Child {
    #[handle]
    fn tick(&mut self, _t: Tick) {}
}

fn main() {
    let rt = Runtime::new();
    let _ = rt.spawn(Parent { ticks: 0 }).post(Start);
    rt.shutdown_graceful();
}
