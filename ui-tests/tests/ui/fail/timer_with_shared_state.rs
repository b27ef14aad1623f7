//! Class 3: a timer posts its message later, from another thread: it must be a message.
use std::sync::{Arc, Mutex};
use std::time::Duration;
use whirl::prelude::*;

#[derive(Message)]
struct Tick;

#[process]
struct Clock;

#[process]
impl Clock {
    #[handle]
    fn tick(&mut self, _: Tick, ctx: &mut Ctx<Self>) {
        ctx.post_after(Duration::from_millis(10), Arc::new(Mutex::new(0u64)));
    }
}

fn main() {}
